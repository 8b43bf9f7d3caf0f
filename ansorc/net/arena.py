"""Offsets of a model's intermediates in one arena, planned by liveness.

Each intermediate lives from the group that writes it to the last group that reads it (both inclusive: a
group's outputs must not overlap its own inputs). Buffers are placed largest first, each at the lowest
64-byte-aligned offset that overlaps no placed buffer whose lifetime meets its own (greedy by size, as TVM's
storage planner and TFLite's arena planner do).
"""
from __future__ import annotations

from dataclasses import dataclass

ALIGN = 64


@dataclass(frozen=True)
class Interval:
    name: str
    nbytes: int
    first: int     # index of the group that writes it
    last: int      # index of the last group that reads it (>= first)


@dataclass(frozen=True)
class ArenaPlan:
    offsets: dict          # name -> byte offset in the arena (a multiple of ALIGN)
    size: int              # arena bytes
    naive_size: int        # bytes if every intermediate had its own buffer (the sum, each rounded to ALIGN)


def _round(n: int) -> int:
    return (max(n, 1) + ALIGN - 1) // ALIGN * ALIGN


def _lowest_fit(need: int, taken: list) -> int:
    """The lowest offset where `need` bytes fit between the (start, end) ranges of `taken`."""
    at = 0
    for start, end in sorted(taken):
        if start - at >= need:
            return at
        at = max(at, end)
    return at


def plan_arena(intervals) -> ArenaPlan:
    placed: list = []   # (interval, offset)
    offsets = {}
    for iv in sorted(intervals, key=lambda v: (-v.nbytes, v.first, v.name)):
        need = _round(iv.nbytes)
        live = [(off, off + _round(o.nbytes)) for o, off in placed if o.first <= iv.last and iv.first <= o.last]
        offsets[iv.name] = _lowest_fit(need, live)
        placed.append((iv, offsets[iv.name]))
    size = max((off + _round(iv.nbytes) for iv, off in placed), default=0)
    return ArenaPlan(offsets, size, sum(_round(iv.nbytes) for iv in intervals))


def overlaps(plan: ArenaPlan, intervals) -> list:
    """Pairs of intervals alive at the same time whose bytes overlap (empty for a valid plan); for tests."""
    bad = []
    ivs = list(intervals)
    for k, a in enumerate(ivs):
        for b in ivs[k + 1:]:
            live = a.first <= b.last and b.first <= a.last
            pa, pb = plan.offsets[a.name], plan.offsets[b.name]
            if live and pa < pb + b.nbytes and pb < pa + a.nbytes:
                bad.append((a.name, b.name))
    return bad


__all__ = ["Interval", "ArenaPlan", "plan_arena", "overlaps", "ALIGN"]
