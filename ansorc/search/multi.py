"""tune_tasks, the one tuning driver: many tasks under one budget with the task scheduler (scheduler.py), one
cost model shared by all tasks, one measurement backend per target (or the caller's), one log. Resumable: each
task's records in the log restore its trial count and curve, and nothing is measured twice. tune() (tuner.py)
is its one-task case."""
from __future__ import annotations

import math
import statistics
import sys
import time
from dataclasses import dataclass, field, replace

from ..measure.backend import BatchBackend
from ..measure.record import RecordLog
from .objectives import NO_PROGRAM, make_objective
from .overlap import DriverTimes, Pipeline
from .callbacks import ProgressBar, default_callbacks
from .scheduler import SchedulerOptions, TaskScheduler
from .seeding import SeedPool
from .task import SearchTask
from .tuning import TaskTuner, TuneOptions, local_backend, make_cost_model, tune_options

# Of a time budget, the share kept for the final side-by-side re-timing: it took 43 s (7%) of a 10-minute
# ShuffleNetV2 run (31 tasks, Zen 4), which therefore ended at 640 s.
RETIME_SHARE = 0.1


@dataclass
class ScheduleResult:
    tasks: list                                   # SearchTask, in the caller's order
    weights: tuple
    results: list                                 # TuneResult per task
    curve: list = field(default_factory=list)     # (total trials, objective) after each round
    rounds: list = field(default_factory=list)    # task index of each round
    objective: float = math.inf
    driver: DriverTimes | None = None             # where the driver's time went (overlapped runs only)

    @property
    def latencies(self) -> list:
        return [r.best_seconds for r in self.results]

    @property
    def estimated_latency(self) -> float:
        """sum of weight x best latency over tasks (inf while a task has no program)."""
        return sum(w * s for w, s in zip(self.weights, self.latencies))


def task_tag(task: SearchTask) -> str:
    """What makes tasks "similar" for the scheduler: the compute ops' tags, else their reduction structure."""
    ops = task.dag.compute_ops
    tags = sorted({op.tag for op in ops if op.tag})
    if tags:
        return "+".join(tags)
    return "+".join(sorted({f"{op.combiner}{len(op.reduce_axes)}" for op in ops if op.combiner}))


def tune_tasks(tasks, weights=None, trials: int = 1000, log: str | None = None, objective="f1",
               strategy: str = "gradient", networks=None, backend=None, options: TuneOptions | None = None,
               scheduler: SchedulerOptions | None = None, requirements=None, references=None, on_round=None,
               in_flight: int | None = None, callbacks=(), time_budget: float | None = None) -> ScheduleResult:
    """Tune `tasks` (SearchTasks or tensor lists) until `trials` programs have been measured for them in all,
    the log's included (a run that was stopped resumes where it was with the same call; nothing is measured
    twice). Each round goes where the objective gains most (strategy "gradient") or in turn ("round-robin").
    weights: occurrences of each task (default 1). objective: "f1" weighted latency (default), "f2" with
    per-network `requirements`, "f3" geometric-mean speedup over per-network `references`, "f4" f1 with per-task
    early stopping, or a callable; networks: task indices per network (f2/f3). options: a TuneOptions (its
    trials are this call's `trials`); options.early_stopping stops the run (f4: each task)
    after that many trials without a better objective. callbacks: called after each batch of every task with
    (TaskTuner, records), after the log and the model update (search/callbacks.py); on_round(scheduler, task
    index) after each round. At the end each task's best programs are re-timed side by side (retime_top).
    in_flight: rounds of different tasks measured at once on `backend` while the driver searches the next
    (TaskScheduler.run_overlapped; result.driver says where the driver's time went). Default: the backend's
    slots() (a RayBackend's: measuring nodes + 1), and a local backend's 1 runs rounds one by one. Without a
    `backend`, measurement is local and synchronous and in_flight is ignored. time_budget: seconds of wall time
    for the whole call, set-up and re-timing included: no round starts that would end after the budget less
    RETIME_SHARE of it, and the re-timing takes the tasks that weigh most first while time is left (`trials`
    still bounds the run, and sizes the rounds)."""
    started = time.monotonic()
    tasks = [t if isinstance(t, SearchTask) else SearchTask(t) for t in tasks]
    weights = tuple(float(w) for w in (weights if weights is not None else [1] * len(tasks)))
    if len(weights) != len(tasks):
        raise ValueError(f"{len(weights)} weights for {len(tasks)} tasks")
    opts = tune_options(options)
    per_task_stop = objective == "f4"
    sched = scheduler or SchedulerOptions(strategy=strategy, per_round=opts.per_round, seed=opts.seed,
                                          early_stopping=None if per_task_stop else opts.early_stopping,
                                          per_task_early_stopping=opts.early_stopping if per_task_stop else None)
    deadline = started + time_budget if time_budget is not None else math.inf
    # the scheduler owns the budget; tuners never stop by themselves
    per_task = replace(opts, trials=1 << 40, early_stopping=None, progress=False)
    obj = make_objective(objective, weights, networks, requirements, references)
    model, record_log, backends = make_cost_model(opts), RecordLog(log) if log else None, {}
    bar = ProgressBar(opts.progress and len(tasks) == 1, trials, unit=tasks[0].dag.rate_unit if tasks else "GFLOP/s")
    try:
        tuners: list = []
        # donors for each task's first round: the tasks tuned before it in this run, and the log's (seeding.py)
        pool = SeedPool(tuners, record_log.load() if record_log else ()) if opts.seeding else None
        for task in tasks:
            if backend is None and task.target not in backends:
                backends[task.target] = local_backend(task.target, opts)
            tuners.append(TaskTuner(task, per_task, model, backend or backends[task.target], record_log,
                                    default_callbacks(record_log, (*callbacks, bar)), seeds=pool))
        if time_budget is not None:   # what is left of it once the tasks are set up, less the re-timing's share
            keep = RETIME_SHARE * time_budget if opts.retime_top > 1 else 0.0
            sched = replace(sched, time_budget=max(0.0, deadline - keep - time.monotonic()))
        s = TaskScheduler(tuners, obj, sched, [t.dag.flop_count for t in tasks], [task_tag(t) for t in tasks])
        bar.show(s.total_trials, tuners[0].result.best_gflops if tuners else 0.0)
        table = _progress_table(tasks, weights) if opts.progress and len(tasks) > 1 else None
        flights = _in_flight(backend, in_flight)
        pipe = Pipeline(tuners, backend) if flights else None
        more = max(0, trials - s.total_trials)   # the log's trials count towards the budget
        if pipe is not None:
            s.run_overlapped(more, pipe, flights, on_round=_chain(on_round, table))
        else:
            s.run(more, on_round=_chain(on_round, table))
        _retime(tuners, weights, deadline, bar)
    finally:
        bar.close()
        for b in backends.values():
            b.close()
    return ScheduleResult(tasks, weights, [t.result for t in tuners], s.curve, s.rounds, s.value(),
                          pipe.times if pipe is not None else None)


def _retime(tuners, weights, deadline: float, bar) -> None:
    """Each task's best programs timed again side by side (TaskTuner.retime). Under a deadline the tasks that
    weigh most in the estimated latency go first, and a task is skipped when the mean re-timing so far would not
    fit; a task not re-timed keeps its search's best."""
    order = list(range(len(tuners)))
    if deadline < math.inf:
        order.sort(key=lambda i: -weights[i] * _finite(tuners[i].result.best_seconds))
    took: list = []
    for i in order:
        if time.monotonic() + (statistics.mean(took) if took else 0.0) > deadline:
            break
        t0 = time.monotonic()
        if tuners[i].retime():
            took.append(time.monotonic() - t0)
            bar.show(0, tuners[i].result.best_gflops, f", re-timed top {len(tuners[i].result.retimed)}")


def _finite(seconds: float) -> float:
    return seconds if seconds < NO_PROGRAM else 0.0   # a task with no program has nothing to re-time


def _in_flight(backend, asked: int | None) -> int:
    """How many rounds to keep in flight (0: the synchronous loop)."""
    if backend is None:
        return 0
    if asked is not None:
        if asked < 1:
            raise ValueError(f"in_flight must be at least 1, got {asked}")
        return asked
    slots = backend.slots() if isinstance(backend, BatchBackend) else 1
    return slots if slots > 1 else 0


def _chain(*callbacks):
    live = [c for c in callbacks if c is not None]
    return (lambda s, i: [c(s, i) for c in live]) if live else None


def _progress_table(tasks, weights, every: int = 5):
    """A per-task table (task, weight, trials, best latency, share of the total) every few rounds, on stderr."""
    def show(s: TaskScheduler, i: int):
        if len(s.rounds) % every and s.alive():
            return
        lat = s.latencies()
        total = sum(w * g for w, g in zip(weights, lat) if g < NO_PROGRAM) or 1.0
        print(f"\n{'task':>4} {'weight':>6} {'trials':>6} {'best ms':>9} {'share':>6}  after {s.total_trials} "
              "trials", file=sys.stderr)
        for k, (w, p) in enumerate(zip(weights, s.tasks)):
            ms = f"{p.best * 1e3:.3f}" if p.best < NO_PROGRAM else "-"
            share = f"{100 * w * p.best / total:.0f}%" if p.best < NO_PROGRAM else "-"
            print(f"{k:4d} {w:6g} {p.trials:6d} {ms:>9} {share:>6}{'  (dead)' if p.dead else ''}", file=sys.stderr)
    return show


__all__ = ["tune_tasks", "ScheduleResult", "task_tag"]
