"""The Ray backend's bookkeeping of batches in flight (plain Python, no `import ray`): which candidates of which
batch wait for a runner, which results have come back, and which batch a free runner should take from next."""
from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

from ansorc.measure.backend import BatchTimes
from ansorc.measure.builder import BuildResult
from ansorc.measure.runner import MeasureResult


@dataclass
class Batch:
    """One submitted batch: its task (key and boxed reference), its builds (None while building), the Items
    ready to measure, the queue of candidates waiting for a runner, and one result slot per candidate."""
    key: str
    box: tuple
    early_cut: bool
    best: float | None
    builds: list
    results: list
    items: dict = field(default_factory=dict)      # candidate index -> Item to send to a runner
    todo: deque = field(default_factory=deque)     # candidate indices waiting for a runner
    times: BatchTimes = field(default_factory=BatchTimes)
    measuring: float | None = None                 # when its first candidate went to a runner

    @property
    def complete(self) -> bool:
        return all(r is not None for r in self.results)

    def fail(self, i: int, build: BuildResult) -> None:
        """Candidate i failed to build: its result is the build's error, without a round trip."""
        self.builds[i] = build
        self.results[i] = MeasureResult((), build.error_code, build.error_msg, build.build_seconds, time.time())
        self._maybe_done()

    def accept(self, i: int, res: MeasureResult) -> bool:
        """Candidate i's result, unless it has one already (a late or repeated answer): True if taken."""
        if self.results[i] is not None:
            return False
        self.results[i] = res
        if res.ok and not res.lower_bound and res.costs:
            self.best = res.median if self.best is None else min(self.best, res.median)
        self._maybe_done()
        return True

    def _maybe_done(self) -> None:
        if self.times.done is None and self.complete:
            self.times.done = time.monotonic()


def pick(batches: dict, last: int | None):
    """(handle, candidate index) for a free runner: from the batch it last measured while that one has work
    (the runner keeps its task's inputs, no switch), else from the oldest batch with work; None if none."""
    order = ([last] if last in batches else []) + sorted(batches)
    for h in order:
        if batches[h].todo:
            return h, batches[h].todo.popleft()
    return None


__all__ = ["Batch", "pick"]
