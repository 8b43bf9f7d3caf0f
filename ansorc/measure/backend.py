"""The measurement interface the search talks to, so that a remote or GPU backend can replace the local one."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Protocol, Sequence, runtime_checkable

from ansorc.codegen.source import Source
from ansorc.measure.builder import DEFAULT_BUILD_TIMEOUT, DEFAULT_CFLAGS, BuildResult, build
from ansorc.measure.runner import MeasureResult, Runner
from ansorc.measure.task import MeasureTask


@runtime_checkable
class MeasureBackend(Protocol):
    """Builds and measures candidates. One backend serves every task of a tuning session (one target).

    The task travels with each batch: run(builds, task) checks and times `builds` on task.inputs against
    task.reference_outputs (a MeasureTask). A backend may keep per-task state (the local runner keeps a zygote
    holding the inputs) and switches it when a batch names another task (MeasureTask.same_as), so a scheduler
    can interleave tasks freely. task=None measures on the task of the previous batch (or the one the backend
    was made with). best_seconds enables the early cut; early_cut=False times every build in full."""

    def build(self, sources: Sequence[Source]) -> list[BuildResult]: ...

    def run(self, builds: Sequence[BuildResult], task: MeasureTask | None = None, *,
            best_seconds: float | None = None, early_cut: bool = True) -> list[MeasureResult]: ...

    def close(self) -> None: ...


@runtime_checkable
class BatchBackend(Protocol):
    """A backend that takes several batches at once (the Ray backend): submit() returns at once with a handle;
    wait() returns the handles among those given whose batch is complete (at least one unless `timeout` ran
    out); collect() hands back a complete batch's (builds, results), once. slots() is how many batches keep it
    busy (e.g. one per measuring node). A synchronous backend gets these from SyncBatches: slots() == 1 and
    submit() builds and runs before it returns."""

    def submit(self, sources: Sequence[Source], task: MeasureTask | None = None, *,
               best_seconds: float | None = None, early_cut: bool = True) -> int: ...

    def wait(self, handles: Sequence[int], timeout: float | None = None) -> list[int]: ...

    def collect(self, handle: int) -> tuple[list[BuildResult], list[MeasureResult]]: ...

    def slots(self) -> int: ...


@dataclass
class BatchTimes:
    """When a batch was submitted and completed (time.monotonic), for the scheduler's instrumentation."""
    submitted: float = field(default_factory=time.monotonic)
    done: float | None = None


class SyncBatches:
    """submit/wait/collect over a backend's build() and run(): each batch is complete when submit returns."""

    def __init__(self, backend=None):
        self._backend = backend if backend is not None else self
        self._done: dict = {}         # handle -> (builds, results)
        self.batch_times: dict = {}   # handle -> BatchTimes
        self._next = 0

    def submit(self, sources: Sequence[Source], task: MeasureTask | None = None, *,
               best_seconds: float | None = None, early_cut: bool = True) -> int:
        handle, self._next = self._next, self._next + 1
        times = self.batch_times[handle] = BatchTimes()
        builds = self._backend.build(sources)
        self._done[handle] = (builds, self._backend.run(builds, task, best_seconds=best_seconds,
                                                       early_cut=early_cut))
        times.done = time.monotonic()
        return handle

    def wait(self, handles: Sequence[int], timeout: float | None = None) -> list[int]:
        return [h for h in handles if h in self._done]

    def collect(self, handle: int) -> tuple[list[BuildResult], list[MeasureResult]]:
        return self._done.pop(handle)

    def slots(self) -> int:
        return 1


def batches_of(backend) -> BatchBackend:
    """The backend itself when it takes batches asynchronously, else SyncBatches around it."""
    return backend if isinstance(backend, BatchBackend) else SyncBatches(backend)


class LocalBackend(SyncBatches):
    """Builds with the local compiler in parallel and runs on this machine through one runner.

    The runner is anything with set_task(inputs, reference_outputs, **extra) and run(builds, best_seconds,
    early_cut): the CPU Runner, or a GPU runner. Build and run never overlap: compiling on the same cores would
    disturb the timings.
    """

    def __init__(self, runner: Runner, target_flags: Sequence[str] = DEFAULT_CFLAGS,
                 build_timeout: float = DEFAULT_BUILD_TIMEOUT, n_parallel: int | None = None, cc: str = "gcc",
                 build_dir: str | os.PathLike | None = None):
        self.runner = runner
        self.target_flags, self.build_timeout, self.n_parallel = tuple(target_flags), build_timeout, n_parallel
        self.cc, self.build_dir = cc, build_dir
        self.task: MeasureTask | None = None   # the task the runner holds, once a batch named one
        SyncBatches.__init__(self)

    def build(self, sources: Sequence[Source]) -> list[BuildResult]:
        return build(sources, self.target_flags, self.build_timeout, self.n_parallel, self.cc, self.build_dir)

    def run(self, builds: Sequence[BuildResult], task: MeasureTask | None = None, *,
            best_seconds: float | None = None, early_cut: bool = True) -> list[MeasureResult]:
        if task is not None and not task.same_as(self.task):
            self.runner.set_task(task.inputs, task.reference_outputs, **task.runner_options())
            self.task = task
        return self.runner.run(builds, best_seconds, early_cut)

    def measure(self, sources: Sequence[Source], task: MeasureTask | None = None,
                best_seconds: float | None = None) -> list[MeasureResult]:
        """build() then run()."""
        return self.run(self.build(sources), task, best_seconds=best_seconds)

    def close(self) -> None:
        self.runner.close()

    def __enter__(self) -> "LocalBackend":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


__all__ = ["MeasureBackend", "BatchBackend", "BatchTimes", "SyncBatches", "batches_of", "LocalBackend", "MeasureTask"]
