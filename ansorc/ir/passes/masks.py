"""How an expression of a vector piece depends on its lane l, for the vectorizer (vectorize.py): lane strides,
conditions convex in the lane, selects whose arms may both run, and the lanes a guard keeps (masked loads).

A guarded contiguous read `select(c(l), A[e + l], f)` whose condition is a conjunction of int32 comparisons
with lane stride +-1 (a split's overhang `32*r0 + l < 197`, a padding bound `w + l >= 1`) keeps the lanes
lo <= l < hi, lo and hi scalar expressions of the loops around the piece: `lane_range` finds them, and the
read becomes a VMaskLoad (ir/passes/vector.py), which reads only those lanes (the others cannot fault) and gives
f in the rest. Conjuncts that do not depend on the lane stay a scalar condition around it.

A guarded tile's masks keep every lane in all its iterations but the last: `versioned` gives the vectorized loop a
copy with plain loads, taken where every mask is full (one test per execution of the loop, not per load).
"""
from __future__ import annotations

import math

from ..program.expr import Binary, CheckedIndex, Compare, Const, Expr, Logic, Read, Select, Var, children, conjuncts, \
    free_vars, reads, walk
from ..program.simplify import _from_linear, _linear, simplify
from ..lowering.stmt import IfThenElse, Stmt, seq
from .vector import VLoad, VMaskLoad, map_exprs, top_exprs, vtransform, vwalk, walk_all


def lane_stride(e: Expr, lane: str) -> int | None:
    """k when e == e(l=0) + k*l for an integer expression e, else None."""
    terms, _ = _linear(e)
    k = 0
    for t, c in terms.items():
        if isinstance(t, Var) and t.name == lane:
            k += c
        elif lane in free_vars(t):
            return None
    return k


def convex(cond: Expr, lane: str) -> bool:
    """A conjunction of affine comparisons in the lane: true for all lanes iff true for the first and last."""
    if isinstance(cond, Logic) and cond.op == "&&":
        return convex(cond.a, lane) and convex(cond.b, lane)
    if isinstance(cond, Compare) and cond.op in ("<", "<=", ">", ">=", "==") and cond.a.dtype in ("int32", "int64"):
        return lane_stride(simplify(Binary("-", cond.a, cond.b, cond.a.dtype)), lane) is not None
    return lane not in free_vars(cond)


def eager_safe(e: Select) -> bool:
    """Both arms may run for every lane when each read in them is one the condition (always evaluated) makes
    too, so no arm touches memory the scalar code would not, and nothing outside those reads divides integers
    (a trap where the scalar code never divides) or checks a data index (a status the scalar code never sets)."""
    allowed = set(reads(e.cond))
    stack = [e.t, e.f]
    while stack:
        n = stack.pop()
        if isinstance(n, Read):
            if n not in allowed:
                return False
            continue  # its indices are the condition's, evaluated anyway
        if isinstance(n, CheckedIndex) or (isinstance(n, Binary) and n.op in ("/", "%")
                                           and not n.dtype.startswith("float")):
            return False
        stack.extend(children(n))
    return True


def reads_nothing(e: Expr) -> bool:
    """e reads no memory, checks no data index and divides no integers: safe to evaluate where the scalar code
    would not (a masked load's fill value)."""
    return not any(isinstance(n, (Read, CheckedIndex)) or (isinstance(n, Binary) and n.op in ("//", "/", "%")
                                                           and not n.dtype.startswith("float")) for n in walk(e))


# l op t, by op: the bounds it puts on l as (lo or hi, offset from t), lo <= l < hi
_BOUNDS = {"<": (("hi", 0),), "<=": (("hi", 1),), ">": (("lo", 1),), ">=": (("lo", 0),), "==": (("lo", 0), ("hi", 1))}
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "=="}


def lane_range(cond: Expr, lane: str, lanes: int, at0) -> tuple | None:
    """(lo, hi, rest) where cond holds exactly for the lanes lo <= l < hi (int32 scalars) and the lane-invariant
    `rest` (None when there is none); None unless every lane-dependent conjunct compares int32 values with lane
    stride 1 or -1. at0(x): x at lane 0, simplified within the piece's bounds."""
    los, his, rest = [], [], []
    for c in conjuncts(cond):
        if lane not in free_vars(c):
            rest.append(c)
            continue
        if not (isinstance(c, Compare) and c.op in _BOUNDS and c.a.dtype == c.b.dtype == "int32"):
            return None
        d = simplify(Binary("-", c.a, c.b, "int32"))
        k = lane_stride(d, lane)
        if k not in (1, -1):
            return None
        d0 = at0(d)                                   # d == d0 + k*l: l op -d0 (k = 1), or l flip(op) d0 (k = -1)
        op, t = (c.op, Binary("-", Const(0, "int32"), d0, "int32")) if k == 1 else (_FLIP[c.op], d0)
        for side, off in _BOUNDS[op]:
            (los if side == "lo" else his).append(at0(Binary("+", t, Const(off, "int32"), "int32")))
    lo = _fold("max", los, Const(0, "int32"), at0)
    hi = _fold("min", his, Const(lanes, "int32"), at0)
    cond_rest = None
    for c in rest:
        cond_rest = c if cond_rest is None else Logic("&&", cond_rest, c)
    return lo, hi, cond_rest


def _fold(op: str, xs: list, default: Expr, at0) -> Expr:
    if not xs:
        return default
    out = xs[0]
    for x in xs[1:]:
        out = Binary(op, out, x, "int32")
    return at0(out)


def zero_fill(fill: Expr) -> bool:
    """The fill of masked lanes is +0.0, what a masked load gives by itself (-0.0 is not)."""
    return isinstance(fill, Const) and fill.value == 0 and math.copysign(1.0, fill.value) > 0


def versioned(s: Stmt, bounds: dict) -> Stmt:
    """The vector code s of a loop as `if (full) {s with plain loads} if (!full) {s}`, where `full` says that each
    of its masked loads keeps all its lanes; s as it is unless every mask depends only on the loops around it
    (`bounds`), and the plain copy alone where full always holds. Both versions make the same accesses but for the
    masked ones, so register promotion sees through them (IfThenElse.version)."""
    masks = {n for x in walk_all(s) for e in top_exprs(x) for n in vwalk(e) if isinstance(n, VMaskLoad)}
    if not masks or any(free_vars(m.lo) - set(bounds) or free_vars(m.hi) - set(bounds) for m in masks):
        return s
    full = _all_full(masks, bounds)
    plain = map_exprs(s, lambda e: vtransform(e, lambda n: VLoad(n.buffer, n.index, n.lanes, n.dtype)
                                              if isinstance(n, VMaskLoad) else None))
    if isinstance(full, Const):
        return plain if full.value else s
    return seq(IfThenElse(full, plain, version=True), IfThenElse(Logic("!", full), s, version=True))


def _all_full(masks: set, bounds: dict) -> Expr:
    """The condition that every mask keeps all its lanes: each lo <= 0 and each hi >= lanes, of those that differ
    only by a constant the strongest (the tile's last vector's bound implies the others'), as `terms <= c` or
    `terms >= c`, whichever keeps the terms' signs (`32 * k <= 165`)."""
    ds = [Binary("-", Const(0, "int32"), x, "int32") for m in masks for x in _args(m.lo, "max")]
    ds += [Binary("-", x, Const(m.lanes, "int32"), "int32") for m in masks for x in _args(m.hi, "min")]
    strongest = {}
    for d in ds:                           # each must be >= 0
        terms, c = _linear(simplify(d, bounds))
        key = tuple(sorted(terms.items(), key=lambda tk: repr(tk[0])))   # in an order that is the same every run
        strongest[key] = min(c, strongest.get(key, c))
    conds = []
    for key, c in strongest.items():
        if all(k < 0 for _, k in key):
            conds.append(Compare("<=", _from_linear({t: -k for t, k in key}, 0, "int32"), Const(c, "int32")))
        else:
            conds.append(Compare(">=", _from_linear(dict(key), 0, "int32"), Const(-c, "int32")))
    full = None
    for cond in sorted(conds, key=repr):
        full = cond if full is None else Logic("&&", full, cond)
    return simplify(full, bounds)


def _args(e: Expr, op: str) -> list:
    """The operands of a chain of `op` (min or max): the bounds a mask's lo or hi combines."""
    if isinstance(e, Binary) and e.op == op:
        return _args(e.a, op) + _args(e.b, op)
    return [e]


__all__ = ["versioned", "lane_stride", "convex", "eager_safe", "reads_nothing", "lane_range", "zero_fill"]
