"""Simplification of index arithmetic.

Integer + - * are normalized to a linear form (sum of coefficient x term, plus a constant); floor division
and modulo by a positive constant pull out the multiples of the divisor, which is always exact for floor
semantics: (q*c + r) // c == q + r // c and (q*c + r) % c == r % c. With known variable bounds,
r // c and r % c fold when 0 <= r < c, and comparisons fold when the sign of their difference is known.
"""
from __future__ import annotations

import math

from .convert import scalar as convert_scalar
from .dtypes import DTYPE_TABLE, NARROW_INTS, STORAGE_FLOATS
from .expr import (Binary, Call, Cast, CheckedIndex, Compare, Const, Expr, Logic, Select, Var, children, const,
                   is_float, rebuild)

Bounds = dict  # var name -> (lo, hi) inclusive integers
_INT_RANGES = {n: d.int_range for n, d in DTYPE_TABLE.items() if d.is_int and n != "int64"}
_NARROW = NARROW_INTS + STORAGE_FLOATS


# ----------------------------------------------------------------------------- interval analysis

def bound(e: Expr, bounds: Bounds) -> tuple | None:
    """Inclusive integer interval of e, or None if unknown."""
    if isinstance(e, Const):
        return (e.value, e.value) if not is_float(e.dtype) else None
    if isinstance(e, Var):
        return bounds.get(e.name)
    if isinstance(e, CheckedIndex):  # out-of-range values are clamped (and reported) at run time
        return (0, e.extent - 1)
    if isinstance(e, Cast):
        b = bound(e.value, bounds) if not is_float(e.dtype) and not is_float(e.value.dtype) else None
        lo, hi = _INT_RANGES.get(e.dtype, (None, None))
        wraps = b is not None and lo is not None and (b[0] < lo or b[1] > hi)
        return None if wraps else b
    if isinstance(e, Select):
        t, f = bound(e.t, bounds), bound(e.f, bounds)
        return None if t is None or f is None else (min(t[0], f[0]), max(t[1], f[1]))
    if isinstance(e, Call) and e.name == "abs" and not is_float(e.dtype):
        a = bound(e.args[0], bounds)
        if a is None:
            return None
        return (a[0], a[1]) if a[0] >= 0 else (-a[1], -a[0]) if a[1] <= 0 else (0, max(-a[0], a[1]))
    if not isinstance(e, Binary) or is_float(e.dtype):
        return None
    a, b = bound(e.a, bounds), bound(e.b, bounds)
    if e.op in ("%",) and isinstance(e.b, Const) and e.b.value > 0:
        c = e.b.value
        if a is not None and a[0] >= 0 and a[1] < c:
            return a
        terms, k = _linear(e.a)   # (g*y) % c with g | c is a multiple of g: at most c - g
        return (0, c - math.gcd(c, k, *terms.values()))
    if a is None or b is None:
        return None
    if e.op == "+":
        return (a[0] + b[0], a[1] + b[1])
    if e.op == "-":
        return (a[0] - b[1], a[1] - b[0])
    if e.op == "*":
        ps = [x * y for x in a for y in b]
        return (min(ps), max(ps))
    if e.op == "//" and b[0] == b[1] and b[0] > 0:
        return (a[0] // b[0], a[1] // b[0])
    if e.op == "min":
        return (min(a[0], b[0]), min(a[1], b[1]))
    if e.op == "max":
        return (max(a[0], b[0]), max(a[1], b[1]))
    return None


# ----------------------------------------------------------------------------- linear forms

def _linear(e: Expr) -> tuple[dict, int]:
    """e (integer, already simplified children) as ({term: coef}, const)."""
    if isinstance(e, Const):
        return {}, e.value
    if isinstance(e, Binary) and e.op in ("+", "-"):
        ta, ca = _linear(e.a)
        tb, cb = _linear(e.b)
        s = -1 if e.op == "-" else 1
        out = dict(ta)
        for t, k in tb.items():
            out[t] = out.get(t, 0) + s * k
        return {t: k for t, k in out.items() if k != 0}, ca + s * cb
    if isinstance(e, Binary) and e.op == "*":
        if isinstance(e.b, Const):
            t, c = _linear(e.a)
            k = e.b.value
            return ({x: v * k for x, v in t.items()} if k else {}), c * k
        if isinstance(e.a, Const):
            t, c = _linear(e.b)
            k = e.a.value
            return ({x: v * k for x, v in t.items()} if k else {}), c * k
    return {e: 1}, 0


def linear_form(e: Expr) -> tuple[dict, int]:
    """A simplified integer expression as ({term: coefficient}, constant)."""
    return _linear(e)


def _merge_div_mod(terms: dict) -> dict:
    """k*c*(y // c) + k*(y % c) == k*y: undo a fuse followed by its split."""
    changed = True
    while changed:
        changed = False
        for t, k in list(terms.items()):
            if isinstance(t, Binary) and t.op == "%" and isinstance(t.b, Const):
                div = Binary("//", t.a, t.b, t.dtype)
                if terms.get(div) == k * t.b.value:
                    del terms[t], terms[div]
                    yt, yc = _linear(t.a)
                    for x, v in yt.items():
                        terms[x] = terms.get(x, 0) + v * k
                    terms = {x: v for x, v in terms.items() if v != 0}
                    if yc:
                        terms[const(yc * k, t.dtype)] = 1  # folded by the caller
                    changed = True
                    break
    return terms


def _from_linear(terms: dict, c: int, dtype: str) -> Expr:
    for t in [t for t in terms if isinstance(t, Const)]:
        c += t.value * terms.pop(t)
    pos = [(t, k) for t, k in terms.items() if k > 0]
    neg = [(t, -k) for t, k in terms.items() if k < 0]
    out = None
    for t, k in pos:
        x = t if k == 1 else Binary("*", t, Const(k, dtype), dtype)
        out = x if out is None else Binary("+", out, x, dtype)
    for t, k in neg:
        x = t if k == 1 else Binary("*", t, Const(k, dtype), dtype)
        out = Binary("-", Const(0, dtype) if out is None else out, x, dtype)
    if out is None:
        return Const(c, dtype)
    if c > 0:
        out = Binary("+", out, Const(c, dtype), dtype)
    elif c < 0:
        out = Binary("-", out, Const(-c, dtype), dtype)
    return out


def _divmod(op: str, a: Expr, c: int, dtype: str, bounds: Bounds) -> Expr:
    if c == 1:
        return a if op == "//" else Const(0, dtype)
    terms, k = _linear(a)
    q_terms = {t: v // c for t, v in terms.items() if v % c == 0}
    r_terms = {t: v for t, v in terms.items() if v % c != 0}
    q_const, r_const = k // c, k % c
    r = _from_linear(r_terms, r_const, dtype)
    rb = bound(r, bounds)
    fits = rb is not None and rb[0] >= 0 and rb[1] < c
    aligned = None if fits else _aligned_split(r_terms, r_const, c, bounds)
    if aligned is not None:  # r == big + small, big a multiple of g | c, 0 <= small < g: small never carries
        big, small = (_from_linear(t, k0, dtype) for t, k0 in aligned)
        if op == "%":
            return _simplify(Binary("+", _divmod("%", big, c, dtype, bounds), small, dtype), bounds)
        quotient = _divmod("//", big, c, dtype, bounds)
        q_terms[quotient] = q_terms.get(quotient, 0) + 1
        return _from_linear(q_terms, q_const, dtype)
    if op == "%":
        if fits:
            return r
        if isinstance(r, Binary) and r.op == "%" and isinstance(r.b, Const) and r.b.value % c == 0:
            r = r.a  # (x % (m*c)) % c == x % c
        return Const(r.value % c, dtype) if isinstance(r, Const) else Binary("%", r, Const(c, dtype), dtype)
    if fits:
        rest = Const(0, dtype)
    elif rb is not None and rb[0] // c == rb[1] // c:
        rest = Const(rb[0] // c, dtype)
    elif isinstance(r, Binary) and r.op == "//" and isinstance(r.b, Const) and r.b.value > 0:
        rest = Binary("//", r.a, Const(r.b.value * c, dtype), dtype)  # (x // a) // c == x // (a*c)
    else:
        rest = Binary("//", r, Const(c, dtype), dtype)
    q_terms[rest] = q_terms.get(rest, 0) + 1
    return _from_linear(q_terms, q_const, dtype)


def _aligned_split(terms: dict, k: int, c: int, bounds: Bounds) -> tuple | None:
    """((big terms, big const), (small terms, small const)) of terms + k, with every big coefficient and the big
    const multiples of some g dividing c (the largest that works) and the small part within [0, g): then
    (big + small) // c == big // c and (big + small) % c == big % c + small, for floor semantics, as big % c is a
    multiple of g at most c - g. The lane of a vector piece (co = 32*co.0 + 16*j + l, l < 16) read through a
    group's channel co // 128 so folds to a broadcast instead of a 16-lane gather."""
    for g in _divisors_descending(c):
        big = {t: v for t, v in terms.items() if v % g == 0}
        small = {t: v for t, v in terms.items() if v % g}
        if not big or not small:
            continue
        sb = bound(_from_linear(small, k % g, "int32"), bounds)
        if sb is not None and sb[0] >= 0 and sb[1] < g:
            return (big, k - k % g), (small, k % g)
    return None


def _divisors_descending(c: int) -> list:
    """The divisors of c strictly between 1 and c, largest first: O(sqrt c), as lowering simplifies every index of
    every program the search scores (a fused axis can make c tens of thousands)."""
    small = [d for d in range(2, math.isqrt(c) + 1) if c % d == 0]
    return sorted(set(small) | {c // d for d in small}, reverse=True)


# ----------------------------------------------------------------------------- the rewriter

_CMP = {"<": lambda x, y: x < y, "<=": lambda x, y: x <= y, ">": lambda x, y: x > y,
        ">=": lambda x, y: x >= y, "==": lambda x, y: x == y, "!=": lambda x, y: x != y}
_ARITH = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y,
          "min": min, "max": max, "/": lambda x, y: x / y, "//": lambda x, y: x // y, "%": lambda x, y: x % y}


def simplify(e: Expr, bounds: Bounds | None = None, memo: dict | None = None) -> Expr:
    """memo (id -> (expr, result)) lets one caller skip subtrees it has simplified before; it is only valid
    while the bounds of already-seen variables do not change (lowering only ever adds variables)."""
    bounds = bounds or {}
    if memo is not None:
        return _simplify_memo(e, bounds, memo)
    key = _index_key(e, bounds)
    if key is None:
        return _simplify(e, bounds)
    out = _INDEX_MEMO.get(key)
    if out is None:
        if len(_INDEX_MEMO) >= INDEX_MEMO_SIZE:
            _INDEX_MEMO.clear()
        out = _INDEX_MEMO[key] = _simplify(e, bounds)
    return out


# Integer index arithmetic (Vars, integer Consts, + - * // % min max) simplifies to the same tree wherever it
# recurs with the same bounds on its variables: lowering and the codegen passes simplify the same indices again
# and again (each pass, each unrolled copy, each candidate of a search), two thirds of the calls for the
# fingerprint programs. Only such expressions are keyed: their equality is exact (no float or bool constants that
# compare equal to ints, no Read whose uncompared producer link would be swapped).
INDEX_MEMO_SIZE = 1 << 13   # about 2 KB an entry; hits are local (4096 entries save as much as 131072)
_INDEX_MEMO: dict = {}
_INT_DTYPES = frozenset(("int32", "int64"))


def _index_key(e: Expr, bounds: Bounds) -> tuple | None:
    """(e, the bounds of its variables by name) when e is integer index arithmetic, else None (not memoized)."""
    names = set()
    stack = [e]
    while stack:
        n = stack.pop()
        t = type(n)
        if t is Binary:
            if n.dtype not in _INT_DTYPES:
                return None
            stack.append(n.a)
            stack.append(n.b)
        elif t is Var:
            names.add(n.name)
        elif t is not Const or type(n.value) is not int:
            return None
    return e, tuple((v, bounds.get(v)) for v in sorted(names))


def _simplify_memo(e: Expr, bounds: Bounds, memo: dict) -> Expr:
    hit = memo.get(id(e))
    if hit is not None and hit[0] is e:
        return hit[1]
    if type(e) is Binary and e.dtype in _INT_DTYPES:
        out = simplify(e, bounds)   # index arithmetic: the memo across programs (a search's tiles recur)
    else:
        kids = children(e)
        out = e
        if kids:
            out = rebuild(e, tuple([_simplify_memo(k, bounds, memo) for k in kids]))
        out = _simplify_node(out, bounds)
    memo[id(e)] = (e, out)
    memo[id(out)] = (out, out)
    return out


def _simplify(e: Expr, bounds: Bounds) -> Expr:
    kids = children(e)
    if kids:
        if type(e) is Binary and e.dtype in _INT_DTYPES:
            e = rebuild(e, tuple([_simplify(k, bounds) for k in kids]))
        else:   # the integer subtrees of other nodes (a Read's indices, a guard's sides) go through the memo
            e = rebuild(e, tuple([simplify(k, bounds) if type(k) is Binary else _simplify(k, bounds) for k in kids]))
    return _simplify_node(e, bounds)


def _simplify_node(e: Expr, bounds: Bounds) -> Expr:
    if isinstance(e, Binary):
        return _binary(e, bounds)
    if isinstance(e, Var):
        b = bounds.get(e.name)
        return Const(b[0], e.dtype) if b is not None and b[0] == b[1] else e
    if isinstance(e, Compare):
        return _compare(e, bounds)
    if isinstance(e, Logic):
        return _logic(e)
    if isinstance(e, Select) and isinstance(e.cond, Const):
        return e.t if e.cond.value else e.f
    if isinstance(e, CheckedIndex) and isinstance(e.value, Const) and 0 <= e.value.value < e.extent:
        return Const(int(e.value.value), e.dtype)  # only a constant is known in range: data may change
    if isinstance(e, Cast) and isinstance(e.value, Const):
        if e.dtype in _NARROW or e.value.dtype in _NARROW:   # rounds or wraps as the kernel does (convert.py)
            return Const(convert_scalar(e.value.value, e.dtype), e.dtype)
        return const(e.value.value, e.dtype) if is_float(e.dtype) or float(e.value.value).is_integer() \
            else Const(int(e.value.value), e.dtype)
    return e


def _binary(e: Binary, bounds: Bounds) -> Expr:
    a, b, dt = e.a, e.b, e.dtype
    if isinstance(a, Const) and isinstance(b, Const):
        if e.op in ("//", "%", "/") and b.value == 0:
            return e
        return const(_ARITH[e.op](a.value, b.value), dt)
    if is_float(dt):
        if e.op == "*" and ((isinstance(b, Const) and b.value == 1) or (isinstance(a, Const) and a.value == 1)):
            return a if isinstance(b, Const) else b
        if e.op in ("+", "-") and isinstance(b, Const) and b.value == 0:
            return a
        return e
    if e.op in ("+", "-", "*"):
        terms, c = _linear(e)
        return _from_linear(_merge_div_mod(terms), c, dt)
    if e.op in ("//", "%") and isinstance(b, Const) and b.value > 0:
        return _divmod(e.op, a, b.value, dt, bounds)
    if e.op in ("min", "max"):
        ba, bb = bound(a, bounds), bound(b, bounds)
        if ba and bb:
            if ba[1] <= bb[0]:
                return a if e.op == "min" else b
            if bb[1] <= ba[0]:
                return b if e.op == "min" else a
    return e


def _compare(e: Compare, bounds: Bounds) -> Expr:
    a, b = e.a, e.b
    if isinstance(a, Const) and isinstance(b, Const):
        return const(_CMP[e.op](a.value, b.value), "bool")
    if is_float(a.dtype):
        return e
    d = bound(_binary(Binary("-", a, b, a.dtype), bounds), bounds)
    if d is None:
        return e
    lo, hi = d
    verdict = {"<": (hi < 0, lo >= 0), "<=": (hi <= 0, lo > 0), ">": (lo > 0, hi <= 0),
               ">=": (lo >= 0, hi < 0), "==": (lo == hi == 0, lo > 0 or hi < 0),
               "!=": (lo > 0 or hi < 0, lo == hi == 0)}[e.op]
    if verdict[0]:
        return const(True, "bool")
    if verdict[1]:
        return const(False, "bool")
    return e


def _logic(e: Logic) -> Expr:
    a, b = e.a, e.b
    if e.op == "!":
        return const(not a.value, "bool") if isinstance(a, Const) else e
    for x, y in ((a, b), (b, a)):
        if isinstance(x, Const):
            if e.op == "&&":
                return y if x.value else const(False, "bool")
            return const(True, "bool") if x.value else y
    return e


__all__ = ["simplify", "bound", "linear_form", "Bounds"]
