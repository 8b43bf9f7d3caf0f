"""IR invariants, one named `check_*` function each, for the lowered program at any stage (scalar or vector IR).

    check_no_nested_parallel    no parallel loop inside another
    check_allocated_before_use  every buffer accessed is an argument or allocated around it, every register declared
    check_loop_vars_scoped      every variable used is an enclosing loop's; no loop reuses an outer loop's variable
    check_in_bounds             every access is provably inside its buffer, from the loop extents alone or
                                from the conditions guarding it (an enclosing `if`, or the taken arm of a select)
    check_vector_lanes          vector operands agree on their lane counts; scalars stay scalar

`verify(func)` runs them all, after every pass when ANSORC_VERIFY=1 (the tests do); a failure raises VerifyError (a
ScheduleError) naming the check, and the buffer and index where it applies.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache

from ..program.expr import Binary, Compare, Const, Expr, Logic, Read, Select, Var, is_float
from ..program.simplify import _from_linear, _linear, bound, simplify
from ..schedule.state import ScheduleError
from ..lowering.stmt import Allocate, For, IfThenElse, PrimFunc, Store
from .vector import (Broadcast, VAssign, VBinary, VBlend, VCall, VCast, VCompare, VDecl, VFma, VLanes, VLoad, VPrefetch,
                     VReduce, VScatter, VSelect, VStore, VTranspose, VVar, lanes_of, stmt_kids, top_exprs, vchildren,
                     vtransform)


class VerifyError(ScheduleError):
    """An IR invariant does not hold: `check` names it; `buffer` and `index` say where, when it is an access."""

    def __init__(self, check: str, message: str, buffer: str = "", index=None):
        self.check, self.buffer, self.index = check, buffer, index
        super().__init__(f"{check}: {message}")


def verify_requested() -> bool:
    """ANSORC_VERIFY=1: verify the program after every pass (slower; the tests turn it on)."""
    return os.environ.get("ANSORC_VERIFY", "") == "1"


# ----------------------------------------------------------------------------- scopes

@dataclass(frozen=True)
class Scope:
    bounds: dict      # loop variable -> (0, extent - 1)
    guards: tuple     # conditions of the enclosing ifs (see facts_of)
    buffers: dict     # name -> Buffer visible here
    registers: frozenset = frozenset()
    parallel: bool = False


def scoped(func: PrimFunc):
    """Every statement of func with the scope it runs in, in program order (an explicit stack: no recursion)."""
    stack = [(func.body, Scope({f: (0, 1) for _, f in func.prepared}, (), {b.name: b for b in func.args}))]
    while stack:
        s, sc = stack.pop()
        yield s, sc
        if isinstance(s, For):
            sc = Scope({**sc.bounds, s.var: (0, s.extent - 1)}, sc.guards, sc.buffers, sc.registers,
                       sc.parallel or s.kind == "parallel")
        elif isinstance(s, IfThenElse):
            sc = Scope(sc.bounds, sc.guards + (s.cond,), sc.buffers, sc.registers, sc.parallel)
        elif isinstance(s, Allocate):
            sc = Scope(sc.bounds, sc.guards, {**sc.buffers, s.buffer.name: s.buffer}, sc.registers, sc.parallel)
        elif isinstance(s, VDecl):
            sc = Scope(sc.bounds, sc.guards, sc.buffers, sc.registers | {v.name for v, _ in s.decls}, sc.parallel)
        stack.extend((c, sc) for c in reversed(stmt_kids(s)))


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
    node = next((n for n in _walk(e) if isinstance(n, Binary) and n.op in ("min", "max")
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


def _upper(lin: tuple, facts: list, bounds: dict, dtype: str):
    """An upper bound of the linear form lin, or None: rewrite it as sum(k * d) + rest over facts lo <= d <= hi
    (each k an integer that cancels a term of d), taking at each step the fact that lowers the bound most."""
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


# ----------------------------------------------------------------------------- accesses

@dataclass(frozen=True)
class Access:
    kind: str         # "read" | "store"
    buffer: str
    indices: tuple    # one per dimension; or a single flat index when flat
    lanes: int        # elements from the (flat) index on
    flat: bool
    facts: tuple      # guards from selects around the access, beyond those of the statement's scope


def expr_accesses(e: Expr, facts: tuple = (), seen: set | None = None):
    """Every buffer access e evaluates, with the select conditions that guard it. Expressions are DAGs (an
    unrolled body shares subtrees): a node is visited once per guard context."""
    seen = set() if seen is None else seen
    # a guard context is named by the select conditions above it (alive with e), not the id of a freed facts tuple
    stack = [(e, facts, (id(facts),))]
    while stack:
        e, facts, where = stack.pop()
        key = (id(e), where)
        if key in seen:
            continue
        seen.add(key)
        if isinstance(e, (Select, VSelect)):  # only the taken arm is evaluated: its accesses hold the condition
            taken = (e.t, facts + facts_of(e.cond), (*where, id(e.cond)))
            stack += [(e.f, facts, where), taken, (e.cond, facts, where)]
            continue
        if isinstance(e, Read):
            yield Access("read", e.name, tuple(e.indices), 1, False, facts)
        elif isinstance(e, VLoad):
            yield Access("read", e.buffer, (e.index,), e.lanes, True, facts)
        stack.extend((c, facts, where) for c in reversed(vchildren(e)))


def stmt_accesses(s):
    """The accesses a statement itself makes (not those of nested statements)."""
    if isinstance(s, Store):
        yield Access("store", s.buffer, tuple(s.indices), 1, False, ())
    elif isinstance(s, VStore):
        yield Access("store", s.buffer, (s.index,), lanes_of(s.value), True, ())
    elif isinstance(s, VScatter):
        yield from (Access("store", s.buffer, (i,), 1, True, ()) for i in s.indices)
    elif isinstance(s, VTranspose):
        yield from (Access(kind, b, (i,), s.lanes, True, ()) for kind, b, i in s.rows())
    elif isinstance(s, VPrefetch):     # no access, but kept inside its buffer all the same
        yield Access("read", s.buffer, (s.index,), 1, True, ())
    seen: set = set()
    for e in top_exprs(s):
        yield from expr_accesses(e, (), seen)


def _where(a: Access) -> str:
    idx = ", ".join(map(repr, a.indices))
    return f"{a.buffer}[{idx}]" + (f" (flat, {a.lanes} lanes)" if a.flat else "")


# ----------------------------------------------------------------------------- the checks

def check_no_nested_parallel(func: PrimFunc) -> None:
    for s, sc in scoped(func):
        if isinstance(s, For) and s.kind == "parallel" and sc.parallel:
            raise VerifyError("check_no_nested_parallel", f"loop {s.var} is parallel inside another parallel loop")


def check_allocated_before_use(func: PrimFunc) -> None:
    for s, sc in scoped(func):
        for a in stmt_accesses(s):
            if a.buffer not in sc.buffers:
                raise VerifyError("check_allocated_before_use", f"{a.kind} of {_where(a)}: {a.buffer} is neither an "
                                  "argument nor allocated around it", a.buffer, a.indices)
        regs = [s.var] if isinstance(s, VAssign) else []
        regs += [n for e in top_exprs(s) for n in _walk(e) if isinstance(n, VVar)]
        for r in regs:
            if r.name not in sc.registers:
                raise VerifyError("check_allocated_before_use", f"register {r.name} used outside its declaration",
                                  r.name)


def check_loop_vars_scoped(func: PrimFunc) -> None:
    for s, sc in scoped(func):
        if isinstance(s, For) and s.var in sc.bounds:
            raise VerifyError("check_loop_vars_scoped", f"loop {s.var} reuses the variable of a loop around it")
        for e in top_exprs(s):
            for n in _walk(e):
                if isinstance(n, Var) and n.name not in sc.bounds:
                    where = next((_where(a) for a in expr_accesses(e) if any(
                        v.name == n.name for i in a.indices for v in _walk(i) if isinstance(v, Var))), repr(e))
                    raise VerifyError("check_loop_vars_scoped", f"{n.name} is used outside its loop, in {where}",
                                      index=n.name)


def check_in_bounds(func: PrimFunc) -> None:
    for s, sc in scoped(func):
        for a in stmt_accesses(s):
            buf = sc.buffers.get(a.buffer)
            if buf is None:
                continue  # check_allocated_before_use reports it
            limits = [(0, buf.size - a.lanes)] if a.flat else [(0, n - 1) for n in buf.shape]
            if not a.flat and len(a.indices) != len(buf.shape):
                raise VerifyError("check_in_bounds", f"{_where(a)} has {len(a.indices)} indices, {a.buffer} has "
                                  f"shape {list(buf.shape)}", a.buffer, a.indices)
            for dim, (idx, (lo, hi)) in enumerate(zip(a.indices, limits)):
                quick = bound(idx, sc.bounds)
                if quick is not None and lo <= quick[0] and quick[1] <= hi:
                    continue  # the loop extents alone prove it (most accesses): skip the guard analysis
                if unreachable(scope_facts(sc) + a.facts, sc.bounds):
                    break  # dead code until simplify_stmt removes it, e.g. an unrolled copy under a false guard
                got = interval(idx, sc, a.facts, rewrite=False)  # enough for most; the rewrites cost time
                if got[0] is None or got[1] is None or got[0] < lo or got[1] > hi:
                    got = interval(idx, sc, a.facts)
                if got == EMPTY:
                    break  # every case of the index contradicts its guards: never evaluated
                if got[0] is None or got[1] is None or got[0] < lo or got[1] > hi:
                    span = "unknown" if None in got else f"[{got[0]}, {got[1]}]"
                    raise VerifyError("check_in_bounds", f"{a.kind} of {_where(a)}: index {dim} spans {span}, not "
                                      f"provably within [{lo}, {hi}] of shape {list(buf.shape)}", a.buffer, a.indices)


def check_vector_lanes(func: PrimFunc) -> None:
    for s, _ in scoped(func):
        if isinstance(s, (Store, IfThenElse)) or isinstance(s, For):
            for e in top_exprs(s):
                _lanes_agree(e, 1, s)
        elif isinstance(s, VStore):
            _lanes_agree(s.index, 1, s)
            _lanes_agree(s.value, lanes_of(s.value), s)
        elif isinstance(s, VScatter):
            for i in s.indices:
                _lanes_agree(i, 1, s)
            _lanes_agree(s.value, len(s.indices), s)
        elif isinstance(s, VAssign):
            _lanes_agree(s.value, s.var.lanes, s)
        elif isinstance(s, VDecl):
            for v, init in s.decls:
                if init is not None:
                    _lanes_agree(init, v.lanes, s)


_SAME_LANES = (VBinary, VFma, VCall, VCast, VCompare, VBlend)


def _lanes_agree(e: Expr, want: int, s, seen: set | None = None) -> None:
    """e has `want` lanes, and so does every operand of a vector op (scalar ops take scalars)."""
    seen = set() if seen is None else seen
    if (id(e), want) in seen:
        return
    seen.add((id(e), want))
    got = lanes_of(e)
    if got != want:
        buffer = getattr(s, "buffer", "")
        raise VerifyError("check_vector_lanes", f"{type(e).__name__} has {got} lanes where {want} are needed, in "
                          f"{type(s).__name__} {buffer}".rstrip(), buffer, getattr(s, "index", None))
    if isinstance(e, _SAME_LANES):
        kids = [(k, got) for k in vchildren(e)]
    elif isinstance(e, VSelect):
        kids = [(e.cond, 1), (e.t, got), (e.f, got)]
    elif isinstance(e, (Broadcast, VLoad)):
        kids = [(vchildren(e)[0], 1)]
    elif isinstance(e, VReduce):
        kids = [(e.value, lanes_of(e.value))]
    elif isinstance(e, VLanes):
        kids = [(k, 1) for k in e.elems]
    else:  # a scalar node: scalar operands
        kids = [(k, 1) for k in vchildren(e)]
    for k, n in kids:
        _lanes_agree(k, n, s, seen)


def _walk(e: Expr, seen: set | None = None):
    """Every distinct node of e (shared subtrees once), pre-order."""
    seen, stack = (set() if seen is None else seen), [e]
    while stack:
        n = stack.pop()
        if id(n) not in seen:
            seen.add(id(n))
            yield n
            stack.extend(reversed(vchildren(n)))


CHECKS = (check_no_nested_parallel, check_allocated_before_use, check_loop_vars_scoped, check_in_bounds,
          check_vector_lanes)


def verify(func: PrimFunc, after: str = "", checks=CHECKS) -> PrimFunc:
    """Run the checks; VerifyError on the first that fails (its message says after which pass)."""
    for check in checks:
        try:
            check(func)
        except VerifyError as e:
            if after:
                raise VerifyError(e.check, f"{str(e).split(': ', 1)[1]} (after {after})", e.buffer, e.index) from None
            raise
    return func


__all__ = ["VerifyError", "verify", "verify_requested", "CHECKS", "check_no_nested_parallel",
           "check_allocated_before_use", "check_loop_vars_scoped", "check_in_bounds", "check_vector_lanes"]
