"""tune(): tune one task for a number of trials, resumable from the log, ending with a side-by-side re-timing
of the best programs: the one-task case of the one driver, search/multi.py tune_tasks."""
from __future__ import annotations

from ..measure.record import steps_key
from .multi import tune_tasks
from .task import SearchTask
from .tuning import TargetUnavailableError, TaskTuner, TuneOptions, TuneResult, local_backend, tune_options


def tune(tensors, trials: int | None = None, log: str | None = None, target: str = "native",
         options: TuneOptions | None = None, backend=None, callbacks=()) -> TuneResult:
    """Tune `tensors` (inputs then outputs, or a SearchTask) until `trials` programs are measured, the log's
    included; returns the best. The one-task case of tune_tasks (search/multi.py).

    options: how to tune (a TuneOptions: seed, model, cost_model (the model's pretrained start: docs/cost-model.md),
    per_round (the most programs per round: a round is smaller where the first, unguided one would take over a
    quarter of the trials), early_stopping, params, progress, search, flags, retime_top, retime_rounds, runner);
    `trials` replaces its trials when given.
    A log that already holds records of this workload is resumed: nothing is
    measured twice. At the end, the `retime_top` best programs are timed again side by side, `retime_rounds`
    times in turn, and the winner is the best of those timings (logged with note "retime"): single timings on a
    shared machine vary widely, and the fastest single timing is often a lucky one. retime_top=0 skips it.
    backend: a MeasureBackend to measure with (the caller closes it); by default this machine's for the target.
    callbacks: called with (TaskTuner, records) after each batch (search/callbacks.py)."""
    task = tensors if isinstance(tensors, SearchTask) else SearchTask(tensors, target)
    opts = tune_options(options, trials=trials)
    return tune_tasks([task], trials=opts.trials, log=log, backend=backend, options=opts,
                      callbacks=callbacks).results[0]


__all__ = ["tune", "tune_options", "local_backend", "TargetUnavailableError", "TuneOptions", "TuneResult",
           "TaskTuner", "steps_key"]
