"""tune(): tune one task for a number of trials, a short loop over TaskTuner.step (tuning.py), resumable from
the log, ending with a side-by-side re-timing of the best programs."""
from __future__ import annotations

from dataclasses import replace

from ..errors import AnsorcError
from ..measure.record import RecordLog, steps_key
from ..targets import parse, plugin
from .scheduler import round_size
from .task import SearchTask
from .tuning import TaskTuner, TuneOptions, TuneResult, make_cost_model


def tune(tensors, trials: int | None = None, log: str | None = None, target: str = "native",
         options: TuneOptions | None = None, backend=None, **kwargs) -> TuneResult:
    """Tune `tensors` (inputs then outputs, or a SearchTask) for `trials` measured programs; returns the best.

    options: a TuneOptions; keyword arguments override its fields (trials=, seed=, model=, per_round= (the most
    programs per round: a round is smaller where the first, unguided one would take over a quarter of the trials),
    early_stopping=, params=, progress=, search=, flags=, retime_top=, retime_rounds=, and runner_kwargs=
    {RunnerConfig field: value}). A log that already holds records of this workload is resumed: nothing is
    measured twice. At the end, the `retime_top` best programs are timed again side by side, `retime_rounds`
    times in turn, and the winner is the best of those timings (logged with note "retime"): single timings on a
    shared machine vary by up to 30%, and the fastest single timing is often a lucky one. retime_top=0 skips it.
    backend: a MeasureBackend to measure with (the caller closes it); by default this machine's for the target."""
    task = tensors if isinstance(tensors, SearchTask) else SearchTask(tensors, target)
    opts = tune_options(options, trials=trials, **kwargs)
    own = backend is None
    backend = local_backend(task.target, opts) if own else backend
    bar = None
    try:
        tuner = TaskTuner(task, opts, make_cost_model(opts), backend, RecordLog(log) if log else None)
        bar = _progress(opts.progress, opts.trials, tuner.done)
        size = round_size(opts.per_round, opts.trials)
        while not tuner.finished:
            recs = tuner.step(min(size, opts.trials - tuner.done))
            bar.update(len(recs), tuner.result.best_gflops)
        if tuner.retime():
            bar.update(0, tuner.result.best_gflops, f", re-timed top {len(tuner.result.retimed)}")
    finally:
        if bar is not None:
            bar.close()
        if own:
            backend.close()
    return tuner.result


def tune_tasks(tasks, log: str | None = None, options: TuneOptions | None = None, **kwargs) -> list[TuneResult]:
    """Tune several SearchTasks round-robin, one round of `per_round` programs each in turn, sharing one cost
    model, one log and one backend per target; `trials` is per task. Each task's best programs are re-timed
    at the end. Returns the results in the order of `tasks`."""
    opts = tune_options(options, **kwargs)
    model, record_log, backends, tuners = make_cost_model(opts), RecordLog(log) if log else None, {}, []
    try:
        for task in tasks:
            if task.target not in backends:
                backends[task.target] = local_backend(task.target, opts)
            tuners.append(TaskTuner(task, opts, model, backends[task.target], record_log))
        size = round_size(opts.per_round, opts.trials)
        while any(not t.finished for t in tuners):
            for t in tuners:
                if not t.finished:
                    t.step(min(size, opts.trials - t.done))
        for t in tuners:
            t.retime()
    finally:
        for backend in backends.values():
            backend.close()
    return [t.result for t in tuners]


def tune_options(options: TuneOptions | None = None, runner_kwargs: dict | None = None, **fields) -> TuneOptions:
    """options with `fields` replaced (None values are left out) and runner_kwargs applied to its RunnerConfig."""
    opts = replace(options or TuneOptions(), **{k: v for k, v in fields.items() if v is not None})
    if opts.flags is not None:
        opts = replace(opts, flags=tuple(opts.flags))
    return replace(opts, runner=replace(opts.runner, **runner_kwargs)) if runner_kwargs else opts


class TargetUnavailableError(AnsorcError, ValueError):
    """The target's programs cannot be measured on this machine (another ISA or architecture, no GPU)."""


def local_backend(target: str, options: TuneOptions):
    """This machine's compiler and runner for `target` (its plug-in's); TargetUnavailableError when its kernels
    cannot run here."""
    return plugin(target).local_backend(parse(target), options)


class _progress:
    """A tqdm bar showing trials and the best GFLOP/s so far (silent when disabled)."""

    def __init__(self, enabled: bool, total: int, initial: int):
        self.bar = None
        if enabled:
            from tqdm import tqdm
            self.bar = tqdm(total=total, initial=initial, unit="trial", desc="tuning", dynamic_ncols=True)

    def update(self, n: int, gflops: float, note: str = "") -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(f"best {gflops:.1f} GFLOP/s{note}")
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


__all__ = ["tune", "tune_tasks", "tune_options", "local_backend", "TuneOptions", "TuneResult", "TaskTuner", "steps_key"]
