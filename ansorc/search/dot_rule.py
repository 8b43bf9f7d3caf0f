"""Tiling for dot-product instructions (codegen/dot.py): a sum of products of narrow types into an int32 (or
float32, bfloat16's) accumulator, `sum_k cast(a[..., k]) * cast(w[..., k, j])`, whose target offers an
instruction for its dtypes.

The weights' operand w is read from a grouped copy (CacheRead with block L, group G: [N/L][..][K/G][L][G], made
once per call by a root stage, or once for constant weights: ir/lowering/prepared.py), the reduction k is split by
G and the output columns j by L, and those two parts are the innermost loops (k.1 written out around j.1
vectorized): the shape ir/passes/dot.py turns into one instruction per G steps. Everything else is tiled as
multi-level tiling does (SSRSRS over the other axes and the outer parts of j and k), so the search still picks
tiles, compute location, parallel loops and unrolling. The rule fires only for such reductions, so the sketches
of every other program are unchanged. `dot_default_schedule` is one fixed program of the same shape.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..codegen import dot
from ..codegen.target import Target
from ..ir.program.expr import Binary, Cast, Read, Var, free_vars
from ..ir.schedule.state import State
from ..ir.schedule.steps import (Annotate, CacheRead, CacheWrite, ComputeAt, Pragma, Reorder, Split)
from .default_loops import parallel, schedule_root
from .rules import APPLY_AND_SKIP_REST, SKIP, Rule, elementwise_consumer, fuse_consumer, has_cache_write_stage

STRUCTURE = "SSRSRS"
# the default program's register tile (rows, vectors) by vector registers: accumulators plus the instruction's
# temporaries (AVX2's split maddubs: the broadcast, its two halves, the weights vector, two products)
TILES = {16: (4, 2), 32: (4, 4)}
UNROLL_STEPS = 512    # the default program's register tile (rows x vectors x G steps) is written out


@dataclass(frozen=True)
class DotPlan:
    weights: str      # the tensor read one group of G steps per output column (packed)
    j: str            # the output column axis: the vector's lanes
    k: str            # the reduce axis grouped by G
    lanes: int
    group: int


def dot_plan(target, op) -> DotPlan | None:
    """How `op` maps onto the target's dot-product instruction, or None (not such a reduction, or no
    instruction for its dtypes)."""
    body = op.body
    if op.combiner != "sum" or not op.reduce_axes or not (isinstance(body, Binary) and body.op == "*") or \
            not all(isinstance(x, Cast) and x.dtype == op.dtype for x in (body.a, body.b)):
        return None
    spatial, reduce = {a.name for a in op.axes}, {a.name for a in op.reduce_axes}
    target = Target.from_name(target)
    for bcast, w in ((body.a.value, body.b.value), (body.b.value, body.a.value)):
        if not isinstance(w, Read) or len(w.indices) < 2:
            continue
        j, k = w.indices[-1], w.indices[-2]
        if not (isinstance(j, Var) and j.name in spatial and isinstance(k, Var) and k.name in reduce) or \
                j.name in free_vars(bcast) or any({j.name, k.name} & free_vars(i) for i in w.indices[:-2]):
            continue
        shape = dot.shape(target, (bcast.dtype, w.dtype, op.dtype))
        if shape is not None:
            return DotPlan(w.name, j.name, k.name, *shape)
    return None


def dot_tile(state: State, name: str, plan: DotPlan, lengths: dict | None = None) -> tuple:
    """`name` tiled for the instruction: (state, {axis: index of its Split step}). j and k are split with the
    lanes / group as a fixed innermost part, which goes innermost (k's written out, j's vectorized); the rest as
    multi-level tiling. lengths: {axis: the undecided lengths} for a fixed program; None leaves them to the
    search (annotate.fill_tile_sizes keeps the fixed parts)."""
    lengths = lengths or {}
    n_s, n_r = STRUCTURE.count("S"), STRUCTURE.count("R")
    levels_s, levels_r, front, steps = [[] for _ in range(n_s)], [[] for _ in range(n_r)], [], {}
    for it in state.stage(name).iters:
        n = n_s if it.kind == "S" else n_r
        fixed = {plan.j: (plan.lanes,), plan.k: (plan.group,)}.get(it.name, ())
        if it.extent == 1 and not fixed:
            (front if it.kind == "S" else levels_r[-1]).append(it.name)
            continue
        steps[it.name] = len(state.steps)
        state = state.apply(Split(name, it.name, tuple(lengths.get(it.name, (None,) * (n - 1))) + fixed))
        for lv in range(n):
            (levels_s if it.kind == "S" else levels_r)[lv].append(f"{it.name}.{lv}")
    order, si, ri = list(front), 0, 0
    for c in STRUCTURE:
        order += levels_s[si] if c == "S" else levels_r[ri]
        si, ri = si + (c == "S"), ri + (c == "R")
    inner_k, inner_j = f"{plan.k}.{n_r}", f"{plan.j}.{n_s}"
    state = state.apply(Reorder(name, tuple(order + [inner_k, inner_j])))
    state = state.apply(Annotate(name, inner_k, "unroll")).apply(Annotate(name, inner_j, "vectorize"))
    return state, steps


def _prepare(state: State, name: str, plan: DotPlan) -> tuple:
    """The grouped copy of the weights, and a cache-written accumulator unless an element-wise consumer takes
    the tile: (state, the stage to tile, its consumer)."""
    state = state.apply(CacheRead(plan.weights, "local", (name,), plan.lanes, plan.group))
    consumer = elementwise_consumer(state, name)
    if consumer is None:
        state = state.apply(CacheWrite(name, "local"))
        return state, f"{name}.local", name
    return state, name, consumer


class DotProductTiling(Rule):
    """The sketches of a reduction that a dot-product instruction computes (module docstring); the tiled stage is
    computed inside its consumer at tile level 1 or 2, as MultiLevelTilingWithFusion does."""
    name = "dot-product-tiling"

    def __init__(self, levels=(1, 2)):
        self.levels = tuple(levels)

    def condition(self, task, state, i):
        st = state.stages[i]
        if st.relations or st.compute_at != "root" or st.name.endswith(".local") or \
                has_cache_write_stage(state, st.name):
            return SKIP
        plan = dot_plan(task.target, st.op)
        if plan is None or state.has_stage(f"{plan.weights}.local"):
            return SKIP
        return APPLY_AND_SKIP_REST

    def apply(self, task, state, i):
        name = state.stages[i].name
        plan = dot_plan(task.target, state.stages[i].op)
        state, tiled, consumer = _prepare(state, name, plan)
        state, steps = dot_tile(state, tiled, plan)
        nxt = state.stage_index(f"{plan.weights}.local")
        return [(fuse_consumer(state, tiled, consumer, steps, lv), nxt) for lv in self.levels]


def dot_default_schedule(state: State, name: str, target, hw) -> State | None:
    """One program of DotProductTiling's shape for root stage `name`, or None where the rule does not apply: a
    register tile of ROWS rows (the column axis' neighbour) x VECTORS vectors, k in blocks of up to 256 steps,
    the outer loops parallel, the grouped copy scheduled as a root stage."""
    st = state.stage(name)
    plan = dot_plan(target, st.op)
    if plan is None or st.compute_at != "root" or state.has_stage(f"{plan.weights}.local"):
        return None
    rows, vectors = TILES[32 if hw.vector_registers >= 32 else 16]
    state, tiled, consumer = _prepare(state, name, plan)
    axes = [a.name for a in st.op.axes]
    row = axes[axes.index(plan.j) - 1] if axes.index(plan.j) > 0 else None
    lengths = {a: (1, 1, 1) for a in axes}
    k_extent = next(r.extent for r in st.op.reduce_axes if r.name == plan.k)
    lengths.update({plan.j: (1, 1, vectors), plan.k: (_reduce_block(-(-k_extent // plan.group)),)})
    if row is not None:
        lengths[row] = (1, 1, rows)
    lengths.update({r.name: (r.extent,) for r in st.op.reduce_axes if r.name != plan.k})
    state, _ = dot_tile(state, tiled, plan, lengths)
    # the consumer's own splits by the tile (not FollowSplit): lowering then peels its last partial column tile
    # into a narrower copy, so the full tiles start on a block of the grouped copy (ir/lowering/peel.py)
    c_axes = [a.name for a in state.stage(consumer).op.axes]
    tiles = {c: math.prod(lengths[a]) * (plan.lanes if a == plan.j else 1) for a, c in zip(axes, c_axes)}
    for c in c_axes:
        state = state.apply(Split(consumer, c, (tiles[c],)))
    outer = [f"{c}.0" for c in c_axes]
    state = state.apply(Reorder(consumer, tuple(outer + [f"{c}.1" for c in c_axes])))
    state = state.apply(ComputeAt(tiled, consumer, outer[-1]))
    # rows in parallel, the column tiles serial: a fused parallel loop over them would keep the last tile's shifted
    # start in every tile's index (peel.py runs the narrower copy where the fused index is the last)
    state = parallel(state, consumer, outer[:-1] if len(outer) > 1 else outer, hw)
    state = state.apply(Pragma(tiled, state.stage(tiled).iters[0].name, "auto_unroll_max_step", UNROLL_STEPS))
    if st.op.shape[axes.index(plan.j)] % (vectors * plan.lanes) == 0:
        # (a vectorized copy-out would keep lowering from peeling the last column tile, which then shifts back
        # to a start inside a block of the grouped copy: no instruction anywhere, ir/lowering/peel.py)
        state = state.apply(Annotate(consumer, state.stage(consumer).iters[-1].name, "vectorize"))
    return schedule_root(state, f"{plan.weights}.local", hw)


def _reduce_block(steps: int) -> int:
    """Group steps per block of the reduction: the largest divisor up to 64 (no guard), else 64."""
    if steps <= 64:
        return steps
    d = max(x for x in range(1, 65) if steps % x == 0)
    return d if d >= 8 else 64


__all__ = ["DotPlan", "DotProductTiling", "dot_plan", "dot_tile", "dot_default_schedule"]
