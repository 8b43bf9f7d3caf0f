"""GPU measurement worker: one long-lived process that owns the CUDA context and times candidates for the runner.

Started by cuda_runner.py as `python -m ansorc.targets.cuda.measure_worker FD` (a new interpreter, never a fork: CUDA
does not survive one). It talks frames (8-byte length, then a pickle; worker.py's read_frame/write_frame) on the
socket FD. On start it answers {"ok", "limits"}; then:
  {"op": "task", ...}  the task's inputs (copied to the device once), reference outputs, tolerances
  {"op": "run", ...}   one candidate: a cubin path, its launches and workspaces; answered with costs or an error
  {"op": "exit"}
A sticky CUDA error (illegal address, ...) poisons the context: the worker answers, then exits, and the runner
starts a new one. A hang is the runner's business: it kills this process.
"""
from __future__ import annotations

import faulthandler
import math
import os
import socket
import sys
import time
from pathlib import Path

import numpy as np

from ansorc.measure.errors import MeasureErrorNo
from ansorc.measure.worker import (INT_POISON, describe_mismatch, mismatch_mask, read_frame, start_orphan_watch,
                                   write_frame)

NAN_BITS = 0xFFFFFFFF          # as float32 (and, doubled, as float64): a NaN, so unwritten outputs show
DYNAMIC_SHARED_DEFAULT = 48 * 1024
FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8  # cuda_driver's value, repeated so that the fake device needs no import
EXIT_STICKY = 3
SLOW_RUN_SECONDS = 1e-3  # a single run this much beyond the cut is cut without a graph


class DeviceTask:
    """A task's buffers on the device: inputs (uploaded once), outputs, and workspaces sized per candidate."""

    def __init__(self, dev, msg: dict):
        self.dev = dev
        self.names, self.rtol, self.atol = msg["names"], msg["rtol"], msg["atol"]
        self.specs = [(tuple(shape), np.dtype(dtype), bool(out)) for shape, dtype, out in msg["args"]]
        self.inputs = {i: np.ascontiguousarray(a) for i, a in enumerate(msg["inputs_by_arg"]) if a is not None}
        self.reference = msg["reference_outputs"]
        self.host = [np.empty(shape, dtype) for shape, dtype, _ in self.specs]  # outputs and input read-backs
        self.buffers = [dev.alloc(h.nbytes) for h in self.host]
        for i, arr in self.inputs.items():
            dev.htod(self.buffers[i], arr)
        dev.synchronize()
        self.workspace_sizes: tuple = ()
        self.workspaces: list[int] = []

    def ensure_workspaces(self, sizes: tuple) -> None:
        """Device buffers of these byte sizes; kept while the next candidate asks for the same."""
        if sizes == self.workspace_sizes:
            return
        for ptr in self.workspaces:
            self.dev.free(ptr)
        self.workspaces, self.workspace_sizes = [], ()
        self.workspaces = [self.dev.alloc(n) for n in sizes]
        self.workspace_sizes = sizes

    def pointers(self, indices) -> list[int]:
        every = self.buffers + self.workspaces
        return [every[i] for i in indices]

    def poison_outputs(self) -> None:
        for i, (shape, dtype, out) in enumerate(self.specs):
            if not out:
                continue
            if dtype.kind == "f":
                self.dev.memset32(self.buffers[i], NAN_BITS, self.host[i].nbytes // 4)
            else:
                self.dev.htod(self.buffers[i], np.full(shape, INT_POISON, dtype))

    def check(self) -> str:
        """'' when the outputs match (or, without a reference, are all written) and the inputs are untouched."""
        for i, arr in self.inputs.items():
            self.dev.dtoh(self.host[i], self.buffers[i])
            if not np.array_equal(self.host[i], arr, equal_nan=arr.dtype.kind == "f"):
                self.dev.htod(self.buffers[i], arr)  # so that later candidates see the task's inputs
                self.dev.synchronize()
                return f"input {self.names[i]} was modified by the kernel"
        outputs = [i for i, spec in enumerate(self.specs) if spec[2]]
        for j, i in enumerate(outputs):
            self.dev.dtoh(self.host[i], self.buffers[i])
            ref = None if self.reference is None else self.reference[j]
            bad = mismatch_mask(self.host[i], ref, self.rtol, self.atol)
            if bad is not None:
                return describe_mismatch(self.names[i], self.host[i], ref, bad)
        return ""

    def free(self) -> None:
        for ptr in self.buffers + self.workspaces:
            self.dev.free(ptr)
        self.buffers, self.workspaces, self.workspace_sizes = [], [], ()


class Session:
    """The worker's state: the device, one stream and two events, the current task."""

    def __init__(self, dev):
        self.dev = dev
        self.stream = dev.stream()
        self.start_event, self.end_event = dev.event(), dev.event()
        self.task: DeviceTask | None = None

    def set_task(self, msg: dict) -> dict:
        if self.task is not None:
            self.task.free()
            self.task = None
        self.task = DeviceTask(self.dev, msg)
        return {"ok": True}

    def run(self, msg: dict) -> dict:
        """One candidate, checked then timed. CUDA errors are answered with RUNTIME_DEVICE; sticky=True when the
        context is gone (the worker then exits)."""
        if self.task is None:
            return {"error_code": int(MeasureErrorNo.UNKNOWN_ERROR), "error_msg": "no task was set"}
        deadline = time.monotonic() + msg.get("time_budget", math.inf)
        module, graphs = None, []
        try:
            module = self.dev.load_module(Path(msg["cubin"]).read_bytes())
            plan = self._plan(module, msg)
            wrong, once = self._checked_run(plan)
            if wrong:
                return {"error_code": int(MeasureErrorNo.WRONG_ANSWER), "error_msg": wrong}
            cut = msg.get("cut_seconds", 0.0)
            if cut and once > max(2 * cut, cut + SLOW_RUN_SECONDS):  # far too slow, even allowing for launch latency
                return _costs_reply([once], 1, lower_bound=True)
            exec_, reps = self._graph(plan, once, msg["config"], graphs)
            return self._time(exec_, reps, msg, deadline)
        except Exception as exc:  # CudaError, or the fake device's; a missing cubin file
            code = getattr(exc, "code", None)
            sticky = isinstance(code, int) and _is_sticky(code)
            return {"error_code": int(MeasureErrorNo.RUNTIME_DEVICE), "error_msg": f"{type(exc).__name__}: {exc}",
                    "sticky": sticky}
        finally:
            self._cleanup(module, graphs)

    def _cleanup(self, module, graphs) -> None:
        """Best effort: after a sticky error these calls fail too, and the process is about to exit anyway."""
        for graph in graphs:
            try:
                self.dev.destroy_graph(*graph)
            except Exception:
                pass
        if module is not None:
            try:
                self.dev.unload_module(module)
            except Exception:
                pass

    def _graph(self, plan, once: float, cfg: dict, graphs: list) -> tuple:
        """(graph exec, runs per replay): a graph of back-to-back program runs lasting about min_replay_seconds.
        Sized from one run's time, which includes the host's launch latency (most of it for a kernel of a few
        microseconds); sized again from a replay when that made it much too short."""
        reps = replay_count(once, cfg, len(plan))
        for attempt in range(2):
            graphs.append(self.dev.capture(self.stream, lambda: [self._enqueue(plan) for _ in range(reps)]))
            replay = self._timed(lambda: self.dev.graph_launch(graphs[-1][1], self.stream))
            better = replay_count(replay / reps, cfg, len(plan))
            if attempt or better <= 2 * reps:
                return graphs[-1][1], reps
            reps = better
        raise AssertionError("unreachable")

    def _plan(self, module, msg: dict) -> list[tuple]:
        """(function, grid, block, shared bytes, device pointers) per launch."""
        functions, plan = {}, []
        for kernel, grid, block, args, shared in msg["launches"]:
            if kernel not in functions:
                functions[kernel] = self.dev.function(module, kernel)
            if shared > DYNAMIC_SHARED_DEFAULT:  # beyond 48 KiB dynamic shared memory needs an opt-in per kernel
                self.dev.set_func_attribute(functions[kernel], FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared)
            plan.append((functions[kernel], grid, block, shared, args))
        self.task.ensure_workspaces(tuple(msg["workspace_bytes"]))
        return [(fn, grid, block, shared, self.task.pointers(args)) for fn, grid, block, shared, args in plan]

    def _enqueue(self, plan) -> None:
        for fn, grid, block, shared, pointers in plan:
            self.dev.launch(fn, grid, block, shared, self.stream, pointers)

    def _timed(self, body) -> float:
        """Seconds between events recorded around body() on the stream (waits for the end)."""
        self.dev.record(self.start_event, self.stream)
        body()
        self.dev.record(self.end_event, self.stream)
        self.dev.event_synchronize(self.end_event)
        return self.dev.elapsed_seconds(self.start_event, self.end_event)

    def _checked_run(self, plan) -> tuple[str, float]:
        """(mismatch or '', seconds of one warm run): poisoned outputs, one run, compared with the reference."""
        self.task.poison_outputs()
        self.dev.synchronize()  # the memset ran on the legacy stream, which our non-blocking stream ignores
        self._timed(lambda: self._enqueue(plan))
        wrong = self.task.check()
        if wrong:
            return wrong, math.inf
        return "", self._timed(lambda: self._enqueue(plan))  # warm: module loaded, caches hot

    def _time(self, exec_, reps: int, msg: dict, deadline: float) -> dict:
        """Event-timed replays; stops after the first when slower than the cut, and when the time budget is spent."""
        cfg, cut = msg["config"], msg.get("cut_seconds", 0.0)
        for _ in range(cfg["warmup_replays"]):
            self._timed(lambda: self.dev.graph_launch(exec_, self.stream))
        costs = []
        for _ in range(cfg["repeats"]):
            costs.append(self._timed(lambda: self.dev.graph_launch(exec_, self.stream)) / reps)
            if cut and costs[0] > cut:  # clearly slower than the best: one replay places it well enough
                return _costs_reply(costs, reps, lower_bound=True)
            if time.monotonic() > deadline:
                break
        return _costs_reply(costs, reps, lower_bound=False)


def _costs_reply(costs: list, reps: int, lower_bound: bool) -> dict:
    return {"error_code": int(MeasureErrorNo.NO_ERROR), "error_msg": "", "costs": tuple(costs), "number": reps,
            "lower_bound": lower_bound}


def replay_count(once: float, cfg: dict, launches_per_run: int) -> int:
    """Program runs per graph replay: enough that one replay lasts min_replay_seconds (events resolve ~0.5 us
    and a launch costs a few), capped so the graph stays small."""
    cap = max(1, cfg["max_graph_launches"] // max(1, launches_per_run))
    if once <= 0:
        return cap
    return max(1, min(cap, math.ceil(cfg["min_replay_seconds"] / once)))


def _is_sticky(code: int) -> bool:
    from ansorc.targets.cuda.measure_driver import is_sticky
    return is_sticky(code)


def serve(sock: socket.socket, make_device) -> int:
    """The worker's loop on `sock`; make_device() -> the device (cuda_driver.Device, or a fake in tests)."""
    fd = sock.fileno()
    try:
        dev = make_device()
        limits = dev.limits()
        session = Session(dev)
    except Exception as exc:
        write_frame(fd, {"ok": False, "error_msg": f"{type(exc).__name__}: {exc}"})
        return 1
    write_frame(fd, {"ok": True, "limits": limits, "pid": os.getpid()})
    while True:
        msg = read_frame(fd)
        if msg is None or msg["op"] == "exit":
            return 0
        try:
            reply = session.set_task(msg) if msg["op"] == "task" else session.run(msg)
        except Exception as exc:  # e.g. out of device memory for the task's buffers
            reply = {"ok": False, "error_code": int(MeasureErrorNo.RUNTIME_DEVICE),
                     "error_msg": f"{type(exc).__name__}: {exc}", "sticky": _is_sticky(getattr(exc, "code", 0))}
        write_frame(fd, reply)
        if reply.get("sticky"):
            return EXIT_STICKY


def main() -> int:
    faulthandler.enable()
    os.dup2(2, 1)  # a kernel's printf and the driver's messages go to the log, never onto the socket
    start_orphan_watch()
    from ansorc.targets.cuda.measure_driver import Device
    ordinal = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    return serve(socket.socket(fileno=int(sys.argv[1])), lambda: Device(ordinal))


if __name__ == "__main__":
    sys.exit(main())
