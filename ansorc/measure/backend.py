"""The measurement interface the search talks to, so that a remote backend can replace the local one."""
from __future__ import annotations

import os
from typing import Protocol, Sequence, runtime_checkable

from ansorc.codegen.source import Source
from ansorc.measure.builder import DEFAULT_BUILD_TIMEOUT, DEFAULT_CFLAGS, BuildResult, build
from ansorc.measure.runner import MeasureResult, Runner


@runtime_checkable
class MeasureBackend(Protocol):
    def build(self, sources: Sequence[Source]) -> list[BuildResult]: ...

    def run(self, builds: Sequence[BuildResult], best_seconds: float | None = None,
            early_cut: bool = True) -> list[MeasureResult]: ...

    def close(self) -> None: ...


class LocalBackend:
    """Builds with the local compiler in parallel and runs on this machine through one Runner (one task).

    Build and run never overlap: compiling on the same cores would disturb the timings.
    """

    def __init__(self, runner: Runner, target_flags: Sequence[str] = DEFAULT_CFLAGS,
                 build_timeout: float = DEFAULT_BUILD_TIMEOUT, n_parallel: int | None = None, cc: str = "gcc",
                 build_dir: str | os.PathLike | None = None):
        self.runner = runner
        self.target_flags, self.build_timeout, self.n_parallel = tuple(target_flags), build_timeout, n_parallel
        self.cc, self.build_dir = cc, build_dir

    def build(self, sources: Sequence[Source]) -> list[BuildResult]:
        return build(sources, self.target_flags, self.build_timeout, self.n_parallel, self.cc, self.build_dir)

    def run(self, builds: Sequence[BuildResult], best_seconds: float | None = None,
            early_cut: bool = True) -> list[MeasureResult]:
        return self.runner.run(builds, best_seconds, early_cut)

    def measure(self, sources: Sequence[Source], best_seconds: float | None = None) -> list[MeasureResult]:
        """build() then run()."""
        return self.run(self.build(sources), best_seconds)

    def close(self) -> None:
        self.runner.close()

    def __enter__(self) -> "LocalBackend":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
