"""What happens after each measured batch, as callbacks: TaskTuner.commit calls each `callback(tuner, records)`
in order (MetaSchedule's MeasureCallback). The defaults log the records and train the cost model; a caller
adds its own (a progress bar, a curve, a stopping rule) without a copy of the tuning loop."""
from __future__ import annotations

import time
from typing import Protocol, Sequence


class TuneCallback(Protocol):
    def __call__(self, tuner, records: list) -> None:
        """`tuner` (a TaskTuner) has just committed `records`, one per program of its batch."""


class AppendToLog:
    """Append each batch's records to a RecordLog (one JSON line each), so that a later run resumes from them."""

    def __init__(self, log):
        self.log = log

    def __call__(self, tuner, records: list) -> None:
        self.log.append(records)


class UpdateModel:
    """Train the tuner's cost model on the batch; the seconds it takes go to tuner.result.model_seconds."""

    def __call__(self, tuner, records: list) -> None:
        start = time.perf_counter()
        tuner.model.update(records)
        tuner.result.model_seconds += time.perf_counter() - start


class ProgressBar:
    """A tqdm bar of trials and the best rate so far, in `unit` (GFLOP/s, or GOP/s for integer work; nothing shown
    when disabled)."""

    def __init__(self, enabled: bool, total: int, initial: int = 0, unit: str = "GFLOP/s"):
        self.bar, self.unit = None, unit
        if enabled:
            from tqdm import tqdm
            self.bar = tqdm(total=total, initial=initial, unit="trial", desc="tuning", dynamic_ncols=True)

    def __call__(self, tuner, records: list) -> None:
        self.show(len(records), tuner.result.best_gflops)

    def show(self, n: int, gflops: float, note: str = "") -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(f"best {gflops:.1f} {self.unit}{note}")
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def default_callbacks(log=None, extra: Sequence[TuneCallback] = ()) -> tuple:
    """Log (when there is a log), then train the model, then the caller's callbacks."""
    return (*((AppendToLog(log),) if log is not None else ()), UpdateModel(), *extra)


__all__ = ["TuneCallback", "AppendToLog", "UpdateModel", "ProgressBar", "default_callbacks"]
