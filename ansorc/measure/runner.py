"""Timed, checked runs of built candidates, in worker processes forked from one zygote per task (zygote.py,
worker.py).

All candidates of a task run on the same input buffers: the same binary timed in separate processes on these VMs
varies with page placement (docs/perf-notes.md), and the forked workers share the zygote's input pages. A crash or
hang kills only the current worker; the next candidate gets a new one in milliseconds, which also lets the runner
stop a candidate far slower than the best in the middle of a call (docs/measurement.md).
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ansorc.codegen.source import ArgSpec
from ansorc.ir.program.convert import storage
from ansorc.ir.program.dtypes import DTYPE_TABLE, NP_DTYPE
from ansorc.measure.builder import BuildResult, runtime_library
from ansorc.measure.errors import MeasureErrorNo
from ansorc.measure.zygote import WorkerDied, WorkerProcess, WorkerTimeout

SINGLE_CALL_CUT_MIN_SECONDS = 1e-3  # below this, one call is too noisy to cut on; timing it fully is cheap anyway
MAX_ERROR_MSG_CHARS = 4000
# A first call still running after max(KILL_FACTOR x cut, cut + KILL_SLACK_SECONDS) is stopped: the slack and
# factor leave room for a cold first call (page faults, thread start), so only clearly slow candidates go.
KILL_FACTOR = 1.5
KILL_SLACK_SECONDS = 0.05
PROBE_SECONDS = 0.5  # no best known yet: a first call longer than this is set aside until the batch has one


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


@dataclass(frozen=True)
class RunnerConfig:
    """How a Runner times and checks candidates; the same for every task it measures.

    contender_ratio: with the early cut on and a best known, a program whose first repeat is slower than this
      times the best gets no further repeats: it is no contender, and one repeat of >= min_repeat_ms places it
      well enough for the cost model (Ansor times every program with one repeat). None: always `repeat`.
    """
    number: int = 1
    repeat: int = 3
    min_repeat_ms: float = 100.0
    warmup: int = 1
    timeout: float = 10.0                 # seconds per candidate (the worker start is not counted)
    cache_flush: bool = False
    flush_bytes: int | None = None        # None: twice the largest cache
    early_cut_ratio: float | None = 2.0   # stop a candidate this many times slower than the best; None: never
    rtol: float = 1e-4
    atol: float = 1e-4
    seed: int = 0                         # for inputs drawn at random
    cc: str = "gcc"                       # compiles the timing runtime
    init_timeout: float = 120.0
    probe_seconds: float = PROBE_SECONDS
    contender_ratio: float | None = 1.25

    def timing(self) -> dict:
        """The timing settings the worker reads with each run request."""
        return {"number": self.number, "repeat": self.repeat, "min_repeat_ms": self.min_repeat_ms,
                "warmup": self.warmup, "flush_bytes": (self.flush_bytes or 2 * llc_bytes()) if self.cache_flush else 0,
                "single_call_cut_min_seconds": SINGLE_CALL_CUT_MIN_SECONDS}


@dataclass(frozen=True)
class _SetAside:
    """A candidate stopped while no best was known: its first call ran at least `seconds`."""
    seconds: float
    wall: float


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


class Runner:
    """Measures candidates one at a time in a worker forked from one zygote, on the inputs of the current task.

    The task: inputs for the input arguments, as a list in call order or a dict by ArgSpec name; None draws
      seeded random ones (floats uniform in [-1, 1), ints in [-8, 8)). reference_outputs: expected outputs
      (list or dict by name). Else `reference`, the build of the unscheduled program, is run once in the worker
      to produce them. With neither, outputs are only checked to be written. cold: names of input arguments
      evicted from every cache before each timed call (MeasureTask.cold). set_task() switches to another task:
      one runner serves every task of a tuning session.
    config: a RunnerConfig; keyword options (repeat=..., timeout=...) override its fields.
    """

    def __init__(self, inputs: Sequence[np.ndarray] | Mapping[str, np.ndarray] | None = None,
                 reference_outputs: Sequence[np.ndarray] | Mapping[str, np.ndarray] | None = None, *,
                 reference: BuildResult | None = None, args: Sequence[ArgSpec] | None = None,
                 cold: Sequence[str] = (), config: RunnerConfig | None = None, **options):
        self.config = replace(config or RunnerConfig(), **options)
        self.timing = self.config.timing()
        self.worker_starts = 0
        self._worker: WorkerProcess | None = None
        self.set_task(inputs, reference_outputs, reference=reference, args=args, cold=cold)

    def set_task(self, inputs: Sequence[np.ndarray] | Mapping[str, np.ndarray] | None = None,
                 reference_outputs: Sequence[np.ndarray] | Mapping[str, np.ndarray] | None = None, *,
                 reference: BuildResult | None = None, args: Sequence[ArgSpec] | None = None,
                 cold: Sequence[str] = ()) -> None:
        """Measure the following builds on this task (arguments as in the class docstring). The zygote stays:
        it is sent the new task before the next run, and its child, which holds the old task's buffers, ends."""
        self.inputs, self.reference_outputs, self.reference = inputs, reference_outputs, reference
        self.args = tuple(args) if args is not None else None
        self.cold = tuple(cold)
        self.best_seconds = math.inf     # best full (not cut) median seen on this task
        self._init_msg: dict | None = None
        self._task_sent = False

    @property
    def worker_pid(self) -> int | None:
        """The live worker child's process id (for diagnostics), or None."""
        return self._worker.child_pid if self._worker is not None else None

    def __enter__(self) -> "Runner":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._worker is not None:
            self._worker.close()
            self._worker = None

    def run(self, builds: Sequence[BuildResult], best_seconds: float | None = None,
            early_cut: bool = True) -> list[MeasureResult]:
        """Measure each build in order. best_seconds (e.g. the best from the log) enables the early cut.

        While no best is known, a candidate whose first call outlasts probe_seconds is stopped and set aside;
        once the batch has a best, it is recorded as a lower bound if that already proves it too slow, else run
        again in full. early_cut=False times every build in full (re-timing the top programs)."""
        if not early_cut:
            return [self._run_one(b, None, use_best=False) for b in builds]
        results = [self._run_one(b, best_seconds, probe=True) for b in builds]
        for i, r in enumerate(results):
            if isinstance(r, _SetAside):
                kill = self._kill_seconds(self._best(best_seconds))
                if r.seconds >= kill:
                    results[i] = self._stopped(builds[i], r.seconds, r.wall, kill)
                else:
                    results[i] = self._run_one(builds[i], best_seconds, probe=False, spent=r.wall)
        return results

    def fresh_worker(self) -> None:
        """End the current worker child: the next candidate runs in a newly forked one (benchmarks use this to
        compare timings across children)."""
        if self._worker is not None:
            self._worker.end_child()

    def _best(self, best_seconds: float | None) -> float:
        return min(self.best_seconds, best_seconds if best_seconds is not None else math.inf)

    def _cut_seconds(self, best: float) -> float:
        return self.config.early_cut_ratio * best if self.config.early_cut_ratio and math.isfinite(best) else 0.0

    def _kill_seconds(self, best: float) -> float:
        """How long a first call may run before the candidate is stopped: the cut with room for a cold call."""
        cut = self._cut_seconds(best)
        return max(KILL_FACTOR * cut, cut + KILL_SLACK_SECONDS) if cut else math.inf

    def _run_one(self, build: BuildResult, best_seconds: float | None, probe: bool = False,
                 spent: float = 0.0, use_best: bool = True) -> "MeasureResult | _SetAside":
        start = time.perf_counter() - spent
        if not build.ok:
            return MeasureResult((), build.error_code, build.error_msg, build.build_seconds, time.time())
        if self.args is None:
            self.args = build.source.args
        if arg_signature(build.source.args) != arg_signature(self.args):
            return self._result(build, start, MeasureErrorNo.INSTANTIATION_ERROR,
                                "candidate signature differs from the task's")
        best = self._best(best_seconds) if use_best else math.inf
        cut = self._cut_seconds(best)
        kill = self._kill_seconds(best)
        if not math.isfinite(kill) and probe and self.config.early_cut_ratio:
            kill = self.config.probe_seconds
        contender = self.config.contender_ratio * best if self.config.contender_ratio and cut > 0 else 0.0
        msg = {"op": "run", "lib": build.lib_path, "entry": build.source.entry, "config": self.timing,
               "cut_seconds": cut, "time_budget": 0.8 * self.config.timeout, "contender_seconds": contender}
        reply = self._exchange(build, msg, start, cut, kill)
        if not isinstance(reply, dict):
            return reply
        if reply.get("error_code", 0) != MeasureErrorNo.NO_ERROR:
            return self._result(build, start, reply["error_code"], reply.get("error_msg", ""))
        result = self._result(build, start, MeasureErrorNo.NO_ERROR, "", tuple(reply["costs"]),
                              reply["lower_bound"], reply["number"])
        if not result.lower_bound:
            self.best_seconds = min(self.best_seconds, result.median)
        return result

    def _exchange(self, build: BuildResult, msg: dict, start: float, cut: float,
                  kill: float) -> "dict | MeasureResult | _SetAside":
        """Send one run request and read the worker's reply; a timeout, stop or crash comes back as a result."""
        for attempt in (1, 2):
            started = False
            try:
                worker = self._ensure_worker()  # may start the zygote: not part of the candidate's time limit
                deadline = time.monotonic() + self.config.timeout
                reply = worker.request(msg, deadline)
                if "calling" in reply:  # the kernel has started: from now on it may run for `kill` seconds
                    started, called = True, time.monotonic()
                    try:
                        reply = worker.read(min(deadline, called + kill))
                    except WorkerTimeout:
                        if called + kill >= deadline:
                            raise
                        stopped = time.monotonic() - called
                        worker.end_child()
                        if cut:
                            return self._stopped(build, stopped, time.perf_counter() - start, kill)
                        return _SetAside(stopped, time.perf_counter() - start)
                if "called" in reply:  # the first call returned; checking and timing get the rest of the timeout
                    reply = worker.read(deadline)
                break
            except WorkerTimeout:
                self._worker.end_child()
                return self._result(build, start, MeasureErrorNo.RUN_TIMEOUT,
                                    f"run timed out after {self.config.timeout:g} s")
            except WorkerDied as exc:
                zygote_alive = self._worker is not None and self._worker.proc.poll() is None
                if started and zygote_alive:  # the candidate's own process died under it: its crash
                    return self._result(build, start, MeasureErrorNo.RUNTIME_DEVICE, str(exc))
                # Died before the kernel ran, or the zygote went too (killed from outside): not the candidate's
                # doing. Try once more in fresh processes; blame the candidate only if it happens again.
                if not zygote_alive:
                    self._discard_worker()
                if attempt == 2:
                    code = MeasureErrorNo.RUNTIME_DEVICE if zygote_alive else MeasureErrorNo.UNKNOWN_ERROR
                    what = "" if zygote_alive else "the measurement processes died (killed from outside?): "
                    return self._result(build, start, code, what + str(exc))
        return reply

    def _stopped(self, build: BuildResult, seconds: float, wall: float, kill: float) -> MeasureResult:
        """A candidate stopped in its first call: at least `seconds` per call, output not checked."""
        msg = (f"stopped after {seconds:.3g} s in its first call (limit {kill:.3g} s from the early cut); "
               "a lower bound, output not checked")
        return MeasureResult((seconds,), MeasureErrorNo.NO_ERROR, msg, build.build_seconds + wall, time.time(),
                             True, 1)

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
        """The zygote (started once, given each task once) with a live child."""
        if self._worker is not None and self._worker.proc.poll() is not None:
            self._discard_worker()
        if self._worker is None:
            if self._init_msg is None:
                self._init_msg = self._make_init_msg()
            self._worker = WorkerProcess()
            self._task_sent = False
        if not self._task_sent:
            self._send_task()
        if not self._worker.child_alive:
            self._worker.spawn()
            self.worker_starts += 1
        return self._worker

    def _send_task(self) -> None:
        if self._init_msg is None:
            self._init_msg = self._make_init_msg()
        if self._worker.child_alive:  # forked with the previous task's buffers
            self._worker.end_child()
        try:
            reply = self._worker.control(self._init_msg, self.config.init_timeout)
        except (WorkerDied, WorkerTimeout) as exc:
            log = self._worker.log_tail()
            self._discard_worker()
            raise RuntimeError(f"measurement worker failed to start: {exc!r}\n{log}") from None
        if not reply.get("ok"):
            log = self._worker.log_tail()
            self._discard_worker()
            raise RuntimeError(f"measurement worker rejected the task: {reply.get('error_msg')}\n{log}")
        self._task_sent = True

    def _make_init_msg(self) -> dict:
        in_specs = [a for a in self.args if not a.is_output]
        out_specs = [a for a in self.args if a.is_output]
        inputs = inputs_by_position(self.inputs, in_specs, "inputs") if self.inputs is not None else random_inputs(
            in_specs, self.config.seed)
        refs = None
        if self.reference_outputs is not None:
            given = inputs_by_position(self.reference_outputs, out_specs, "reference_outputs")
            refs = [storage(r, s.dtype).reshape(s.shape) for r, s in zip(given, out_specs)]
        it = iter(inputs)
        inputs_by_arg = [None if a.is_output else storage(next(it), a.dtype).reshape(a.shape)
                         for a in self.args]
        ref_lib = None
        if refs is None and self.reference is not None:
            if not self.reference.ok:
                raise ValueError(f"reference build failed: {self.reference.error_msg}")
            ref_lib = (self.reference.lib_path, self.reference.source.entry)
        unknown = sorted(set(self.cold) - {a.name for a in in_specs})
        if unknown:
            raise ValueError(f"cold inputs {unknown} are not input arguments of the task")
        return {"op": "init", "runtime": str(runtime_library(self.config.cc)), "names": [a.name for a in self.args],
                "cold_args": [i for i, a in enumerate(self.args) if a.name in self.cold],
                "args": [(a.shape, np.dtype(NP_DTYPE[a.dtype]).name, a.is_output) for a in self.args],
                "inputs_by_arg": inputs_by_arg,
                "reference_outputs": refs, "reference_lib": ref_lib, "rtol": self.config.rtol, "atol": self.config.atol}


def arg_signature(args: Sequence[ArgSpec]) -> tuple:
    """What a program's arguments must match to reuse a task's inputs: shapes, types, directions."""
    return tuple((tuple(a.shape), a.dtype, a.is_output) for a in args)


def inputs_by_position(values, specs: Sequence[ArgSpec], what: str) -> list:
    """`values` (a sequence, or a mapping by argument name) in the order of `specs`; ValueError naming `what`."""
    if isinstance(values, Mapping):
        missing = [s.name for s in specs if s.name not in values]
        if missing:
            raise ValueError(f"{what} lacks {missing}")
        return [values[s.name] for s in specs]
    values = list(values)
    if len(values) != len(specs):
        raise ValueError(f"{what}: expected {len(specs)} arrays, got {len(values)}")
    return values


def random_inputs(specs: Sequence[ArgSpec], seed: int) -> list[np.ndarray]:
    """The inputs every runner times and checks programs with, drawn from `seed` (the same on every target)."""
    rng = np.random.default_rng(seed)
    out = []
    for s in specs:
        if DTYPE_TABLE[s.dtype].is_float:
            out.append(storage(rng.uniform(-1.0, 1.0, size=s.shape), s.dtype))   # 16-bit floats: rounded
        else:
            out.append(rng.integers(-8, 8, size=s.shape).astype(NP_DTYPE[s.dtype]))
    return out
