"""Reduction steps that cannot change the result: the conditions outside which a step adds the identity.

A convolution over a zero-padded input multiplies the padding by the weights: `acc += pad[h + rh] * w[rh]`
where `pad = select(in_bounds, x, 0)`. Outside `in_bounds` the step adds 0 and can be skipped, as oneDNN does
(a 3x3 conv on 14x14 spends 13% of its taps on padding, a 7x7 one 25%). Lowering wraps the loops of a
reduction in `if (cond)` where cond depends only on loops outside them (ir/lowering/lower.py), so whole inner loops are
skipped and no branch lands in the register tile.

The conditions are found in the update's value, through products (sums of max-plus with an infinite
identity), casts, `select(c, v, identity)` (padding, a reduction's `where`) and reads of materialized stages
whose body is such a select. Only pure index conditions qualify (no reads, calls or data-dependent indices):
they are evaluated where the guards of split remainders do not yet hold. IEEE caveat, shared with oneDNN:
a skipped step would have added 0 * w, which is NaN when w is inf or NaN (and -inf + inf is NaN in a max-plus).
"""
from __future__ import annotations

import math

import numpy as np

from ..program.expr import (Binary, Call, Cast, CheckedIndex, Compare, Const, Expr, Logic, Read, Select, Var, free_vars,
                            conjuncts, substitute, transform, walk)
from ..program.simplify import _from_linear, _linear
from ..lowering.stmt import THREAD_KINDS, Barrier, For, IfThenElse, ThreadReduce, store_executions, walk_stmt
from .vector import stmt_kids

INF = float("inf")
MAX_CHASE = 4   # reads followed through materialized stages (pad -> cache copy -> ...)
# A guard is placed only around at least this many statement executions (a vector loop counts once): its test
# then costs about 1% of the work it can skip. Around 6-36 vector FMAs (a depthwise conv's 3x3 taps, a small
# transposed conv's phase) the test made the default programs slower (docs/perf-notes.md, "Code generation").
MIN_GUARDED_STEPS = 256
# A copy of a reduction's loops without its index selects (versioning) needs less: its test costs one branch and
# saves a compare and a blend per step. The copy doubles the code of those loops.
MIN_VERSIONED_STEPS = 32
UNEVEN = 1.1         # parallel ranges differing this much in skipped work are dealt out round-robin
MAX_POINTS = 1 << 16  # the most values of a guard's loops evaluated to tell


def _is(e: Expr, value) -> bool:
    return isinstance(e, Const) and e.value == value


def _pure_index(c: Expr) -> bool:
    return c.dtype == "bool" and not any(isinstance(n, (Read, Call, CheckedIndex, Select)) for n in walk(c))


def contribution_conditions(e: Expr, identity, producer, depth: int = 0) -> list:
    """Conjuncts outside of which e equals `identity`. producer(name) gives (axis names, body) of a
    materialized stage (its body the value of every element), or None."""
    if isinstance(e, Select) and _is(e.f, identity):
        return [c for c in conjuncts(e.cond) if _pure_index(c)] + contribution_conditions(e.t, identity, producer,
                                                                                             depth)
    if identity == 0 and isinstance(e, Cast):
        return contribution_conditions(e.value, 0, producer, depth)
    if identity == 0 and isinstance(e, Binary) and e.op == "*":
        return contribution_conditions(e.a, 0, producer, depth) + contribution_conditions(e.b, 0, producer, depth)
    if identity in (INF, -INF) and isinstance(e, Binary) and e.op == "+":   # max-plus: -inf + w = -inf
        return contribution_conditions(e.a, identity, producer, depth) + \
            contribution_conditions(e.b, identity, producer, depth)
    if isinstance(e, Read) and depth < MAX_CHASE:
        found = producer(e.name)
        if found is not None:
            axes, body = found
            inner = contribution_conditions(body, identity, producer, depth + 1)
            return [substitute(c, dict(zip(axes, e.indices))) for c in inner]
    return []


def relaxed(c: Expr, inner: dict, every: bool = False) -> Expr | None:
    """A condition on the loops outside `inner` ({loop variable: extent}) that holds wherever c holds for some
    (every=True: for all) values of those loops: c with each inner loop at the end of its range that favours
    (disfavours) c. A causal mask `k <= i` around a tile of rows i2 then skips the blocks of k past the tile's last
    row, and runs the blocks before its first row without the mask. None when c is not an affine comparison in
    the inner loops."""
    if not (isinstance(c, Compare) and c.op in ("<", "<=", ">", ">=")):
        return None
    terms, k = _linear(Binary("-", c.a, c.b, c.a.dtype))
    small = c.op in ("<", "<=")      # c reads `a - b < 0`: the inner loops at the ends that make it smallest
    outer = {}
    for t, coef in terms.items():
        if not free_vars(t) & inner.keys():
            outer[t] = coef
        elif isinstance(t, Var):
            k += coef * (0 if ((coef > 0) == small) != every else inner[t.name] - 1)
        else:
            return None
    return Compare(c.op, _from_linear(outer, k, c.a.dtype), Const(0, c.a.dtype))


def index_selects(value: Expr) -> list:
    """The selects of value whose condition is a conjunction of pure index comparisons."""
    return [n for n in walk(value) if isinstance(n, Select) and all(_pure_index(c) for c in conjuncts(n.cond))]


def version_condition(selects: list, inner: dict, simplify) -> tuple:
    """(cond, selects it decides): cond holds only where every condition of those selects holds for all values of
    the inner loops, so that a copy of the loops can take their true branch; (None, []) when no select qualifies
    or cond is constant."""
    conds, decided = [], []
    for sel in selects:
        parts = [relaxed(c, inner, every=True) for c in conjuncts(sel.cond)]
        if all(p is not None for p in parts):
            conds += [simplify(p) for p in parts]
            decided.append(sel)
    conds = [c for c in conds if not (isinstance(c, Const) and c.value)]
    if not decided or not conds or any(isinstance(c, Const) for c in conds):
        return None, []
    return all_of(conds), decided


def take_true_branches(value: Expr, selects: list) -> Expr:
    chosen = set(selects)
    return transform(value, lambda n: n.t if isinstance(n, Select) and n in chosen else None)


def guard_levels(conditions: list, loops: list, first_reduce: int, simplify) -> dict:
    """{loop position p: conditions} placing each condition around the loop at p: inside every loop it reads,
    never outside the first reduction loop (the accumulator's init stays unconditional), and its relaxed forms
    further out where they say more than the next one in. loops: (variable, extent) of the stage's loops in
    order; variables of loops further out are fixed. simplify(expr) folds with the loops' bounds."""
    position = {v: i for i, (v, _) in enumerate(loops)}
    out: dict = {}
    for c in conditions:
        exact = max([first_reduce] + [position.get(v, -1) + 1 for v in free_vars(c)])
        out.setdefault(exact, []).append(c)
        kept = c
        # the relaxed form changes only where one of c's loops leaves: relax at those positions, innermost first
        for p in sorted({position[v] for v in free_vars(c) if first_reduce <= position.get(v, -1) < exact},
                        reverse=True):
            r = relaxed(c, dict(loops[p:]))
            r = r if r is None else simplify(r)
            if r is None or isinstance(r, Const):
                break
            if r != kept:
                out.setdefault(p, []).append(r)
                kept = r
    return out


def _guards_reading(loop: For) -> list:
    """(condition, {variable: extent} of `loop` and the loops between) of each skip guard inside `loop` that reads
    its variable."""
    guards, stack = [], [(loop.body, {loop.var: loop.extent})]
    while stack:
        s, loops = stack.pop()
        if isinstance(s, IfThenElse) and s.skip and loop.var in free_vars(s.cond):
            guards.append((s.cond, loops))
        inner = {**loops, s.var: s.extent} if isinstance(s, For) else loops
        stack.extend((k, inner) for k in stmt_kids(s))
    return guards


def skips_along(loop: For) -> bool:
    """Whether a skip guard inside `loop` reads its variable: then its iterations may differ in work (a causal
    mask's row blocks skip more the earlier they are), and a parallel loop deals them out round-robin."""
    return bool(_guards_reading(loop))


def skips_unevenly(loop: For) -> bool:
    """Whether skip guards inside `loop` that read its variable make one contiguous range of iterations per thread
    differ in work (the causal mask's row blocks do; a conv's padding skips taps of its edge rows only): where the
    ranges stay even, a thread's range keeps reading what the same thread's range of an earlier stage wrote (GRP
    56x56x64 stride 2 after its padded copy; docs/perf-notes.md, "Code generation")."""
    guards = _guards_reading(loop)
    if not guards:
        return False
    work = np.zeros(loop.extent)
    for cond, loops in guards:
        live = _live_share(cond, loops, loop.var)
        if live is None:
            return True     # a condition not evaluated here: round-robin, which is never far off
        work += live
    return _uneven(work)


def _live_share(cond: Expr, loops: dict, var: str):
    """Per value of `var`, the share of the other loops' values (`loops`: {variable: extent}) where cond holds,
    or None where it reads something else, has too many points, or has a node not evaluated here."""
    names = sorted(free_vars(cond))
    if not set(names) <= loops.keys() or math.prod(loops[v] for v in names) > MAX_POINTS:
        return None
    env = {v: np.arange(loops[v]).reshape([-1 if i == k else 1 for i in range(len(names))])
           for k, v in enumerate(names)}
    held = _values(cond, env)
    if held is None:
        return None
    held = np.broadcast_to(held, [loops[v] for v in names]).astype(float)
    return held.mean(axis=tuple(i for i, v in enumerate(names) if v != var))


_NP = {"+": np.add, "-": np.subtract, "*": np.multiply, "//": np.floor_divide, "%": np.mod, "min": np.minimum,
       "max": np.maximum, "<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
       "==": np.equal, "!=": np.not_equal, "&&": np.logical_and, "||": np.logical_or}


def _values(e: Expr, env: dict):
    """e on integer arrays of the loops' values (floor division, as the IR means it), None for other nodes."""
    if isinstance(e, Const):
        return np.asarray(e.value)
    if isinstance(e, Var):
        return env[e.name]
    if isinstance(e, Logic) and e.op == "!":
        a = _values(e.a, env)
        return None if a is None else np.logical_not(a)
    if isinstance(e, (Binary, Compare, Logic)) and e.op in _NP:
        a, b = _values(e.a, env), _values(e.b, env)
        if a is None or b is None or (e.op in ("//", "%") and np.any(b == 0)):
            return None
        return _NP[e.op](a, b)
    return None


def _uneven(work) -> bool:
    """Whether contiguous ranges of `work` for 2, 4 or 8 threads differ more than UNEVEN over ranges of equal
    work each (a range's extra iteration where the threads do not divide the loop counts for both)."""
    for threads in (2, 4, 8):
        if threads > len(work):
            break
        ranges = np.array_split(work, threads)
        heaviest = max(r.sum() for r in ranges) / max(work.sum() / threads, 1e-12)
        even = max(len(r) for r in ranges) / (len(work) / threads)
        if heaviest > UNEVEN * even:
            return True
    return False


def all_of(conditions: list) -> Expr:
    cond = conditions[0]
    for c in conditions[1:]:
        cond = Logic("&&", cond, c)
    return cond


def skip_wrap(loop: For, conds, outer_iters, reduce_vars: set):
    """loop under `if (conds)` where that skips a reduction loop and enough work to pay for the test, outside
    any vector loop, around no GPU thread loop or barrier (threads must reach those together)."""
    if not conds or any(it.annotation == "vectorize" for it in outer_iters):
        return loop
    inner = list(walk_stmt(loop))
    if not any(isinstance(s, For) and s.var in reduce_vars for s in inner) or \
            store_executions(loop, vector_once=True) < MIN_GUARDED_STEPS:
        return loop
    if any(isinstance(s, (Barrier, ThreadReduce)) or (isinstance(s, For) and s.kind in THREAD_KINDS)
           for s in inner):
        return loop
    return IfThenElse(all_of(conds), loop, skip=True)


__all__ = ["contribution_conditions", "relaxed", "index_selects", "version_condition", "take_true_branches",
           "guard_levels", "skips_along", "skips_unevenly", "all_of", "skip_wrap"]
