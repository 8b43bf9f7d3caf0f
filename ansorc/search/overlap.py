"""TaskTuner's cycle with the measurement in flight, so that the driver searches while the cluster measures:
begin() proposes a task's next batch (TaskTuner.propose) and submits it to a BatchBackend; finish() collects
the results and commits them (TaskTuner.commit: the log, the cost model and the other callbacks). The
scheduler (TaskScheduler.run_overlapped) keeps several batches of different tasks in flight. DriverTimes
records where the driver's time goes: searching, recording, model updates, and waiting for the cluster,
which tells when the driver (not the nodes) is the limit.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..measure.backend import batches_of
from .tuning import Batch


@dataclass
class DriverTimes:
    """Seconds the driver spent in each part of an overlapped run, and each batch's (task, size, submitted,
    done) on one monotonic clock (submitted: after its search; done: when the backend completed it)."""
    search: float = 0.0      # evolutionary search + rendering of the batches
    submit: float = 0.0      # handing batches to the backend (starting their builds)
    wait: float = 0.0        # blocked until some batch completed: the driver was idle
    record: float = 0.0      # logging results, updating the measured sets
    model: float = 0.0       # cost model updates (LightGBM retraining)
    batches: list = field(default_factory=list)
    start: float = field(default_factory=time.monotonic)

    @property
    def wall(self) -> float:
        return time.monotonic() - self.start

    def peak_overlap(self) -> int:
        """The most batches that were in flight (submitted, not yet complete) at one moment."""
        events = sorted([(b[2], 1) for b in self.batches if b[3] is not None] +
                        [(b[3], -1) for b in self.batches if b[3] is not None], key=lambda e: (e[0], e[1]))
        peak = cur = 0
        for _, d in events:
            cur += d
            peak = max(peak, cur)
        return peak

    def summary(self) -> dict:
        busy = self.search + self.submit + self.record + self.model
        n = sum(b[1] for b in self.batches) or 1
        return {"wall_s": round(self.wall, 3), "search_s": round(self.search, 3), "submit_s": round(self.submit, 3),
                "record_s": round(self.record, 3), "model_s": round(self.model, 3), "wait_s": round(self.wait, 3),
                "driver_busy_share": round(busy / max(self.wall, 1e-9), 3), "candidates": n,
                "search_ms_per_candidate": round(1e3 * self.search / n, 2),
                "model_ms_per_candidate": round(1e3 * self.model / n, 2), "batches": len(self.batches),
                "peak_batches_in_flight": self.peak_overlap()}


@dataclass
class _Flight:
    task: int
    handle: int
    batch: Batch
    row: int = -1              # its row in DriverTimes.batches


class Pipeline:
    """begin/wait/finish over TaskTuners that share one backend (the scheduler's view of overlapped rounds)."""

    def __init__(self, tuners, backend):
        self.tuners, self.backend = list(tuners), batches_of(backend)
        self.times = DriverTimes()
        self._flights: dict = {}   # token -> _Flight
        self._next = 0

    def slots(self) -> int:
        return self.backend.slots()

    def begin(self, i: int, n: int):
        """Search task i's next n programs and submit them; a token, or None when its space gave nothing new
        (the tuner is then marked exhausted, as step() would)."""
        tuner, t0 = self.tuners[i], time.monotonic()
        batch = tuner.propose(n)
        if batch is None:
            return None
        t1 = time.monotonic()
        handle = self.backend.submit(batch.sources, tuner.measure_task, best_seconds=tuner.best_seconds)
        t2 = time.monotonic()
        self.times.search += t1 - t0
        self.times.submit += t2 - t1
        token, self._next = self._next, self._next + 1
        self.times.batches.append([i, len(batch), t1, None])
        self._flights[token] = _Flight(i, handle, batch, len(self.times.batches) - 1)
        return token

    def wait(self, tokens) -> list:
        """The tokens (among `tokens`) whose batch is complete; blocks until there is one."""
        by_handle = {self._flights[t].handle: t for t in tokens}
        t0 = time.monotonic()
        done = []
        while not done:
            done = self.backend.wait(list(by_handle), timeout=1.0)
        self.times.wait += time.monotonic() - t0
        return [by_handle[h] for h in done]

    def finish(self, token) -> list:
        """Collect, log and learn from a complete batch: its records, as step() returns them."""
        f = self._flights.pop(token)
        tuner, t0 = self.tuners[f.task], time.monotonic()
        builds, results = self.backend.collect(f.handle)
        self.times.batches[f.row][3] = _done_time(self.backend, f.handle, t0)
        model_before = tuner.result.model_seconds
        recs = tuner.commit(f.batch, builds, results)
        model = tuner.result.model_seconds - model_before
        self.times.model += model
        self.times.record += time.monotonic() - t0 - model
        return recs


def _done_time(backend, handle: int, default: float) -> float:
    times = getattr(backend, "batch_times", {}).get(handle)
    return times.done if times is not None and times.done is not None else default


__all__ = ["DriverTimes", "Pipeline"]
