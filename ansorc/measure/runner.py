"""Timed, checked runs of built candidates in one long-lived worker process per task.

All candidates of a task run in the same worker with the same input buffers: the same binary timed in separate
processes on these VMs varies by ~30% (page placement), while one process stays steady. A crash or hang kills
only the worker; it is restarted for the next candidate (and its timings may shift, see docs/measurement.md).
"""
from __future__ import annotations

import math
import os
import pickle
import select
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ansorc.codegen.source import ArgSpec
from ansorc.measure.builder import BuildResult, runtime_library
from ansorc.measure.errors import MeasureErrorNo

WORKER_SCRIPT = Path(__file__).with_name("worker.py")
SINGLE_CALL_CUT_MIN_SECONDS = 1e-3  # below this, one call is too noisy to cut on; timing it fully is cheap anyway
MAX_ERROR_MSG_CHARS = 4000


@dataclass(frozen=True)
class MeasureResult:
    costs: tuple[float, ...]   # mean seconds of each repeat; empty on error
    error_code: int            # MeasureErrorNo
    error_msg: str
    all_cost: float            # wall seconds spent on this candidate, build + run
    timestamp: float           # time.time() when the measurement ended
    lower_bound: bool = False  # stopped early: clearly slower than the best, costs are partial
    number: int = 0            # calls per repeat

    @property
    def ok(self) -> bool:
        return self.error_code == MeasureErrorNo.NO_ERROR

    @property
    def median(self) -> float:
        """The figure of merit: median repeat, or inf for a failed candidate."""
        return statistics.median(self.costs) if self.ok and self.costs else math.inf


class _WorkerDied(Exception):
    pass


class _WorkerTimeout(Exception):
    pass


def llc_bytes() -> int:
    """Size of the largest CPU cache (from sysfs), or 32 MiB when unknown."""
    best = 0
    for size_file in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = size_file.read_text().strip().upper()
        mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        try:
            best = max(best, int(text.rstrip("KMG")) * mult)
        except ValueError:
            pass
    return best or 32 << 20


class WorkerProcess:
    """One worker subprocess and its framed pipe protocol; every request has a deadline."""

    def __init__(self):
        self.log = tempfile.NamedTemporaryFile(prefix="ansorc-worker-", suffix=".log", delete=False)
        # Own session: a Ctrl-C meant for us does not hit a timing run; the worker exits by itself if we die.
        # numpy's BLAS is never called in the worker; one thread keeps its idle pool off the kernels' cores.
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
        self.proc = subprocess.Popen([sys.executable, "-u", str(WORKER_SCRIPT)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log, start_new_session=True, env=env)

    def send(self, msg: dict) -> None:
        data = pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            self.proc.stdin.write(struct.pack("<Q", len(data)) + data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise _WorkerDied(self._death_reason()) from exc

    def request(self, msg: dict, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        self.send(msg)
        (size,) = struct.unpack("<Q", self._read(8, deadline))
        return pickle.loads(self._read(size, deadline))

    def _read(self, size: int, deadline: float) -> bytes:
        fd, chunks, left = self.proc.stdout.fileno(), [], size
        while left:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise _WorkerTimeout()
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                raise _WorkerDied(self._death_reason())
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def _death_reason(self) -> str:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.proc.returncode
        if code is not None and code < 0:
            try:
                what = f"worker killed by {signal.Signals(-code).name}"
            except ValueError:
                what = f"worker killed by signal {-code}"
        else:
            what = f"worker exited with {code}"
        return f"{what}\n{self.log_tail()}".strip()

    def log_tail(self, chars: int = 1500) -> str:
        try:
            with open(self.log.name, "rb") as f:
                f.seek(max(0, os.path.getsize(self.log.name) - chars))
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.send({"op": "exit"})
            except _WorkerDied:
                pass
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self.kill()
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        self.log.close()
        os.unlink(self.log.name)


class Runner:
    """Measures the candidates of one task (one signature) in one worker, one candidate at a time.

    inputs: arrays for the input arguments, as a list in call order or a dict by ArgSpec name; None draws
      seeded random ones (floats uniform in [-1, 1), ints in [-8, 8)).
    reference_outputs: expected outputs (list or dict by name). Else `reference`, the build of the unscheduled
      program, is run once in the worker to produce them. With neither, outputs are only checked to be written.
    """

    def __init__(self, inputs: Sequence[np.ndarray] | Mapping[str, np.ndarray] | None = None,
                 reference_outputs: Sequence[np.ndarray] | Mapping[str, np.ndarray] | None = None, *,
                 reference: BuildResult | None = None, args: Sequence[ArgSpec] | None = None,
                 number: int = 1, repeat: int = 3, min_repeat_ms: float = 100.0, warmup: int = 1,
                 timeout: float = 10.0, cache_flush: bool = False, flush_bytes: int | None = None,
                 early_cut_ratio: float | None = 2.0, rtol: float = 1e-4, atol: float = 1e-4, seed: int = 0,
                 cc: str = "gcc", init_timeout: float = 120.0):
        self.inputs, self.reference_outputs, self.reference = inputs, reference_outputs, reference
        self.args = tuple(args) if args is not None else None
        self.config = {"number": number, "repeat": repeat, "min_repeat_ms": min_repeat_ms, "warmup": warmup,
                       "flush_bytes": (flush_bytes or 2 * llc_bytes()) if cache_flush else 0,
                       "single_call_cut_min_seconds": SINGLE_CALL_CUT_MIN_SECONDS}
        self.timeout, self.init_timeout = timeout, init_timeout
        self.early_cut_ratio, self.rtol, self.atol, self.seed, self.cc = early_cut_ratio, rtol, atol, seed, cc
        self.best_seconds = math.inf     # best full (not cut) median seen by this runner
        self.worker_starts = 0
        self._worker: WorkerProcess | None = None
        self._init_msg: dict | None = None

    @property
    def worker_pid(self) -> int | None:
        """The live worker's process id (for diagnostics), or None."""
        return self._worker.proc.pid if self._worker is not None else None

    def __enter__(self) -> "Runner":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._worker is not None:
            self._worker.close()
            self._worker = None

    def run(self, builds: Sequence[BuildResult], best_seconds: float | None = None) -> list[MeasureResult]:
        """Measure each build in order. best_seconds (e.g. the best from the log) enables the early cut."""
        return [self._run_one(b, best_seconds) for b in builds]

    def _run_one(self, build: BuildResult, best_seconds: float | None) -> MeasureResult:
        start = time.perf_counter()
        if not build.ok:
            return MeasureResult((), build.error_code, build.error_msg, build.build_seconds, time.time())
        if self.args is None:
            self.args = build.source.args
        if _signature(build.source.args) != _signature(self.args):
            return self._result(build, start, MeasureErrorNo.INSTANTIATION_ERROR,
                                "candidate signature differs from the task's")
        best = min(self.best_seconds, best_seconds if best_seconds is not None else math.inf)
        cut = self.early_cut_ratio * best if self.early_cut_ratio and math.isfinite(best) else 0.0
        msg = {"op": "run", "lib": build.lib_path, "entry": build.source.entry, "config": self.config,
               "cut_seconds": cut, "time_budget": 0.8 * self.timeout}
        try:
            worker = self._ensure_worker()
            reply = worker.request(msg, self.timeout)
        except _WorkerTimeout:
            self._discard_worker()
            return self._result(build, start, MeasureErrorNo.RUN_TIMEOUT, f"run timed out after {self.timeout:g} s")
        except _WorkerDied as exc:
            self._discard_worker()
            return self._result(build, start, MeasureErrorNo.RUNTIME_DEVICE, str(exc))
        if reply.get("error_code", 0) != MeasureErrorNo.NO_ERROR:
            return self._result(build, start, reply["error_code"], reply.get("error_msg", ""))
        result = self._result(build, start, MeasureErrorNo.NO_ERROR, "", tuple(reply["costs"]),
                               reply["lower_bound"], reply["number"])
        if not result.lower_bound:
            self.best_seconds = min(self.best_seconds, result.median)
        return result

    def _result(self, build: BuildResult, start: float, code: int, msg: str, costs: tuple = (),
                lower_bound: bool = False, number: int = 0) -> MeasureResult:
        wall = build.build_seconds + time.perf_counter() - start
        return MeasureResult(costs, MeasureErrorNo(code), msg[:MAX_ERROR_MSG_CHARS], wall, time.time(),
                             lower_bound, number)

    def _discard_worker(self) -> None:
        if self._worker is not None:
            self._worker.kill()
            self._worker.close()
            self._worker = None

    def _ensure_worker(self) -> WorkerProcess:
        if self._worker is not None and self._worker.proc.poll() is None:
            return self._worker
        self._discard_worker()
        if self._init_msg is None:
            self._init_msg = self._make_init_msg()
        self._worker = WorkerProcess()
        self.worker_starts += 1
        try:
            reply = self._worker.request(self._init_msg, self.init_timeout)
        except (_WorkerDied, _WorkerTimeout) as exc:
            log = self._worker.log_tail()
            self._discard_worker()
            raise RuntimeError(f"measurement worker failed to start: {exc!r}\n{log}") from None
        if not reply.get("ok"):
            self._discard_worker()
            raise RuntimeError(f"measurement worker rejected the task: {reply.get('error_msg')}")
        return self._worker

    def _make_init_msg(self) -> dict:
        in_specs = [a for a in self.args if not a.is_output]
        out_specs = [a for a in self.args if a.is_output]
        inputs = _by_position(self.inputs, in_specs, "inputs") if self.inputs is not None else _random_inputs(
            in_specs, self.seed)
        refs = None
        if self.reference_outputs is not None:
            refs = [np.asarray(r, dtype=s.dtype).reshape(s.shape)
                    for r, s in zip(_by_position(self.reference_outputs, out_specs, "reference_outputs"), out_specs)]
        it = iter(inputs)
        inputs_by_arg = [None if a.is_output else np.asarray(next(it), dtype=a.dtype).reshape(a.shape)
                         for a in self.args]
        ref_lib = None
        if refs is None and self.reference is not None:
            if not self.reference.ok:
                raise ValueError(f"reference build failed: {self.reference.error_msg}")
            ref_lib = (self.reference.lib_path, self.reference.source.entry)
        return {"op": "init", "runtime": str(runtime_library(self.cc)), "names": [a.name for a in self.args],
                "args": [(a.shape, a.dtype, a.is_output) for a in self.args], "inputs_by_arg": inputs_by_arg,
                "reference_outputs": refs, "reference_lib": ref_lib, "rtol": self.rtol, "atol": self.atol}


def _signature(args: Sequence[ArgSpec]) -> tuple:
    return tuple((tuple(a.shape), a.dtype, a.is_output) for a in args)


def _by_position(values, specs: Sequence[ArgSpec], what: str) -> list:
    if isinstance(values, Mapping):
        missing = [s.name for s in specs if s.name not in values]
        if missing:
            raise ValueError(f"{what} lacks {missing}")
        return [values[s.name] for s in specs]
    values = list(values)
    if len(values) != len(specs):
        raise ValueError(f"{what}: expected {len(specs)} arrays, got {len(values)}")
    return values


def _random_inputs(specs: Sequence[ArgSpec], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for s in specs:
        if np.dtype(s.dtype).kind == "f":
            out.append(rng.uniform(-1.0, 1.0, size=s.shape).astype(s.dtype))
        else:
            out.append(rng.integers(-8, 8, size=s.shape).astype(s.dtype))
    return out
