"""Sketch derivation rules (CPU). A rule has a condition (SKIP / APPLY / APPLY_AND_SKIP_REST) and an
application that returns new (state, next stage index) pairs. APPLY keeps trying later rules on the
original state, which is how one stage branches into several sketches."""
from __future__ import annotations

from ..ir.program.dag import (is_elementwise_match, is_strictly_inlinable, needs_multi_level_tiling, needs_rfactor,
                              transposed_axes)
from ..ir.schedule.inline_cost import inlining_bloats
from ..ir.schedule.state import State
from ..ir.schedule.steps import CacheWrite, ComputeAt, ComputeInline, FollowSplit, Fuse, Reorder, Rfactor, Split

SKIP, APPLY, APPLY_AND_SKIP_REST = 0, 1, 2


# ----------------------------------------------------------------------------- state queries

def consumers(state: State, name: str) -> list:
    """Stages reading `name`, looking through inlined stages."""
    out = []
    for r in state.readers(name):
        if state.stage(r).compute_at == "inline":
            out += [c for c in consumers(state, r) if c not in out]
        elif r not in out:
            out.append(r)
    return out


def elementwise_consumer(state: State, name: str) -> str | None:
    """The single consumer that reads `name` element-wise (through inlined element-wise stages), if any."""
    cons = consumers(state, name)
    if len(cons) != 1:
        return None
    op = state.stage(name).op
    target = state.stage(cons[0]).op
    hop = op
    while True:  # walk the chain of inlined stages between op and target
        readers = state.readers(hop.name)
        if len(readers) != 1:
            return None
        nxt = state.stage(readers[0]).op
        if not is_elementwise_match(hop, nxt) or (op.combiner and nxt.combiner):
            return None
        if nxt is target:
            return target.name
        hop = nxt


def has_cache_write_stage(state: State, name: str) -> bool:
    return state.has_stage(name + ".local")


# ----------------------------------------------------------------------------- tiling helpers

def multi_level_tile(state: State, name: str, structure: str) -> tuple:
    """Split every spatial iterator into #S parts and every reduce iterator into #R parts (lengths undecided)
    and order the parts level by level. Returns (state, {axis: index of its Split step})."""
    n_s, n_r = structure.count("S"), structure.count("R")
    stage = state.stage(name)
    split_steps, levels_s, levels_r, front = {}, [[] for _ in range(n_s)], [[] for _ in range(n_r)], []
    for it in stage.iters:
        n = n_s if it.kind == "S" else n_r
        if it.extent == 1 or n == 1:
            (front if it.kind == "S" else levels_r[-1]).append(it.name)
            continue
        split_steps[it.name] = len(state.steps)
        state = state.apply(Split(name, it.name, (None,) * (n - 1)))
        for lv in range(n):
            (levels_s if it.kind == "S" else levels_r)[lv].append(f"{it.name}.{lv}")
    order, si, ri = list(front), 0, 0
    for c in structure:
        if c == "S":
            order += levels_s[si]
            si += 1
        else:
            order += levels_r[ri]
            ri += 1
    return state.apply(Reorder(name, tuple(order))), split_steps


def tile_transpose(state: State, name: str, axes: tuple, lengths: tuple) -> tuple:
    """(state, its outer loops): stage `name`'s axes (w, r) (ir.dag.transposed_axes) split by `lengths` (None:
    left to annotation) and ordered ..., r.0, w.0, r.1, w.1."""
    (w, r), (fw, fr) = axes, lengths
    outer = [it.name for it in state.stage(name).iters if it.name not in (w, r)] + [f"{r}.0", f"{w}.0"]
    state = state.apply(Split(name, w, (fw,))).apply(Split(name, r, (fr,)))
    return state.apply(Reorder(name, tuple(outer + [f"{r}.1", f"{w}.1"]))), outer


def fuse_consumer(state: State, producer: str, consumer: str, split_steps: dict, level: int) -> State:
    """The consumer follows the producer's first `level` spatial tile levels; the producer is computed at
    the consumer's innermost iterator of that level."""
    p_axes = [a.name for a in state.stage(producer).op.axes]
    c_axes = [a.name for a in state.stage(consumer).op.axes]
    front, levels = [], [[] for _ in range(level + 1)]
    for pa, ca in zip(p_axes, c_axes):
        if pa not in split_steps:
            front.append(ca)
            continue
        state = state.apply(FollowSplit(consumer, ca, split_steps[pa], level))
        for lv in range(level + 1):
            levels[lv].append(f"{ca}.{lv}")
    order = front + [n for lv in levels for n in lv]
    state = state.apply(Reorder(consumer, tuple(order)))
    anchor = (levels[level - 1] or front)[-1] if (levels[level - 1] or front) else None
    if anchor is None:
        return state
    return state.apply(ComputeAt(producer, consumer, anchor))


# ----------------------------------------------------------------------------- the rules

class Rule:
    name = "rule"

    def condition(self, task, state: State, i: int) -> int:
        raise NotImplementedError

    def apply(self, task, state: State, i: int) -> list:
        raise NotImplementedError


class AlwaysInline(Rule):
    name = "always-inline"

    def condition(self, task, state, i):
        st = state.stages[i]
        if state.is_output(st.name) or st.op.combiner or st.compute_at == "inline" or st.name.endswith(".local"):
            return SKIP
        if not is_strictly_inlinable(st.op) or not consumers(state, st.name) or inlining_bloats(state, st.name):
            return SKIP
        return APPLY_AND_SKIP_REST

    def apply(self, task, state, i):
        return [(state.apply(ComputeInline(state.stages[i].name)), i - 1)]


class AddRfactor(Rule):
    name = "add-rfactor"

    def condition(self, task, state, i):
        st = state.stages[i]
        if st.relations or has_cache_write_stage(state, st.name) or st.name.endswith((".rf", ".local")):
            return SKIP
        return APPLY if needs_rfactor(st.op, task.hw.num_cores) else SKIP

    def apply(self, task, state, i):
        st = state.stages[i]
        red = [it.name for it in st.iters if it.kind == "R"]
        s = state
        if len(red) > 1:
            s = s.apply(Fuse(st.name, tuple(red)))
        fused = "@".join(red)
        s = s.apply(Split(st.name, fused, (None,)))
        pos = len(st.op.axes)
        outer = s.apply(Rfactor(st.name, f"{fused}.0", pos))
        inner = s.apply(Rfactor(st.name, f"{fused}.1", pos))
        rf = inner.stage(f"{st.name}.rf")
        order = [it.name for it in rf.iters if it.name != f"{fused}.1.v"] + [f"{fused}.1.v"]
        inner = inner.apply(Reorder(rf.name, tuple(order)))
        return [(outer, i - 1), (inner, i - 1)]


class AddCacheWrite(Rule):
    name = "add-cache-write"

    def condition(self, task, state, i):
        st = state.stages[i]
        if st.name.endswith(".local") or has_cache_write_stage(state, st.name) or st.relations:
            return SKIP
        if needs_multi_level_tiling(st.op) and elementwise_consumer(state, st.name) is None:
            return APPLY
        return SKIP

    def apply(self, task, state, i):
        return [(state.apply(CacheWrite(state.stages[i].name, "local")), i)]


class MultiLevelTilingWithFusion(Rule):
    name = "multi-level-tiling-with-fusion"

    def __init__(self, structure: str = "SSRSRS", levels=(1, 2)):
        self.structure, self.levels = structure, tuple(levels)

    def condition(self, task, state, i):
        st = state.stages[i]
        if st.relations or not needs_multi_level_tiling(st.op) or elementwise_consumer(state, st.name) is None:
            return SKIP
        return APPLY_AND_SKIP_REST if st.name.endswith(".local") else APPLY

    def apply(self, task, state, i):
        name = state.stages[i].name
        consumer = elementwise_consumer(state, name)
        tiled, split_steps = multi_level_tile(state, name, self.structure)
        return [(fuse_consumer(tiled, name, consumer, split_steps, lv), i - 1) for lv in self.levels]


class MultiLevelTiling(Rule):
    name = "multi-level-tiling"

    def __init__(self, structure: str = "SSRSRS"):
        self.structure = structure

    def condition(self, task, state, i):
        st = state.stages[i]
        return APPLY_AND_SKIP_REST if not st.relations and needs_multi_level_tiling(st.op) else SKIP

    def apply(self, task, state, i):
        return [(multi_level_tile(state, state.stages[i].name, self.structure)[0], i - 1)]


class TransposeTiling(Rule):
    """A copy across a transposition (ir.dag.transposed_axes) tiled by both axes, r.0 w.0 r.1 w.1 (lengths left
    to annotation): otherwise the vector along w gathers from as many input rows as the loop is long. APPLY,
    so the untiled stage stays a sketch too."""
    name = "transpose-tiling"

    def condition(self, task, state, i):
        st = state.stages[i]
        if st.relations or st.compute_at != "root" or st.name.endswith(".local"):
            return SKIP
        return APPLY if transposed_axes(st.op) is not None else SKIP

    def apply(self, task, state, i):
        name = state.stages[i].name
        return [(tile_transpose(state, name, transposed_axes(state.stages[i].op), (None, None))[0], i - 1)]


class SkipStage(Rule):
    name = "skip"

    def condition(self, task, state, i):
        return APPLY

    def apply(self, task, state, i):
        return [(state, i - 1)]


def default_cpu_rules(structure: str = "SSRSRS") -> list:
    from .dot_rule import DotProductTiling   # dot_rule builds on this module's helpers
    return [AlwaysInline(), DotProductTiling(), AddRfactor(), AddCacheWrite(), MultiLevelTilingWithFusion(structure),
            MultiLevelTiling(structure), TransposeTiling(), SkipStage()]


__all__ = ["Rule", "SKIP", "APPLY", "APPLY_AND_SKIP_REST", "default_cpu_rules", "consumers", "elementwise_consumer",
           "tile_transpose"]
