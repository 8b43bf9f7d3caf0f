"""Timed, checked runs of CUDA candidates in a GPU worker process (cuda_worker.py), and the CUDA MeasureBackend.

The worker is a separate interpreter started with subprocess, never a fork, and this process never initialises
CUDA. One worker serves many candidates and many tasks: a task's inputs go to the device once. A candidate that
hangs is killed with its worker (RUN_TIMEOUT); one that poisons the context (illegal address, ...) or kills the
worker gets RUNTIME_DEVICE; either way a new worker is started and the batch goes on.
"""
from __future__ import annotations

import math
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from ansorc.codegen.source import ArgSpec
from ansorc.measure.builder import BuildResult
from ansorc.measure.errors import MeasureErrorNo
from ansorc.measure.runner import MAX_ERROR_MSG_CHARS, MeasureResult, inputs_by_position, random_inputs, arg_signature
from ansorc.measure.zygote import WorkerDied, WorkerTimeout, read_frame, send_frame

PACKAGE_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class CudaRunnerConfig:
    timeout: float = 10.0               # seconds per candidate, from request to reply
    repeats: int = 7                    # timed graph replays
    warmup_replays: int = 1
    min_replay_seconds: float = 1e-3    # one replay runs the program this long at least (events resolve ~0.5 us)
    max_graph_launches: int = 2000      # caps the program runs captured in one graph
    early_cut_ratio: float | None = 2.0  # first replay slower than this x best: one replay, lower_bound=True
    rtol: float = 1e-4
    atol: float = 1e-4
    seed: int = 0                       # for random inputs when the task gives none
    start_timeout: float = 120.0        # worker start (interpreter, CUDA init) and task upload
    device: int = 0
    worker_command: tuple = ()          # () runs cuda_worker; tests put a fake worker here


class CudaWorkerProcess:
    """The worker subprocess, its socket and its log (stdout and stderr, for crash messages)."""

    def __init__(self, config: CudaRunnerConfig):
        self.log = tempfile.NamedTemporaryFile(prefix="ansorc-cuda-worker-", suffix=".log", delete=False)
        self.sock, theirs = socket.socketpair()
        cmd = list(config.worker_command) or [sys.executable, "-u", "-m", "ansorc.targets.cuda.measure_worker"]
        path = os.environ.get("PYTHONPATH", "")
        env = dict(os.environ, PYTHONPATH=str(PACKAGE_ROOT) + (os.pathsep + path if path else ""))
        self.proc = subprocess.Popen([*cmd, str(theirs.fileno()), str(config.device)], stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=self.log, pass_fds=(theirs.fileno(),),
                                     start_new_session=True, env=env)
        theirs.close()
        self.task_id = None     # the task this worker holds
        self.limits: dict = {}
        try:
            hello = self.read(time.monotonic() + config.start_timeout)
        except (WorkerDied, WorkerTimeout) as exc:
            log = self.log_tail()
            self.close(kill=True)
            raise RuntimeError(f"the GPU worker did not start ({type(exc).__name__}): {log}") from None
        if not hello.get("ok"):
            self.close(kill=True)
            raise RuntimeError(f"the GPU worker cannot use the GPU: {hello.get('error_msg')}")
        self.limits = hello["limits"]

    def request(self, msg: dict, deadline: float) -> dict:
        try:
            send_frame(self.sock, msg)
        except OSError:
            raise WorkerDied(None) from None
        return self.read(deadline)

    def read(self, deadline: float) -> dict:
        return read_frame(self.sock, deadline)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def status(self) -> str:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "still running"
        return f"killed by signal {-code}" if code < 0 else f"exited with {code}"

    def log_tail(self, chars: int = 1500) -> str:
        try:
            with open(self.log.name, "rb") as f:
                f.seek(max(0, os.path.getsize(self.log.name) - chars))
                return f.read().decode(errors="replace").strip()
        except OSError:
            return ""

    def close(self, kill: bool = False) -> None:
        if self.proc.poll() is None and not kill:
            try:
                send_frame(self.sock, {"op": "exit"})
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.sock.close()
        self.log.close()
        try:
            os.unlink(self.log.name)
        except OSError:
            pass


class CudaRunner:
    """Measures CUDA candidates (CudaBuildResult: a cubin and its Source.launches) against one task at a time.

    set_task(inputs, reference_outputs): the task's input arrays and expected outputs (lists in argument order
    or dicts by ArgSpec name); inputs=None draws seeded random ones, reference_outputs=None only checks that
    every output element was written. One runner serves many tasks: call set_task before each task's batch."""

    def __init__(self, config: CudaRunnerConfig | None = None):
        self.config = config or CudaRunnerConfig()
        self.best_seconds = math.inf
        self.worker_starts = 0
        self._worker: CudaWorkerProcess | None = None
        self._inputs = self._references = None
        self._args: tuple | None = None
        self._task_msg: dict | None = None
        self._task_id = 0

    def __enter__(self) -> "CudaRunner":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._worker is not None:
            self._worker.close()
            self._worker = None

    def set_task(self, inputs=None, reference_outputs=None, args: Sequence[ArgSpec] | None = None) -> None:
        self._inputs, self._references = inputs, reference_outputs
        self._args = tuple(args) if args is not None else None
        self._task_msg, self._task_id, self.best_seconds = None, self._task_id + 1, math.inf

    def device_limits(self) -> dict:
        """The worker's device_limits() (starts the worker)."""
        return self._ensure_worker(with_task=False).limits

    def run(self, builds: Sequence[BuildResult], best_seconds: float | None = None,
            early_cut: bool = True) -> list[MeasureResult]:
        """Check and time each build in order. With early_cut and a best known (best_seconds or this task's
        best so far), a candidate whose first replay is slower than early_cut_ratio x best stops there
        (lower_bound=True)."""
        return [self._run_one(b, best_seconds, early_cut) for b in builds]

    def _run_one(self, build: BuildResult, best_seconds: float | None, early_cut: bool) -> MeasureResult:
        start = time.perf_counter()
        if not build.ok:
            return MeasureResult((), build.error_code, build.error_msg, build.build_seconds, time.time())
        if self._args is None:
            self._args = build.source.args
        if arg_signature(build.source.args) != arg_signature(self._args):
            return self._result(build, start, MeasureErrorNo.INSTANTIATION_ERROR,
                                "candidate signature differs from the task's")
        best = min(self.best_seconds, best_seconds if best_seconds is not None else math.inf)
        ratio = self.config.early_cut_ratio
        cut = ratio * best if early_cut and ratio and math.isfinite(best) else 0.0
        worker = self._ensure_worker()
        try:
            reply = worker.request(self._run_msg(build, cut), time.monotonic() + self.config.timeout)
        except WorkerTimeout:
            self._discard_worker()
            return self._result(build, start, MeasureErrorNo.RUN_TIMEOUT,
                                f"run timed out after {self.config.timeout:g} s; GPU worker restarted")
        except WorkerDied:
            msg = f"GPU worker died during the run ({worker.status()}): {worker.log_tail()}"
            self._discard_worker()
            return self._result(build, start, MeasureErrorNo.RUNTIME_DEVICE, msg)
        if reply.get("sticky"):  # the worker has exited: its context is unusable
            self._discard_worker()
        code = reply.get("error_code", MeasureErrorNo.UNKNOWN_ERROR)
        if code != MeasureErrorNo.NO_ERROR:
            return self._result(build, start, code, reply.get("error_msg", ""))
        result = self._result(build, start, code, "", tuple(reply["costs"]), reply["lower_bound"], reply["number"])
        if not result.lower_bound:
            self.best_seconds = min(self.best_seconds, result.median)
        return result

    def _run_msg(self, build: BuildResult, cut: float) -> dict:
        src = build.source
        launches = [(launch.kernel, _ints(launch.grid), _ints(launch.block), _ints(launch.args),
                     int(launch.shared_bytes)) for launch in src.launches]
        workspace_bytes = [max(4, int(w.size) * np.dtype(w.dtype).itemsize) for w in src.workspaces]
        cfg = {k: v for k, v in asdict(self.config).items()
               if k in ("repeats", "warmup_replays", "min_replay_seconds", "max_graph_launches")}
        return {"op": "run", "cubin": build.lib_path, "launches": launches, "workspace_bytes": workspace_bytes,
                "config": cfg, "cut_seconds": cut, "time_budget": 0.6 * self.config.timeout}

    def _result(self, build: BuildResult, start: float, code: int, msg: str, costs: tuple = (),
                lower_bound: bool = False, number: int = 0) -> MeasureResult:
        wall = build.build_seconds + time.perf_counter() - start
        return MeasureResult(costs, MeasureErrorNo(code), msg[:MAX_ERROR_MSG_CHARS], wall, time.time(),
                             lower_bound, number)

    def _discard_worker(self) -> None:
        if self._worker is not None:
            self._worker.close(kill=True)
            self._worker = None

    def _ensure_worker(self, with_task: bool = True) -> CudaWorkerProcess:
        """A live worker holding the current task (RuntimeError when none can start or the task is rejected)."""
        if self._worker is not None and not self._worker.alive():
            self._discard_worker()
        if self._worker is None:
            self._worker = CudaWorkerProcess(self.config)
            self.worker_starts += 1
        if with_task and self._worker.task_id != self._task_id:
            if self._task_msg is None:
                self._task_msg = self._make_task_msg()
            try:
                reply = self._worker.request(self._task_msg, time.monotonic() + self.config.start_timeout)
            except (WorkerDied, WorkerTimeout) as exc:
                log = self._worker.log_tail()
                self._discard_worker()
                raise RuntimeError(f"the GPU worker failed to take the task ({type(exc).__name__}): {log}") from None
            if not reply.get("ok"):
                self._discard_worker()
                raise RuntimeError(f"the GPU worker rejected the task: {reply.get('error_msg')}")
            self._worker.task_id = self._task_id
        return self._worker

    def _make_task_msg(self) -> dict:
        args = self._args
        in_specs = [a for a in args if not a.is_output]
        out_specs = [a for a in args if a.is_output]
        inputs = (inputs_by_position(self._inputs, in_specs, "inputs") if self._inputs is not None
                  else random_inputs(in_specs, self.config.seed))
        refs = None
        if self._references is not None:
            refs = [np.ascontiguousarray(np.asarray(r, dtype=s.dtype).reshape(s.shape))
                    for r, s in zip(inputs_by_position(self._references, out_specs, "reference_outputs"), out_specs)]
        it = iter(inputs)
        by_arg = [None if a.is_output else np.ascontiguousarray(np.asarray(next(it), dtype=a.dtype).reshape(a.shape))
                  for a in args]
        return {"op": "task", "names": [a.name for a in args], "args": [(a.shape, a.dtype, a.is_output) for a in args],
                "inputs_by_arg": by_arg, "reference_outputs": refs, "rtol": self.config.rtol,
                "atol": self.config.atol}


def _ints(values) -> tuple:
    """Plain ints (a renderer may hand numpy integers; the worker passes them to C)."""
    return tuple(int(v) for v in values)


class CudaBackend:
    """MeasureBackend for CUDA: nvcc builds (with a check against the device's limits) and the GPU runner."""

    def __init__(self, runner: CudaRunner, arch: str = "sm_90", build_timeout: float | None = None,
                 n_parallel: int | None = None, build_dir: str | os.PathLike | None = None,
                 limits: dict | None = None):
        self.runner, self.arch, self.n_parallel, self.build_dir = runner, arch, n_parallel, build_dir
        self.build_timeout, self._limits = build_timeout, limits
        self.task = None

    def limits(self) -> dict:
        """The given limits, else the device's (asks the worker), else the architecture's table."""
        if self._limits is None:
            from ansorc.targets.cuda.measure_nvcc import ARCH_LIMITS
            try:
                self._limits = self.runner.device_limits()
            except RuntimeError:
                self._limits = ARCH_LIMITS.get(self.arch, ARCH_LIMITS["sm_90"])
        return self._limits

    def build(self, sources) -> list:
        from ansorc.targets.cuda.measure_nvcc import DEFAULT_NVCC_TIMEOUT, build_cuda, with_limit_check
        results = build_cuda(sources, self.arch, self.build_timeout or DEFAULT_NVCC_TIMEOUT, self.n_parallel,
                             self.build_dir)
        limits = self.limits() if any(r.ok for r in results) else {}
        return [with_limit_check(r, limits) for r in results]

    def run(self, builds, task=None, *, best_seconds: float | None = None,
            early_cut: bool = True) -> list[MeasureResult]:
        """task: the batch's MeasureTask (inputs and reference outputs), sent to the GPU once per task."""
        if task is not None and not task.same_as(self.task):
            self.runner.set_task(task.inputs, task.reference_outputs, task.args)
            self.task = task
        return self.runner.run(builds, best_seconds, early_cut)

    def measure(self, sources, task=None, best_seconds: float | None = None) -> list[MeasureResult]:
        return self.run(self.build(sources), task, best_seconds=best_seconds)

    def close(self) -> None:
        self.runner.close()

    def __enter__(self) -> "CudaBackend":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
