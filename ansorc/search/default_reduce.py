"""The default schedule of a data-reuse reduction whose output rows are too short for a vector (a conv to 3 output
channels) but whose innermost reduction reads contiguous runs: the vector goes along the reduction instead.

The reduction over that axis is factored out (rfactor) into S.rf, which keeps one vector accumulator per lane of
the axis across all the other reduction loops, computed per output element; S then sums the lanes once (one
horizontal fold). A read with the axis second to last and a short last axis (weights (kh, kw, ci, co), co = 3) is
read from a copy with that last axis moved to the front (CacheRead blocked by 1), so the axis is contiguous there
too. Without this the only program is scalar: T2D 32x32x64 -> 3 ran at ~4% of peak.
"""
from __future__ import annotations

from ..ir.dag import needs_multi_level_tiling
from ..ir.expr import Read, reads
from ..ir.state import ScheduleError, State
from ..ir.steps import Annotate, CacheRead, ComputeAt, Pragma, Reorder, Rfactor
from .default_loops import parallel, row_vector, schedule_root, uses
from .task import HardwareParams

RF_ROW_FLOATS = 1024   # most accumulator floats of S.rf per output row (T2D -> 3: 3 x 64)
RF_UNROLL = 64   # auto_unroll_max_step of S.rf: its short reduction loops unroll around the vector pieces


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
    if red.extent < 2 * lanes or red.extent % lanes or red.extent > lanes * hw.vector_registers // 2:
        return None      # a vector accumulator per piece of the axis: at most half the registers
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
        return _factored(state, name, red.name, last.extent * red.extent, hw)
    except ScheduleError:
        return None


def _reads_along(op, var: str) -> list:
    return [r for r in reads(op.body) if any(uses(i, var) for i in r.indices)]


def _position(r: Read, var: str) -> int | None:
    """The one subscript of r that uses var, else None (several do)."""
    hits = [k for k, i in enumerate(r.indices) if uses(i, var)]
    return hits[0] if len(hits) == 1 else None


def _factored(state: State, name: str, red: str, row_floats: int, hw: HardwareParams) -> State:
    spatial = [a.name for a in state.stage(name).op.axes]
    state = state.apply(Rfactor(name, red, len(spatial)))
    rf, lane = f"{name}.rf", f"{red}.v"
    others = [it.name for it in state.stage(rf).iters if it.kind == "R"]
    # per output row when its accumulators stay small: each input vector then feeds the row's few outputs
    k = 2 if len(spatial) > 1 and row_floats <= RF_ROW_FLOATS else 1
    state = state.apply(Reorder(rf, tuple(spatial[:-k] + others + spatial[-k:] + [lane])))
    state = state.apply(ComputeAt(rf, name, spatial[-k]))
    state = state.apply(Annotate(rf, lane, "vectorize"))
    state = state.apply(Pragma(rf, state.stage(rf).iters[0].name, "auto_unroll_max_step", RF_UNROLL))
    state = parallel(state, name, spatial[:-k], hw)
    return state.apply(Annotate(name, lane, "vectorize"))   # the lanes summed: one horizontal fold


__all__ = ["vector_reduced"]
