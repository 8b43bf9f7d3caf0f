"""Interval arithmetic over guarded integer indices, for the verifier (verify.py): the facts that enclosing guards
and select conditions imply, and a sound (lo, hi) of an index under them, with min/max split into cases and fused
loops' quotients taken apart (see interval)."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ..program.expr import Binary, Compare, Const, Expr, Logic, is_float
from ..program.simplify import _from_linear, _linear, bound, simplify
from .vector import vchildren, vtransform


@dataclass(frozen=True)
class Scope:
    bounds: dict      # loop variable -> (0, extent - 1)
    guards: tuple     # conditions of the enclosing ifs (see facts_of)
    buffers: dict     # name -> Buffer visible here
    registers: frozenset = frozenset()
    parallel: bool = False


@lru_cache(maxsize=4096)
def facts_of(cond: Expr) -> tuple:
    """The integer comparisons a true `cond` implies, each as (d, lo, hi) with lo <= d <= hi."""
    if isinstance(cond, Logic) and cond.op == "&&":
        return facts_of(cond.a) + facts_of(cond.b)
    if not isinstance(cond, Compare) or is_float(cond.a.dtype) or is_float(cond.b.dtype):
        return ()
    d = simplify(Binary("-", cond.a, cond.b, cond.a.dtype))
    return {"<": ((d, None, -1),), "<=": ((d, None, 0),), ">": ((d, 1, None),), ">=": ((d, 0, None),),
            "==": ((d, 0, 0),)}.get(cond.op, ())


def scope_facts(sc: Scope) -> tuple:
    """(d, lo, hi) with lo <= d <= hi (None: unbounded) for every comparison the enclosing guards imply."""
    return tuple(f for c in sc.guards for f in facts_of(c))


EMPTY = (1, 0)  # interval() of an expression no case of which can be evaluated (every case contradicts a guard)


def interval(e: Expr, sc: Scope, facts: tuple = (), rewrite: bool = True) -> tuple:
    """(lo, hi) of an integer expression, None where unknown: from the loop bounds, tightened by the guard facts
    (see _upper), with each min/max split into its two cases (min(a, b) is a where a <= b, else b). A case whose
    facts contradict the loop bounds is never evaluated and is left out (EMPTY if all are). rewrite: see _rewrites."""
    lo, hi = None, None
    for ce, cf in _cases(simplify(e, sc.bounds), scope_facts(sc) + facts, depth=3):
        if unreachable(cf, sc.bounds):
            continue  # e.g. the arm of a window's min that would put the access past the guard
        down, up = _case_interval(ce, cf, sc.bounds, e.dtype, rewrite)
        if up is None or down is None:
            return None, None
        lo, hi = (down, up) if lo is None else (min(lo, down), max(hi, up))
    return EMPTY if lo is None else (lo, hi)


def _case_interval(ce: Expr, cf: tuple, bounds: dict, dtype: str, rewrite: bool = True) -> tuple:
    """(lo, hi) of one min/max-free case, from its linear form over the guard facts, intersected with that of each
    rewrite (_rewrites) of it: the guards are written over the fused loops that the index has taken apart."""
    lin = _linear(ce)
    flin = [(_linear(d), flo, fhi) for d, flo, fhi in cf]
    lo, hi = _lin_interval(lin, flin, cf, bounds, dtype)
    for lin2, flin2 in (_rewrites(lin, flin, dtype) if rewrite else ()):
        lo2, hi2 = _lin_interval(lin2, flin2, cf, bounds, dtype)
        lo = lo2 if lo is None else lo if lo2 is None else max(lo, lo2)
        hi = hi2 if hi is None else hi if hi2 is None else min(hi, hi2)
    return lo, hi


def _rewrites(lin: tuple, flin: list, dtype: str):
    """Equal forms of lin (and its facts): a term y beside y // c or y % c written as c * (y // c) + y % c (a fused
    loop next to its parts); k * (y // c) + k * m * x as k * ((y + c * m * x) // c) (a fused loop's index taken
    apart, guarded on the fused value), absorbing every other term whose coefficient k divides."""
    parts = _unfuse_map(lin, flin)
    if parts:
        yield _unfuse(lin, parts), [(_unfuse(f, parts), a, b) for f, a, b in flin]
    for t, k in lin[0].items():
        if _is_divmod(t) and t.op == "//":
            c = t.b.value
            into = {x: m // k for x, m in lin[0].items() if x is not t and not _is_divmod(x) and m % k == 0}
            if into:
                y = simplify(Binary("+", t.a, _from_linear({x: c * m for x, m in into.items()}, 0, dtype), dtype))
                terms = {x: m for x, m in lin[0].items() if x is not t and x not in into}
                terms[Binary("//", y, t.b, dtype)] = k
                yield (terms, lin[1]), flin


def _lin_interval(lin: tuple, flin: list, cf: tuple, bounds: dict, dtype: str) -> tuple:
    """(lo, hi) of a linear form: over the facts (_upper); each floor division or modulo term by a positive constant
    also bounded through its numerator (whose own guard facts may apply), the rest of the form as linear."""
    up = _upper(lin, flin, bounds, dtype)
    down = _upper(_neg(lin), flin, bounds, dtype)
    lo, hi = (None if down is None else -down), up
    divs = {t: k for t, k in lin[0].items() if _is_divmod(t)}
    if divs:
        rest = ({t: k for t, k in lin[0].items() if t not in divs}, lin[1])
        r_up, r_down = _upper(rest, flin, bounds, dtype), _upper(_neg(rest), flin, bounds, dtype)
        parts = [(None if r_down is None else -r_down, r_up)]
        for t, k in divs.items():
            tl, th = _divmod_interval(t, cf, bounds, dtype)
            parts.append((None, None) if tl is None or th is None else (min(k * tl, k * th), max(k * tl, k * th)))
        if all(p[0] is not None and p[1] is not None for p in parts):
            lo2, hi2 = sum(p[0] for p in parts), sum(p[1] for p in parts)
            lo, hi = (lo2 if lo is None else max(lo, lo2)), (hi2 if hi is None else min(hi, hi2))
    return lo, hi


def _divmod_interval(t: Binary, cf: tuple, bounds: dict, dtype: str) -> tuple:
    """(lo, hi) of y // c or y % c through the interval of y (a fused loop's index taken apart, guarded on y)."""
    lo, hi = _case_interval(t.a, cf, bounds, dtype, rewrite=False)  # y rewritten again might never end
    c = t.b.value
    if t.op == "//":
        return (None, None) if lo is None or hi is None else (lo // c, hi // c)
    return (lo, hi) if lo is not None and hi is not None and 0 <= lo and hi < c else (0, c - 1)


def _is_divmod(t) -> bool:
    return isinstance(t, Binary) and t.op in ("//", "%") and isinstance(t.b, Const) and t.b.value > 0


def _neg(lin: tuple) -> tuple:
    return {t: -v for t, v in lin[0].items()}, -lin[1]


def _unfuse_map(lin: tuple, flin: list) -> dict:
    """{y: c} for each term y of the form or its facts that also appears as y // c or y % c there."""
    atoms = dict.fromkeys(t for terms, _ in [lin] + [f for f, _, _ in flin] for t in terms)  # ordered: repeatable
    return {t.a: t.b.value for t in reversed(atoms) if _is_divmod(t) and t.a in atoms}  # the first c of each y


def _unfuse(lin: tuple, parts: dict) -> tuple:
    """lin with each term y of `parts` written as c * (y // c) + y % c."""
    terms = dict(lin[0])
    for y, d in parts.items():
        k, c = terms.pop(y, 0), Const(d, y.dtype)
        for t, m in ((Binary("//", y, c, y.dtype), d * k), (Binary("%", y, c, y.dtype), k)):
            terms[t] = terms.get(t, 0) + m
    return {t: v for t, v in terms.items() if v}, lin[1]


def unreachable(facts: tuple, bounds: dict) -> bool:
    """Some guard can never hold with the loop bounds (an unrolled copy under a constant false condition)."""
    for d, flo, fhi in facts:
        b = bound(d, bounds)
        if b is not None and ((fhi is not None and b[0] > fhi) or (flo is not None and b[1] < flo)):
            return True
    return False


def _cases(e: Expr, facts: tuple, depth: int) -> list:
    """[(e', facts')]: e with its first min/max node replaced by each operand, under the fact that makes it so."""
    node = next((n for n in distinct_nodes(e) if isinstance(n, Binary) and n.op in ("min", "max")
                 and not is_float(n.dtype)), None) if depth else None
    if node is None:
        return [(e, facts)]
    diff = simplify(Binary("-", node.a, node.b, node.dtype))
    a_wins = (diff, None, 0) if node.op == "min" else (diff, 0, None)   # min(a, b) == a where a - b <= 0
    b_wins = (diff, 0, None) if node.op == "min" else (diff, None, 0)
    out = []
    for arm, fact in ((node.a, a_wins), (node.b, b_wins)):
        # the same min/max inside a guard fact takes the same arm, so the fact keeps matching the index
        same = tuple((simplify(vtransform(d, lambda n, a=arm: a if n == node else None)), flo, fhi)
                     for d, flo, fhi in facts)
        out += _cases(simplify(_replace(e, node, arm)), same + (fact,), depth - 1)
    return out


def _replace(e: Expr, old: Expr, new: Expr) -> Expr:
    return vtransform(e, lambda n: new if n is old else None)


def _upper(lin: tuple, facts: list, bounds: dict, dtype: str, scaled: bool = False):
    """An upper bound of the linear form lin, or None: rewrite it as sum(k * d) + rest over facts lo <= d <= hi
    (each k an integer that cancels a term of d), taking at each step the fact that lowers the bound most. Where
    a fact's term is m times lin's (a guard k0 * 16 + k1 * 4 < 37 over the index k0 * 4 + k1 of a buffer packed
    in groups of 4), m * lin is bounded instead and the bound divided by m (lin takes integer values)."""
    best = _upper_integral(lin, facts, bounds, dtype)
    if scaled:
        return best
    terms, c = lin
    for m in sorted({d[0][a] // terms[a] for d, _, _ in facts for a in d[0]
                     if terms.get(a, 0) > 0 and d[0][a] > terms[a] and d[0][a] % terms[a] == 0}):
        up = _upper(({t: m * v for t, v in terms.items()}, m * c), facts, bounds, dtype, scaled=True)
        if up is not None and (best is None or up // m < best):
            best = up // m
    return best


def _upper_integral(lin: tuple, facts: list, bounds: dict, dtype: str):
    terms, c = lin
    best = _hi(terms, c, bounds, dtype)
    acc, used = 0, set()
    while True:
        step = None
        for n, ((dterms, dc), flo, fhi) in enumerate(facts):
            if n in used:
                continue
            for atom, coef in dterms.items():
                k = terms.get(atom, 0) // coef
                limit = fhi if k > 0 else flo
                if k == 0 or limit is None or terms.get(atom, 0) % coef:
                    continue
                rest = {t: terms.get(t, 0) - k * dterms.get(t, 0) for t in set(terms) | set(dterms)}
                rest = {t: v for t, v in rest.items() if v}
                h = _hi(rest, c - k * dc, bounds, dtype)
                if h is not None and (best is None or acc + k * limit + h < best) and \
                        (step is None or acc + k * limit + h < step[0]):
                    step = (acc + k * limit + h, n, rest, c - k * dc, acc + k * limit)
        if step is None:
            return best
        best, n, terms, c, acc = step
        used.add(n)


def _hi(terms: dict, c: int, bounds: dict, dtype: str):
    b = bound(simplify(_from_linear(dict(terms), c, dtype), bounds), bounds)
    return None if b is None else b[1]


def distinct_nodes(e: Expr, seen: set | None = None):
    """Every distinct node of e (shared subtrees once), pre-order."""
    seen, stack = (set() if seen is None else seen), [e]
    while stack:
        n = stack.pop()
        if id(n) not in seen:
            seen.add(id(n))
            yield n
            stack.extend(reversed(vchildren(n)))


__all__ = ["Scope", "EMPTY", "facts_of", "scope_facts", "interval", "unreachable", "distinct_nodes"]
