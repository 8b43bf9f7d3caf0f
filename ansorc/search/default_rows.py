"""The default schedule of a chain of row-wise stages (a softmax: row max, exp, row sum, divide): every producer
is computed inside the output's parallel row loop, so one row's intermediates stay in L1 instead of a round trip
through memory between four parallel loops, and each row reduction keeps ROW_ACCUMULATORS vector accumulators
(rfactor over a split of that many vectors), folded once per row. Where the rows come from memory
(annotate.prefetch_pays), each row's loads prefetch the next row's and the output rows are written with streaming
stores.

A chain qualifies when the output's outermost axis is its parallel loop, unsplit, and every producer upstream
(compute stages, up to the placeholders; inlined ones are read through) is read only inside the chain, row by
row: its first subscript in every read is the reader's first axis; the root ones' rows hold at most ROW_BYTES.
"""
from __future__ import annotations

import math

from ..ir.program.dtypes import itemsize
from ..ir.program.expr import Var, reads
from ..ir.schedule.state import ScheduleError, State
from ..ir.schedule.steps import Annotate, ComputeAt, Fuse, Pragma, Reorder, Rfactor, Split
from .annotate import prefetch_pays
from .default_loops import row_vector, schedule_root
from .task import HardwareParams

ROW_BYTES = 16 << 10      # the most bytes of one row's intermediates (all producers): half of a 32 KB L1
ROW_ACCUMULATORS = 4      # vector accumulators of a row reduction: an add's latency covered on two pipes


def row_fused(state: State, name: str, hw: HardwareParams) -> tuple | None:
    """(state, names of the stages scheduled) with the chain ending in output `name` row-fused, or None. A row
    is one point of the output's leading axes (all but the last), fused into one parallel loop."""
    chain = _chain(state, name)
    if not chain:
        return None
    try:
        out, row = _rows_outside(state, name, hw)
        if out is None:
            return None
        for producer in chain:
            out = _fused_producer(out, producer, name, row, hw)
            if out is None:
                return None
        if prefetch_pays(out, name):   # rows from memory: the next row's loads overlap this row's compute
            out = out.apply(Pragma(name, row, "prefetch", 1))
            if not out.stage(name).op.combiner:   # and a row written goes to memory without being read first
                out = out.apply(Pragma(name, row, "store_stream", 1))
    except ScheduleError:
        return None
    return out, set(chain) | {name} | {f"{p}.rf" for p in chain}


def _rows_outside(state: State, name: str, hw: HardwareParams) -> tuple:
    """(state, the row loop) with `name` scheduled at root and its leading axes fused into the outermost,
    parallel, loop; (None, None) when the root schedule splits or fuses them otherwise."""
    axes = [a.name for a in state.stage(name).op.axes]
    lead = axes[:-1]
    if len(lead) > 1:
        state = state.apply(Fuse(name, tuple(lead)))
    row = "@".join(lead)
    out = schedule_root(state, name, hw)
    if out.stage(name).iters[0].name != row:
        return None, None   # the row loop was split or fused with others: no single row to compute at
    return out, row


def _chain(state: State, name: str) -> list:
    """The compute stages upstream of `name`, in stage order, if they qualify (module docstring), else []."""
    by_name = {st.name: st for st in state.stages}
    if not state.is_output(name) or by_name[name].compute_at != "root" or len(by_name[name].op.axes) < 2:
        return []
    chain, todo = set(), [name]
    while todo:
        for r in reads(by_name[todo.pop()].op.body):
            st = by_name.get(r.name)
            if st is not None and st.name not in chain and getattr(st.op, "axes", None) is not None:
                chain.add(st.name)
                todo.append(st.name)
    members = chain | {name}
    lead = [a.extent for a in by_name[name].op.axes[:-1]]
    total = 0
    for p in chain:
        st = by_name[p]
        if state.is_output(p) or [a.extent for a in st.op.axes[:len(lead)]] != lead or \
                set(state.readers(p)) - members or \
                not all(_row_read(by_name[c].op, p, len(lead)) for c in state.readers(p)):
            return []
        if st.compute_at == "inline":
            continue    # read through its consumers' bodies, which the checks above cover
        if st.compute_at != "root" or st.relations:
            return []
        total += itemsize(st.op.dtype) * math.prod(a.extent for a in st.op.axes[len(lead):])
    scheduled = [st.name for st in state.stages if st.name in chain and st.compute_at == "root"]
    return scheduled if scheduled and total <= ROW_BYTES else []


def _row_read(op, producer: str, lead: int) -> bool:
    """Every read of `producer` in op takes op's `lead` leading axes as its leading subscripts (the same row)."""
    first = [a.var for a in op.axes[:lead]]
    return all(len(r.indices) >= lead and all(isinstance(i, Var) and i == v for i, v in zip(r.indices, first))
               for r in reads(op.body) if r.name == producer)


def _fused_producer(state: State, p: str, target: str, row: str, hw: HardwareParams) -> State | None:
    op = state.stage(p).op
    lead = len(row.split("@"))
    if op.combiner:
        return _fused_reduction(state, p, target, row, hw) if len(op.axes) == lead else None
    state = _fuse_lead(state, p, lead).apply(ComputeAt(p, target, row))
    last, lanes = op.axes[-1], hw.lanes(op.dtype)
    if len(op.axes) <= lead:
        return state
    piece = next((v * lanes for v in (ROW_ACCUMULATORS, 2, 1) if last.extent % (v * lanes) == 0), None) or \
        row_vector(op, last.name, last.extent, hw)
    if piece is None:
        return state
    if piece < last.extent:
        state = state.apply(Split(p, last.name, (piece,)))
        return state.apply(Annotate(p, f"{last.name}.1", "vectorize"))
    return state.apply(Annotate(p, last.name, "vectorize"))


def _fuse_lead(state: State, name: str, lead: int) -> State:
    axes = tuple(a.name for a in state.stage(name).op.axes[:lead])
    return state.apply(Fuse(name, axes)) if lead > 1 else state


def _fused_reduction(state: State, p: str, target: str, row: str, hw: HardwareParams) -> State | None:
    """A row reduction inside the row loop, factored into vector accumulators where its row holds two steps."""
    op = state.stage(p).op
    if len(op.reduce_axes) != 1:
        return None
    lead, lanes, red = len(op.axes), hw.lanes(op.dtype), op.reduce_axes[0]
    # the most accumulators that still leave two steps of the row: a row of 4 vectors takes 2 x 2, not a
    # scalar loop (AVX-512's 16 lanes make 64-wide rows that short)
    piece = next((v * lanes for v in (ROW_ACCUMULATORS, 2, 1)
                  if red.extent % (v * lanes) == 0 and red.extent >= 2 * v * lanes), None)
    if piece is None and red.extent >= 2 * ROW_ACCUMULATORS * lanes:
        piece = ROW_ACCUMULATORS * lanes   # a guarded last piece: its reads become masked loads (197 keys)
    if piece is None:   # a scalar chain: fused rows of several axes measured slower than separate loops
        return state.apply(ComputeAt(p, target, row)) if lead == 1 else None
    state = state.apply(Split(p, red.name, (piece,)))
    state = state.apply(Rfactor(p, f"{red.name}.1", lead))
    rf, lane = f"{p}.rf", f"{red.name}.1.v"
    state = _fuse_lead(state, rf, lead)
    state = state.apply(Reorder(rf, (row, f"{red.name}.0", lane)))
    state = state.apply(ComputeAt(rf, target, row))
    state = state.apply(Annotate(rf, lane, "vectorize"))
    state = _fuse_lead(state, p, lead).apply(ComputeAt(p, target, row))
    return state.apply(Annotate(p, lane, "vectorize"))


__all__ = ["row_fused", "ROW_BYTES"]
