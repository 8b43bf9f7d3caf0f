"""Reduction steps that cannot change the result: the conditions outside which a step adds the identity.

A convolution over a zero-padded input multiplies the padding by the weights: `acc += pad[h + rh] * w[rh]`
where `pad = select(in_bounds, x, 0)`. Outside `in_bounds` the step adds 0 and can be skipped, as oneDNN does
(a 3x3 conv on 14x14 spends 13% of its taps on padding, a 7x7 one 25%). Lowering wraps the loops of a
reduction in `if (cond)` where cond depends only on loops outside them (ir/lower.py), so whole inner loops are
skipped and no branch lands in the register tile.

The conditions are found in the update's value, through products (sums of max-plus with an infinite
identity), casts, `select(c, v, identity)` (padding, a reduction's `where`) and reads of materialized stages
whose body is such a select. Only pure index conditions qualify (no reads, calls or data-dependent indices):
they are evaluated where the guards of split remainders do not yet hold. IEEE caveat, shared with oneDNN:
a skipped step would have added 0 * w, which is NaN when w is inf or NaN (and -inf + inf is NaN in a max-plus).
"""
from __future__ import annotations

from .expr import (Binary, Call, Cast, CheckedIndex, Compare, Const, Expr, Logic, Read, Select, Var, free_vars,
                   substitute, transform, walk)
from .simplify import _from_linear, _linear
from .stmt import For, IfThenElse
from .vector import stmt_kids

ENABLED = True  # off only to measure what skipping gains (bench/default_variants.py --unskipped)
INF = float("inf")
MAX_CHASE = 4   # reads followed through materialized stages (pad -> cache copy -> ...)
# A guard is placed only around at least this many statement executions (a vector loop counts once): its test
# then costs about 1% of the work it can skip. Around 6-36 vector FMAs (a depthwise conv's 3x3 taps, a small
# transposed conv's phase) the test made the default programs 8-40% slower.
MIN_GUARDED_STEPS = 256
# A copy of a reduction's loops without its index selects (versioning) needs less: its test costs one branch and
# saves a compare and a blend per step. The copy doubles the code of those loops.
MIN_VERSIONED_STEPS = 32


def _conjuncts(c: Expr) -> list:
    if isinstance(c, Logic) and c.op == "&&":
        return _conjuncts(c.a) + _conjuncts(c.b)
    return [c]


def _is(e: Expr, value) -> bool:
    return isinstance(e, Const) and e.value == value


def _pure_index(c: Expr) -> bool:
    return c.dtype == "bool" and not any(isinstance(n, (Read, Call, CheckedIndex, Select)) for n in walk(c))


def contribution_conditions(e: Expr, identity, producer, depth: int = 0) -> list:
    """Conjuncts outside of which e equals `identity`. producer(name) gives (axis names, body) of a
    materialized stage (its body the value of every element), or None."""
    if isinstance(e, Select) and _is(e.f, identity):
        return [c for c in _conjuncts(e.cond) if _pure_index(c)] + contribution_conditions(e.t, identity, producer,
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
    return [n for n in walk(value) if isinstance(n, Select) and all(_pure_index(c) for c in _conjuncts(n.cond))]


def version_condition(selects: list, inner: dict, simplify) -> tuple:
    """(cond, selects it decides): cond holds only where every condition of those selects holds for all values of
    the inner loops, so that a copy of the loops can take their true branch; (None, []) when no select qualifies
    or cond is constant."""
    conds, decided = [], []
    for sel in selects:
        parts = [relaxed(c, inner, every=True) for c in _conjuncts(sel.cond)]
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


def skips_along(loop: For) -> bool:
    """Whether a skip guard inside `loop` reads its variable: then its iterations differ in work (a causal mask's
    row blocks skip more the earlier they are), and a parallel loop deals them out round-robin."""
    stack = [loop.body]
    while stack:
        s = stack.pop()
        if isinstance(s, IfThenElse) and s.skip and loop.var in free_vars(s.cond):
            return True
        stack.extend(stmt_kids(s))
    return False


def all_of(conditions: list) -> Expr:
    cond = conditions[0]
    for c in conditions[1:]:
        cond = Logic("&&", cond, c)
    return cond


__all__ = ["contribution_conditions", "relaxed", "index_selects", "version_condition", "take_true_branches",
           "guard_levels", "skips_along", "all_of"]
