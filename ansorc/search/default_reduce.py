"""The default schedule of a data-reuse reduction whose output rows are too short for a vector (a conv to 3 output
channels) but whose innermost reduction reads contiguous runs: the vector goes along the reduction instead.

The axis is split by a vector and its inner part factored out (rfactor) into S.rf, which keeps one vector of
partial sums per output element across all the other reduction loops (the taps, the axis' outer part); S then sums
the lanes once (one horizontal fold). S.rf is computed per register tile of outputs: the short last axis whole
(co = 3) by a few elements of the one before it (4 output columns), 12 accumulators on AVX2, so each loaded input
vector feeds every channel of the tile and each weight vector every column, where one output row's 3 x 8
accumulators would stay in memory (T2D 32x32x64 -> 3; docs/perf-notes.md, "The default program").
A read with the axis second to last and a short last axis (weights (kh, kw, ci, co), co = 3) is read from a copy
with that last axis moved to the front (CacheRead blocked by 1), so the axis is contiguous there too. Without
this the only program is scalar, far below peak.
"""
from __future__ import annotations

import math

from ..ir.program.dag import needs_multi_level_tiling
from ..ir.program.expr import Read, reads
from ..ir.schedule.state import ScheduleError, State
from ..ir.schedule.steps import Annotate, CacheRead, ComputeAt, Pragma, Reorder, Rfactor, Split
from .default_loops import PARALLEL_PER_CORE, contiguous_along, divisor, parallel, row_vector, schedule_root, uses
from .task import HardwareParams

RF_TILE_SHARE = 0.75   # the share of the vector registers that hold S.rf's tile of accumulators (12 of AVX2's 16)
RF_UNROLL = 512   # auto_unroll_max_step of S.rf: the tile's loops (12 vectors x 8 lanes = 96 steps) unroll
FULL_CHUNK = 1024   # most elements of one partial result of a full reduction's single reduce axis
FULL_COMBINERS = ("sum", "max", "min")


def vector_reduced(state: State, name: str, hw: HardwareParams) -> State | None:
    """`name` scheduled with a vector reduction (module docstring), or None when it does not qualify."""
    st = state.stage(name)
    op = st.op
    if op.combiner != "sum" or not needs_multi_level_tiling(op) or not op.axes or st.relations:
        return None
    last = op.axes[-1]
    if row_vector(op, last.name, last.extent, hw):
        return None          # the output rows vectorize: the usual schedules apply
    red = op.reduce_axes[-1]
    lanes = hw.lanes(op.dtype)
    if red.extent < 2 * lanes or red.extent % lanes:
        return None
    copies = set()
    for r in _reads_along(op, red.name):
        pos = _position(r, red.name)
        if pos == len(r.indices) - 2 and not uses(r.indices[-1], red.name) and r.tensor is not None:
            copies.add(r.name)
        elif pos != len(r.indices) - 1:
            return None
    try:
        for tensor in sorted(copies):
            state = state.apply(CacheRead(tensor, "local", (name,), 1))
            state = schedule_root(state, f"{tensor}.local", hw)
        return _factored(state, name, red.name, lanes, hw)
    except ScheduleError:
        return None


def _reads_along(op, var: str) -> list:
    return [r for r in reads(op.body) if any(uses(i, var) for i in r.indices)]


def _position(r: Read, var: str) -> int | None:
    """The one subscript of r that uses var, else None (several do)."""
    hits = [k for k, i in enumerate(r.indices) if uses(i, var)]
    return hits[0] if len(hits) == 1 else None


def _factored(state: State, name: str, red: str, lanes: int, hw: HardwareParams) -> State:
    spatial = [a.name for a in state.stage(name).op.axes]
    state = state.apply(Split(name, red, (lanes,)))
    state = state.apply(Rfactor(name, f"{red}.1", len(spatial)))
    rf, lane = f"{name}.rf", f"{red}.1.v"
    others = [it.name for it in state.stage(rf).iters if it.kind == "R"]
    state = state.apply(Reorder(rf, tuple(spatial[:-2] + others + spatial[-2:] + [lane])))
    state, outer = _tiled(state, name, spatial, lane, int(hw.vector_registers * RF_TILE_SHARE))
    state = state.apply(ComputeAt(rf, name, outer[-1]))
    state = state.apply(Annotate(rf, lane, "vectorize"))
    state = state.apply(Pragma(rf, state.stage(rf).iters[0].name, "auto_unroll_max_step", RF_UNROLL))
    state = parallel(state, name, outer, hw)
    return state.apply(Annotate(name, lane, "vectorize"))   # the lanes summed: one horizontal fold


def _tiled(state: State, name: str, spatial: list, lane: str, budget: int) -> tuple:
    """(state, S's loops outside the tile): the last spatial axis split by its largest divisor within `budget`
    accumulators, the one before it by the largest within what is left, each tile part ordered inside."""
    outer, inner, left = list(spatial[:-2]), [], budget
    for axis in spatial[-2:][::-1]:
        extent = state.stage(name).iter(axis).extent
        f = divisor(extent, 1, left) or 1
        left //= f
        if f == extent:
            inner.insert(0, axis)
            continue
        state = state.apply(Split(name, axis, (f,)))
        outer.insert(len(spatial[:-2]), f"{axis}.0")
        inner.insert(0, f"{axis}.1")
    state = state.apply(Reorder(name, tuple(outer + inner + [lane])))
    return state, outer or [inner[0]]


def full_reduced(state: State, name: str, hw: HardwareParams) -> State | None:
    """`name`, a reduction to fewer outputs than the cores need in parallel iterations (a norm of a whole matrix:
    one value), with its outermost reduce axis factored out (rfactor; a single reduce axis split in chunks
    first): S.rf's partial results (one per row) run in parallel, each a vectorized row reduction when the
    innermost reduce axis reads contiguously, and S folds them in one vectorized loop. Otherwise the whole
    reduction is one scalar chain on one core. Default NRM is on a par with the 300-trial best, which has this
    shape (docs/perf-notes.md)."""
    st = state.stage(name)
    op = st.op
    need = PARALLEL_PER_CORE * hw.num_cores
    outputs = math.prod(a.extent for a in op.axes)
    if op.combiner not in FULL_COMBINERS or st.relations or not op.reduce_axes or outputs >= need:
        return None
    lanes = hw.lanes(op.dtype)
    red = [a.name for a in op.reduce_axes]
    try:
        if len(red) == 1:
            extent = op.reduce_axes[0].extent
            chunk = divisor(extent, 4 * lanes, min(FULL_CHUNK, extent * outputs // need))
            if chunk is None:
                return None
            state = state.apply(Split(name, red[0], (chunk,)))
            red = [f"{red[0]}.0", f"{red[0]}.1"]
        if outputs * state.stage(name).iter(red[0]).extent < need:
            return None
        state = state.apply(Rfactor(name, red[0], len(op.axes)))
        rf, fold = f"{name}.rf", f"{red[0]}.v"
        rows = [a.name for a in state.stage(rf).op.axes]
        state = parallel(state, rf, rows, hw)
        inner = state.stage(rf).iters[-1]
        if inner.kind == "R" and inner.extent >= 2 * lanes and contiguous_along(state.stage(rf).op, inner.name):
            state = state.apply(Annotate(rf, inner.name, "vectorize"))
        return state.apply(Annotate(name, fold, "vectorize"))
    except ScheduleError:
        return None


__all__ = ["full_reduced", "vector_reduced"]
