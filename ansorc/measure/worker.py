"""Measurement worker: a zygote process holding a task's inputs, and forked children that time candidates in C.

Started by runner.py as a plain script (not `-m ansorc...`), so that it imports only numpy and cffi and starts
fast whatever the package's __init__ pulls in. The zygote allocates the inputs and keeps the reference outputs
but never runs a kernel: GNU OpenMP does not survive a fork once its thread pool exists. Each child it forks
shares the inputs' physical pages, allocates its own outputs and serves run requests on its own socket.
A crash or hang costs only that child: the runner kills it and asks for another, so stopping a candidate in the
middle of a call (because it is far slower than the best) is cheap.

Frames on every socket: 8-byte little-endian length, then a pickle.
"""
from __future__ import annotations

import faulthandler
import mmap
import os
import pickle
import signal
import socket
import struct
import sys
import threading
import time
import traceback

import numpy as np
from cffi import FFI

# Same numbers as errors.MeasureErrorNo; copied so this script needs no package import (a unit test checks them).
NO_ERROR, RUNTIME_DEVICE, WRONG_ANSWER = 0, 4, 5

INT_POISON = -123456789  # an int no test kernel writes by chance
# 16-bit floats: checked as float32 within a unit in their last place (bfloat16 is the only uint16 ansorc has,
# its bits: ir/program/dtypes.py; 0xffff is a NaN no kernel's rounding makes, the poison for never written)
LOW_PRECISION = {np.dtype(np.float16): 2.0**-10, np.dtype(np.uint16): 2.0**-7}
RTLD_NOW = 2

RUNTIME_CDEF = """
typedef int (*ansorc_packed_fn)(void **args);
typedef struct {
  int number; int repeat; int warmup; double first_call_seconds; double min_repeat_ms; size_t flush_bytes;
  double cut_seconds; double single_call_cut_min_seconds; double budget_seconds; double contender_seconds;
  int n_cold; void *const *cold_ptrs; const size_t *cold_bytes;
} ansorc_time_config;
typedef struct { int repeats_done; int number_used; int cut; double warmup_seconds; } ansorc_time_result;
void *ansorc_alloc(size_t bytes);
void ansorc_free(void *p);
int ansorc_time_packed(ansorc_packed_fn fn, void **args, const ansorc_time_config *cfg, double *costs,
                       ansorc_time_result *result);
typedef int (*ansorc_spans_fn)(void **at, size_t *bytes, int n);
"""
LIBC_CDEF = """
void *dlopen(const char *filename, int flags);
void *dlsym(void *handle, const char *symbol);
int dlclose(void *handle);
char *dlerror(void);
"""


class Task:
    """The buffers of one task. Inputs, pristine input copies and reference outputs live in the zygote and are
    shared copy-on-write by its children; each child allocates its own (poisoned) outputs."""

    def __init__(self, ffi, runtime, msg: dict):
        self.ffi, self.runtime = ffi, runtime
        self.pointers = []
        self.specs = [(tuple(shape), np.dtype(dtype), bool(out)) for shape, dtype, out in msg["args"]]
        self.arrays = [None if out else self._alloc(shape, dtype) for shape, dtype, out in self.specs]
        for arr, data in zip(self.arrays, msg["inputs_by_arg"]):
            if arr is not None:
                arr[...] = data
        self.is_output = [out for _, _, out in self.specs]
        self.pristine = [None if out else arr.copy() for arr, out in zip(self.arrays, self.is_output)]
        self.packed = None
        self.names = msg["names"]
        self.rtol, self.atol = msg["rtol"], msg["atol"]
        self.reference = msg["reference_outputs"]
        self.cold = [i for i in msg.get("cold_args", ()) if not self.specs[i][2]]  # inputs only

    def alloc_outputs(self) -> None:
        """In a child: fresh output buffers, and the packed argument array that points at every buffer."""
        self.arrays = [self._alloc(shape, dtype) if out else arr
                       for arr, (shape, dtype, out) in zip(self.arrays, self.specs)]
        self.packed = self.ffi.new("void*[]", max(1, len(self.arrays)))
        for i, arr in enumerate(self.arrays):
            self.packed[i] = self.ffi.cast("void*", arr.ctypes.data)

    def _alloc(self, shape, dtype):
        nbytes = max(1, int(np.prod(shape, dtype=np.int64)) * dtype.itemsize)
        ptr = self.runtime.ansorc_alloc(nbytes)
        if ptr == self.ffi.NULL:
            raise MemoryError(f"cannot allocate {nbytes} bytes")
        self.pointers.append(ptr)
        buf = self.ffi.buffer(self.ffi.cast("char*", ptr), nbytes)
        return np.frombuffer(buf, dtype=dtype, count=int(np.prod(shape, dtype=np.int64))).reshape(shape)

    def free(self):
        self.arrays = []
        for ptr in self.pointers:
            self.runtime.ansorc_free(ptr)
        self.pointers = []

    def outputs(self):
        return [a for a, out in zip(self.arrays, self.is_output) if out]

    def poison_outputs(self):
        for arr in self.outputs():
            arr.fill(np.nan if arr.dtype.kind in "fc" else 0xFFFF if arr.dtype == np.uint16 else
                     np.array(INT_POISON).astype(arr.dtype))

    def check(self) -> str:
        """'' when outputs match the reference (or, without one, are all written) and inputs are untouched."""
        for i, (arr, out) in enumerate(zip(self.arrays, self.is_output)):
            if not out and not np.array_equal(arr, self.pristine[i], equal_nan=arr.dtype.kind in "fc"):
                arr[...] = self.pristine[i]  # so later candidates still see the task's inputs
                return f"input {self.names[i]} was modified by the kernel"
        out_names = [n for n, out in zip(self.names, self.is_output) if out]
        for j, arr in enumerate(self.outputs()):
            ref = None if self.reference is None else self.reference[j]
            ulp = LOW_PRECISION.get(arr.dtype, 0.0)
            if ulp:
                arr, ref = _float32(arr), None if ref is None else _float32(np.asarray(ref, arr.dtype))
            bad = mismatch_mask(arr, ref, max(self.rtol, ulp), max(self.atol, ulp))
            if bad is not None:
                return describe_mismatch(out_names[j], arr, ref, bad)
        return ""


def _float32(a: np.ndarray) -> np.ndarray:
    """float16 values, or bfloat16 bits (uint16), as float32."""
    return (a.astype(np.uint32) << 16).view(np.float32) if a.dtype == np.uint16 else a.astype(np.float32)


def mismatch_mask(out: np.ndarray, ref, rtol: float, atol: float):
    """Boolean mask of wrong elements, or None when all are right."""
    if ref is None:  # no reference: only require that every element was written
        bad = np.isnan(out) if out.dtype.kind in "fc" else out == np.array(INT_POISON).astype(out.dtype)
    elif out.dtype.kind not in "fc":
        bad = out != ref
    else:
        finite = np.abs(ref[np.isfinite(ref)])
        # atol scales with the output magnitude: a sum over K terms carries error relative to its terms, not to 1.
        scale = max(1.0, float(finite.max()) if finite.size else 1.0)
        with np.errstate(invalid="ignore", over="ignore"):
            close = np.abs(out - ref) <= atol * scale + rtol * np.abs(ref)  # in the arrays' own precision: fast
        if close.all():
            return None
        same = (out == ref) | (np.isnan(out) & np.isnan(ref))  # equal infinities and NaN where NaN is expected
        bad = ~(close | same)
    return bad if bad.any() else None


def describe_mismatch(name: str, out: np.ndarray, ref, bad: np.ndarray) -> str:
    count = int(bad.sum())
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    if ref is None:
        return f"output {name}: {count} of {bad.size} elements never written, first at {first}"
    got, want = out[first].item(), ref[first].item()
    with np.errstate(invalid="ignore"):
        err = np.abs(out.astype(np.float64) - ref.astype(np.float64))
    max_err = float(np.nanmax(err)) if np.isfinite(err).any() else float("nan")
    return (f"output {name}: {count} of {bad.size} elements differ, first at {first}: got {got!r}, "
            f"expected {want!r}; max abs error {max_err:.3g}")


class Worker:
    """The zygote's state (runtime, task) and, after a fork, the child's run loop."""

    def __init__(self):
        self.ffi = FFI()
        self.ffi.cdef(RUNTIME_CDEF)
        self.ffi.cdef(LIBC_CDEF)
        try:
            self.libc = self.ffi.dlopen(None)
            self.libc.dlopen  # noqa: B018  (older glibc keeps dlopen in libdl)
        except (OSError, AttributeError):
            self.libc = self.ffi.dlopen("libdl.so.2")
        self.runtime = None
        self.task: Task | None = None

    def load_symbol(self, lib_path: str, symbol: str):
        handle = self.libc.dlopen(lib_path.encode(), RTLD_NOW)
        if handle == self.ffi.NULL:
            raise OSError(self.ffi.string(self.libc.dlerror()).decode(errors="replace"))
        fn = self.libc.dlsym(handle, symbol.encode())
        if fn == self.ffi.NULL:
            self.libc.dlclose(handle)
            raise OSError(f"symbol {symbol} not found in {lib_path}")
        return handle, self.ffi.cast("ansorc_packed_fn", fn)

    # -- zygote side ---------------------------------------------------------------------------------------

    def init(self, msg: dict) -> dict:
        if self.runtime is None:
            self.runtime = self.ffi.dlopen(msg["runtime"])
        if self.task is not None:
            self.task.free()
        self.task = Task(self.ffi, self.runtime, msg)
        if self.task.reference is None and msg.get("reference_lib"):
            self.task.reference = self.reference_outputs(*msg["reference_lib"])
        return {"ok": True}

    def reference_outputs(self, path: str, entry: str) -> list:
        """Run the reference kernel in a child (never here, see the module docstring); its outputs come back
        through shared memory."""
        out_specs = [(shape, dtype) for shape, dtype, out in self.task.specs if out]
        shared = [mmap.mmap(-1, max(1, int(np.prod(shape, dtype=np.int64)) * dtype.itemsize))
                  for shape, dtype in out_specs]
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                start_orphan_watch()
                self.task.alloc_outputs()
                handle, fn = self.load_symbol(path, entry + "_packed")
                self.task.poison_outputs()
                if fn(self.task.packed) == 0:
                    for buf, arr in zip(shared, self.task.outputs()):
                        np.frombuffer(buf, dtype=arr.dtype, count=arr.size)[...] = arr.reshape(-1)
                    code = 0
            except BaseException:  # noqa: BLE001  (reported as the exit code; the traceback goes to the log)
                traceback.print_exc()
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        if status != 0:
            raise RuntimeError(f"reference kernel failed ({describe_status(status)})")
        return [np.frombuffer(buf, dtype=dtype, count=int(np.prod(shape, dtype=np.int64))).reshape(shape).copy()
                for buf, (shape, dtype) in zip(shared, out_specs)]

    def spawn(self, ctl: socket.socket) -> dict:
        """Fork a child that serves run requests on the socket that comes with this request."""
        _, fds, _, _ = socket.recv_fds(ctl, 1, 1)
        if not fds:
            return {"ok": False, "error_code": 8, "error_msg": "spawn without a socket"}
        try:
            pid = os.fork()
        except OSError as exc:
            os.close(fds[0])
            return {"ok": False, "error_code": 8, "error_msg": f"fork failed: {exc}"}
        if pid == 0:
            code = 0
            try:
                ctl.close()
                start_orphan_watch()
                self.task.alloc_outputs()
                self.serve(fds[0])
            except BaseException:  # noqa: BLE001
                traceback.print_exc()
                code = 1
            os._exit(code)
        os.close(fds[0])
        return {"ok": True, "pid": pid}

    # -- child side ----------------------------------------------------------------------------------------

    def serve(self, fd: int) -> None:
        while True:
            msg = read_frame(fd)
            if msg is None or msg["op"] == "exit":
                return
            try:
                reply = self.run(msg, fd)
            except Exception as exc:  # reported to the parent; the child stays usable
                reply = {"ok": False, "error_code": 8, "error_msg": f"{type(exc).__name__}: {exc}"}
            write_frame(fd, reply)

    def run(self, msg: dict, fd: int) -> dict:
        start = time.perf_counter()
        task = self.task
        try:
            handle, fn = self.load_symbol(msg["lib"], msg["entry"] + "_packed")
        except OSError as exc:
            return {"error_code": RUNTIME_DEVICE, "error_msg": f"cannot load: {exc}"}
        try:
            task.poison_outputs()
            # The runner times the first call from "calling" to "called", and stops a candidate that is far
            # slower than the best in the middle of it by killing this process.
            write_frame(fd, {"calling": True})
            rc = fn(task.packed) if self.keeps_prepared(handle, msg["entry"]) else 0
            if rc != 0:
                return {"error_code": RUNTIME_DEVICE, "error_msg": f"kernel returned {rc}"}
            t0 = time.perf_counter()
            rc = fn(task.packed)
            check_seconds = time.perf_counter() - t0
            write_frame(fd, {"called": check_seconds})
            if rc != 0:
                return {"error_code": RUNTIME_DEVICE, "error_msg": f"kernel returned {rc}"}
            problem = task.check()
            if problem:
                return {"error_code": WRONG_ANSWER, "error_msg": problem}
            cfg = msg["config"]
            cut = msg["cut_seconds"]
            if cut > 0 and check_seconds > cut and check_seconds > cfg["single_call_cut_min_seconds"]:
                return {"error_code": NO_ERROR, "costs": [check_seconds], "lower_bound": True, "number": 1}
            return self.time(fn, cfg, cut, check_seconds, msg["time_budget"] - (time.perf_counter() - start),
                             msg.get("contender_seconds", 0.0), self.kept_copies(handle, msg["entry"]))
        finally:
            self.libc.dlclose(handle)

    def keeps_prepared(self, handle, entry: str) -> bool:
        """The kernel computes copies of its constant inputs once (codegen/prepared.py): its first call, which
        makes them, is not one that the timing (or the correctness check, which must see the kept copies) counts."""
        return self.libc.dlsym(handle, (entry + "_constants_changed").encode()) != self.ffi.NULL

    def kept_copies(self, handle, entry: str) -> list:
        """(address, bytes) of the copies the kernel keeps of its constant inputs, when the task reads its inputs
        cold: a whole model reads the kept copy from memory as it would the weights, so it is evicted with them."""
        if not self.task.cold:
            return []
        sym = self.libc.dlsym(handle, (entry + "_prepared_spans").encode())
        if sym == self.ffi.NULL:
            return []
        spans = self.ffi.cast("ansorc_spans_fn", sym)
        at, nbytes = self.ffi.new("void*[16]"), self.ffi.new("size_t[16]")
        n = min(spans(at, nbytes, 16), 16)
        return [(at[k], nbytes[k]) for k in range(n) if at[k] != self.ffi.NULL and nbytes[k]]

    def time(self, fn, cfg: dict, cut: float, check_seconds: float, budget: float, contender: float = 0.0,
             kept: list = ()) -> dict:
        c = self.ffi.new("ansorc_time_config*")
        # The correctness call just ran the kernel on the same buffers: it counts as the first warm-up call.
        c.number, c.repeat, c.warmup = cfg["number"], cfg["repeat"], max(0, cfg["warmup"] - 1)
        c.first_call_seconds = check_seconds
        c.min_repeat_ms, c.flush_bytes = cfg["min_repeat_ms"], cfg["flush_bytes"]
        c.cut_seconds, c.single_call_cut_min_seconds = cut, cfg["single_call_cut_min_seconds"]
        c.budget_seconds = max(budget, 1e-3)
        c.contender_seconds = contender
        cold = [self.task.arrays[i] for i in self.task.cold]
        spans = [(self.ffi.cast("void*", a.ctypes.data), a.nbytes) for a in cold] + list(kept)
        ptrs = self.ffi.new("void*[]", [p for p, _ in spans] or 1)
        sizes = self.ffi.new("size_t[]", [n for _, n in spans] or 1)
        c.n_cold, c.cold_ptrs, c.cold_bytes = len(spans), ptrs, sizes
        costs = self.ffi.new("double[]", max(1, cfg["repeat"]))
        res = self.ffi.new("ansorc_time_result*")
        rc = self.runtime.ansorc_time_packed(fn, self.task.packed, c, costs, res)
        if rc != 0:
            return {"error_code": RUNTIME_DEVICE, "error_msg": f"kernel returned {rc} while timing"}
        return {"error_code": NO_ERROR, "costs": [costs[i] for i in range(res.repeats_done)],
                "lower_bound": bool(res.cut), "number": res.number_used}


def describe_status(status: int) -> str:
    """A waitpid status in words."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            return f"killed by {signal.Signals(sig).name}"
        except ValueError:
            return f"killed by signal {sig}"
    return f"exited with {os.WEXITSTATUS(status)}"


def read_frame(fd: int):
    header = _read_exact(fd, 8)
    if header is None:
        return None
    (size,) = struct.unpack("<Q", header)
    return pickle.loads(_read_exact(fd, size))


def _read_exact(fd: int, size: int):
    chunks, left = [], size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def write_frame(fd: int, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(struct.pack("<Q", len(data)) + data)
    while view:
        view = view[os.write(fd, view):]


def apply_worker_cpus() -> None:
    """Run on the CPUs the runner named in ANSORC_WORKER_CPUS ("0,1,2": every CPU of its process, whatever
    its calling thread was bound to; measure/affinity.py), quietly nothing where that cannot be done."""
    cpus = {int(c) for c in os.environ.get("ANSORC_WORKER_CPUS", "").split(",") if c.strip().isdigit()}
    if cpus and hasattr(os, "sched_setaffinity"):
        try:
            os.sched_setaffinity(0, cpus)
        except OSError:
            pass


def start_orphan_watch() -> None:
    """Exit when the parent is gone, even while a hung kernel holds the main thread (cffi calls release the
    GIL). Polling, not PR_SET_PDEATHSIG: that fires when the parent *thread* exits, which a runner created in a
    thread pool would trigger."""
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(3)
    threading.Thread(target=watch, daemon=True).start()


def main() -> int:
    faulthandler.enable()  # a segfault leaves a traceback in the log for the error message
    apply_worker_cpus()
    os.dup2(2, 1)  # a kernel's printf must not land anywhere but the log
    ctl = socket.socket(fileno=int(sys.argv[1]))
    fd = ctl.fileno()
    worker = Worker()
    # The zygote starts no thread: a fork copies only the calling thread. It needs no orphan watch either: it
    # only ever waits on this socket (or on a child that is being killed), and the runner's death closes it.
    while True:
        msg = read_frame(fd)
        if msg is None or msg["op"] == "exit":
            return 0
        try:
            if msg["op"] == "init":
                reply = worker.init(msg)
            elif msg["op"] == "spawn":
                reply = worker.spawn(ctl)
            elif msg["op"] == "reap":
                _, status = os.waitpid(msg["pid"], 0)
                reply = {"ok": True, "status": describe_status(status)}
            else:
                reply = {"ok": False, "error_code": 8, "error_msg": f"unknown op {msg['op']!r}"}
        except Exception as exc:  # reported to the parent; the zygote stays usable
            reply = {"ok": False, "error_code": 8, "error_msg": f"{type(exc).__name__}: {exc}"}
        write_frame(fd, reply)


if __name__ == "__main__":
    sys.exit(main())
