"""Fewer cyclic garbage collections while the search runs.

The search builds and drops millions of small objects a round (IR nodes of every lowered candidate, feature
rows), almost none of them in reference cycles. CPython starts a young-generation collection every 700
allocations and an older one every tenth of those, each walking every tracked object of its generations: in a
tuner, whose heap holds the logs and measured sets, that was a large share of the search's CPU time
(docs/perf-notes.md, "Tuning a model for wall time"). A young generation of SEARCH_GEN0 objects makes those passes
14x rarer; garbage in cycles is still collected, later.
"""
from __future__ import annotations

import contextlib
import gc

SEARCH_GEN0 = 10_000


def use_search_thresholds(gen0: int | None = None) -> tuple:
    """Raise the young generation's threshold to `gen0` (default SEARCH_GEN0; never lower it); returns the
    thresholds before."""
    gen0 = SEARCH_GEN0 if gen0 is None else gen0
    old = gc.get_threshold()
    gc.set_threshold(max(gen0, old[0]), *old[1:])
    return old


@contextlib.contextmanager
def fewer_collections(gen0: int | None = None):
    """The search's thresholds inside the block, the caller's restored after it."""
    old = use_search_thresholds(gen0)
    try:
        yield
    finally:
        gc.set_threshold(*old)
