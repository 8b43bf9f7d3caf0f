"""lower_peeled: a pure stage's last partial tile computed by a copy of the program lowered with that tile narrower,
instead of shifted back over the tile before it.

A split of an axis of E points into tiles of f points, E % f = r != 0, leaves a last tile that overruns the axis.
Lowering moves it back inside (relations.axis_values, shift_inward): it recomputes f - r points of the tile
before, and everything attached inside the tile with them. DIL's 224 stem has 109 output columns (prime) in
6-column register tiles, 114 computed (4.6%, 5 of 6 columns in the last tile). Here the program is lowered a second
time with that split's last tile cut to the r points (the Split step that sets it, the stage's own or the one its
FollowSplit follows, gets narrow_lengths: inner tiles kept where r fills them, so a register tile does not grow),
and that lowering's last tile takes the place of the shifted one: the loop over the tiles runs n - 1 times and the
copy follows it; a parallel loop, one carrying the stage's unroll pragma, or a fused loop whose innermost part is
the tile index (TBG's b@h@i.0) keeps its iterations and runs the copy where the tile index is the last. The full
tiles' indices and conditions are simplified alike under their narrower bound (a test that still read the shifted
start would no longer match the index it bounds, for the bounds checker). The copy's loop variables and local
buffers are renamed.

Applies to the MAX_PEELS splits that recompute the most, each of a root stage that computes no reduction, on no
GPU loop, whose tile loop is run serially or in parallel, where every stage whose split follows the changed step
is that stage or computed inside the tile, where a vectorized innermost loop keeps whole vectors, and where the
copy saves at least MIN_SAVED of the axis. Any other program, or a replay that fails, is left as it was. The cost
model's features read the program before this (lower(passes=False)). What it gains: docs/perf-notes.md.
"""
from __future__ import annotations

import math
from dataclasses import replace

from ..program.expr import Binary, Compare, Const, Read, Var, substitute, transform
from ..program.names import fresh_name
from ..passes.basic import map_stmt_exprs
from ..schedule.relations import infer_extents
from ..program.simplify import simplify
from ..schedule.state import FuseRel, ScheduleError, SplitRel, State, replay
from .stmt import THREAD_KINDS, Allocate, For, IfThenElse, Seq, Stmt, Store, seq, walk_stmt
from ..passes.vector import identifiers, stmt_kids, with_kids

MAX_PEELS = 2    # splits peeled per program (each doubles the lowerings)
VECTOR_LANES = 4  # a narrowed vectorized loop keeps a multiple of this many lanes
# the least share of the axis a copy must save: below it the copy's own tail tile costs as much (GMM 512x32x512,
# 4 of 516 rows: 0.90 / 1.02 / 0.98 of the shifted program's time)
MIN_SAVED = 0.01


def peel_candidates(state: State) -> list:
    """(stage, the split's outer iterator, the loop that runs it, index of the Split step to narrow, its lengths for
    the last tile, share of the axis the peel saves recomputing) of every split whose shifted last tile the peel
    fits. The loop is the outer
    iterator itself, or the fused iterator it is the innermost part of (TBG's b@h@i.0)."""
    out = []
    for st in state.stages:
        if st.compute_at != "root" or st.op.combiner is not None or \
                any(it.annotation in THREAD_KINDS for it in st.iters):
            continue
        ext, leaves = infer_extents(st), {it.name: it for it in st.iters}
        fused_in = {rel.parents[-1]: rel.child for rel in st.relations if isinstance(rel, FuseRel)}
        for rel in st.relations:
            if not isinstance(rel, SplitRel):
                continue
            outer = rel.children[0]
            loop = outer if outer in leaves else fused_in.get(outer)
            if loop not in leaves or leaves[loop].annotation not in ("", "parallel"):
                continue
            span, size, tiles = math.prod(ext[c] for c in rel.children[1:]), ext[rel.parent], ext[outer]
            if not tiles * span > size >= span:
                continue
            src = _source_split(state, st.name, rel.parent)
            if src is None:
                continue
            tail = narrow_lengths(state.steps[src].lengths, size - (tiles - 1) * span)
            if (span - math.prod(tail)) / size >= MIN_SAVED and _followers_inside(state, src, st.name, loop) and \
                    _vectors_kept(state, src, tail[-1]):
                out.append((st.name, outer, loop, src, tail, (span - math.prod(tail)) / size))
    return out


def peel_keys(state: State, candidates: list | None = None) -> list:
    """(stage, outer iterator) of the MAX_PEELS splits recomputing the largest shares, outermost loop first."""
    candidates = peel_candidates(state) if candidates is None else candidates
    best = sorted(candidates, key=lambda c: -c[5])[:MAX_PEELS]
    order = {st.name: k for k, st in enumerate(state.stages)}
    return [c[:2] for c in sorted(best, key=lambda c: (order[c[0]], state.stage(c[0]).iter_index(c[2])))]


def _source_split(state: State, stage: str, axis: str):
    """Index of the Split step that sets the split of stage.axis: its own, or the one its FollowSplit follows."""
    from ..schedule.steps import FollowSplit, Split   # steps.py imports the modules this one does
    for i in reversed(range(len(state.steps))):
        s = state.steps[i]
        if getattr(s, "stage", None) == stage and getattr(s, "iter", None) == axis:
            if isinstance(s, Split):
                return i
            if isinstance(s, FollowSplit) and isinstance(state.steps[s.src_step], Split):
                return s.src_step
            return None
    return None


def _sharing(state: State, src: int) -> list:
    """(stage, axis) of every split that Split step `src` sets: its own and those that follow it."""
    from ..schedule.steps import FollowFusedSplit, FollowSplit
    return [(state.steps[src].stage, state.steps[src].iter)] + [
        (s.stage, s.iter) for s in state.steps if (isinstance(s, FollowSplit) and s.src_step == src) or
        (isinstance(s, FollowFusedSplit) and src in s.src_steps)]


def _followers_inside(state: State, src: int, stage: str, loop: str) -> bool:
    """Whether every stage whose split is set by step `src` is `stage` or computed inside its loop `loop`."""
    pos = state.stage(stage).iter_index(loop)

    def inside(name: str) -> bool:
        st = state.stage(name)
        while st.compute_at == "attached":
            target, it = st.attach
            if target == stage:
                return state.stage(stage).iter_index(it) >= pos
            st = state.stage(target)
        return False
    return all(n == stage or inside(n) for n, _ in _sharing(state, src))


def _vectors_kept(state: State, src: int, r: int) -> bool:
    """Whether the narrowed split leaves whole vectors: where its innermost loop is vectorized, its new length r
    must be a multiple of 4 lanes (a tail of 3 would run scalar where the shifted tile recomputes at full speed)."""
    for name, axis in _sharing(state, src):
        rel = next((x for x in state.stage(name).relations if isinstance(x, SplitRel) and x.parent == axis), None)
        leaf = next((it for it in state.stage(name).iters if rel and it.name == rel.children[-1]), None)
        if leaf is not None and leaf.annotation == "vectorize" and r % VECTOR_LANES:
            return False
    return True


def narrow_lengths(lengths: tuple, r: int) -> tuple:
    """A split's lengths for a last tile of r points. Where r fills whole inner tiles or more, the outermost length
    is cut to what covers r and the inner levels (a register tile inside a cache tile) are kept: the copy then
    recomputes less than one inner tile (GMM 1024's default program: 1024 rows in 108-row blocks of 6-row tiles leave
    52; (18, 6) -> (9, 6), not a 52-row register tile). Where r fits in one inner tile, the outer level is 1 and the
    inner ones are cut the same way: (2, 6) with 4 left -> (1, 4)."""
    if len(lengths) == 1:
        return (r,)
    inner = math.prod(lengths[1:])
    if r >= inner:
        return (-(-r // inner),) + tuple(lengths[1:])
    return (1,) + narrow_lengths(tuple(lengths[1:]), r)


def narrowed(state: State, src: int, lengths: tuple) -> State:
    """The same program with Split step `src` given `lengths`."""
    steps = list(state.steps)
    steps[src] = replace(steps[src], lengths=tuple(lengths))
    return replay(state.dag, steps)


def lower_peeled(state: State, lower_once, keys: list | None = None, candidates: list | None = None,
                 enabled: bool = True) -> tuple:
    """lower_once(state) -> (func, loop_var(stage, iterator) -> its loop variable), with the shifted last tiles of
    the splits `keys` (peel_keys by default) replaced by narrower copies. The outer split's copy is taken from a
    lowering with that split narrowed and the inner ones peeled too: 2^k lowerings for k splits. `candidates`:
    peel_candidates(state), when the caller has them. enabled=False: lower_once(state), nothing peeled."""
    if (keys is not None and not keys) or not enabled:
        return lower_once(state)
    if candidates is None:
        candidates = peel_candidates(state)
    keys = peel_keys(state, candidates) if keys is None else keys
    if not keys:
        return lower_once(state)
    main = lower_peeled(state, lower_once, keys[1:], candidates)
    cand = next((c for c in candidates if c[:2] == keys[0]), None)
    if cand is None:
        return main
    stage, _, loop_iter, src, lengths, _ = cand
    try:
        func2, loop_var2 = lower_peeled(narrowed(state, src, lengths), lower_once, keys[1:])
    except ScheduleError:
        return main
    func, loop_var = main
    loop, other = _loop(func.body, loop_var(stage, loop_iter)), _loop(func2.body, loop_var2(stage, loop_iter))
    if loop is None or other is None:
        return main
    tiles = infer_extents(state.stage(stage))[keys[0][1]]
    return replace(func, body=_replaced(func.body, loop, _with_copy(loop, other, tiles, func))), loop_var


def _with_copy(main: For, other: For, tiles: int, func) -> Stmt:
    """main's loop without its last tile, and other's last tile in its place. `tiles`: main's tiles of the split;
    a fused loop runs main.extent / tiles iterations per tile index (the innermost part of its index)."""
    per = main.extent // tiles
    n, var, m = tiles, main.var, other.extent // per
    at = Const(m - 1, "int32") if per == 1 else \
        Binary("+", Binary("*", Binary("//", Var(var), Const(n, "int32"), "int32"), Const(m, "int32"), "int32"),
               Const(m - 1, "int32"), "int32")
    tail = map_stmt_exprs(other.body, lambda e, b: simplify(substitute(e, {other.var: at}), b), {})
    tail = _renamed(tail, identifiers(func))
    # the full tiles' starts need no min(): folded in indices and conditions alike (a condition that still read
    # min() would no longer match the index it bounds)
    full = main.body if per > 1 else \
        map_stmt_exprs(main.body, lambda e, b: simplify(e, {**b, var: (0, n - 2)}), {})
    if per == 1 and main.kind != "parallel" and not main.auto_unroll:
        return seq(replace(main, extent=n - 1, body=full), tail)
    tile = Var(var) if per == 1 else Binary("%", Var(var), Const(n, "int32"), "int32")
    return replace(main, body=seq(IfThenElse(Compare("<", tile, Const(n - 1, "int32")), full),
                                  IfThenElse(Compare("==", tile, Const(n - 1, "int32")), tail)))


def _loop(s: Stmt, var: str):
    return next((x for x in walk_stmt(s) if isinstance(x, For) and x.var == var), None)


def _replaced(s: Stmt, old: Stmt, new: Stmt) -> Stmt:
    return new if s is old else with_kids(s, tuple(_replaced(k, old, new) for k in stmt_kids(s)))


def _renamed(s: Stmt, taken: set) -> Stmt:
    """s with its loop variables and the buffers it allocates given names not in `taken`."""
    inner = [x for x in walk_stmt(s) if isinstance(x, (For, Allocate))]
    names = {}
    for x in inner:
        old = x.var if isinstance(x, For) else x.buffer.name
        names[old] = fresh_name(old + "_tail", taken)

    def expr(e):
        return transform(e, lambda n: replace(n, name=names[n.name])
                         if isinstance(n, (Var, Read)) and n.name in names else None)

    def visit(x: Stmt) -> Stmt:
        if isinstance(x, For):
            return replace(x, var=names[x.var], body=visit(x.body))
        if isinstance(x, Allocate):
            return Allocate(replace(x.buffer, name=names[x.buffer.name]), visit(x.body))
        if isinstance(x, Seq):
            return seq(*[visit(c) for c in x.stmts])
        if isinstance(x, IfThenElse):
            return replace(x, cond=expr(x.cond), then=visit(x.then))
        if isinstance(x, Store):
            return Store(names.get(x.buffer, x.buffer), tuple(expr(i) for i in x.indices), expr(x.value))
        return x
    return visit(s)


__all__ = ["lower_peeled", "peel_candidates", "peel_keys", "narrowed", "narrow_lengths", "MAX_PEELS",
           "MIN_SAVED"]
