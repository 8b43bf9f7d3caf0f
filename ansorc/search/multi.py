"""tune_tasks, the one tuning driver: many tasks under one budget with the task scheduler (scheduler.py), one
cost model shared by all tasks, one measurement backend per target (or the caller's), one log. Resumable: each
task's records in the log restore its trial count and curve, and nothing is measured twice. tune() (tuner.py)
is its one-task case."""
from __future__ import annotations

import math
import sys
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
    after which no new round starts (`trials` still bounds the run, and sizes the rounds)."""
    tasks = [t if isinstance(t, SearchTask) else SearchTask(t) for t in tasks]
    weights = tuple(float(w) for w in (weights if weights is not None else [1] * len(tasks)))
    if len(weights) != len(tasks):
        raise ValueError(f"{len(weights)} weights for {len(tasks)} tasks")
    opts = tune_options(options)
    per_task_stop = objective == "f4"
    sched = scheduler or SchedulerOptions(strategy=strategy, per_round=opts.per_round, seed=opts.seed,
                                          early_stopping=None if per_task_stop else opts.early_stopping,
                                          per_task_early_stopping=opts.early_stopping if per_task_stop else None,
                                          time_budget=time_budget)
    if scheduler is not None and time_budget is not None:
        sched = replace(sched, time_budget=time_budget)
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
        for t in tuners:
            if t.retime():
                bar.show(0, t.result.best_gflops, f", re-timed top {len(t.result.retimed)}")
    finally:
        bar.close()
        for b in backends.values():
            b.close()
    return ScheduleResult(tasks, weights, [t.result for t in tuners], s.curve, s.rounds, s.value(),
                          pipe.times if pipe is not None else None)


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
