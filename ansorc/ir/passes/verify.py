"""IR invariants, one named `check_*` function each, for the lowered program at any stage (scalar or vector IR).

    check_no_nested_parallel    no parallel loop inside another
    check_allocated_before_use  every buffer accessed is an argument or allocated around it, every register declared
    check_loop_vars_scoped      every variable used is an enclosing loop's; no loop reuses an outer loop's variable
    check_in_bounds             every access is provably inside its buffer, from the loop extents alone or
                                from the conditions guarding it (an enclosing `if`, or the taken arm of a select);
                                a masked load's lanes each under its mask (intervals.py does the arithmetic)
    check_vector_lanes          vector operands agree on their lane counts; scalars stay scalar

`verify(func)` runs them all, after every pass when ANSORC_VERIFY=1 (the tests do); a failure raises VerifyError (a
ScheduleError) naming the check, and the buffer and index where it applies.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace

from ..program.expr import Binary, Compare, Expr, Logic, Read, Select, Var
from ..program.simplify import bound
from ..schedule.state import ScheduleError
from ..lowering.stmt import Allocate, For, IfThenElse, PrimFunc, Store
from .intervals import EMPTY, Scope, distinct_nodes, facts_of, interval, scope_facts, unreachable
from .vector import (Broadcast, VAssign, VBinary, VBlend, VCall, VCast, VCompare, VDecl, VDot, VFma, VLanes, VLoad,
                     VMaskLoad, VPrefetch, VReduce, VScatter, VSelect, VStore, VTranspose, VVar, lanes_of, stmt_kids,
                     top_exprs, vchildren)


class VerifyError(ScheduleError):
    """An IR invariant does not hold: `check` names it; `buffer` and `index` say where, when it is an access."""

    def __init__(self, check: str, message: str, buffer: str = "", index=None):
        self.check, self.buffer, self.index = check, buffer, index
        super().__init__(f"{check}: {message}")


def verify_requested() -> bool:
    """ANSORC_VERIFY=1: verify the program after every pass (slower; the tests turn it on)."""
    return os.environ.get("ANSORC_VERIFY", "") == "1"


# ----------------------------------------------------------------------------- scopes

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


# ----------------------------------------------------------------------------- accesses

@dataclass(frozen=True)
class Access:
    kind: str         # "read" | "store"
    buffer: str
    indices: tuple    # one per dimension; or a single flat index when flat
    lanes: int        # elements from the (flat) index on
    flat: bool
    facts: tuple      # guards from selects around the access, beyond those of the statement's scope
    lane: int = 0     # a masked load's lanes: the index reads MASK_LANE, in [0, lane), where the facts allow


MASK_LANE = "ansorc.lane"   # not a C identifier: no loop variable has this name


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
        elif isinstance(e, VMaskLoad):   # lane l is read only where lo <= l < hi
            lane = Var(MASK_LANE)
            kept = facts_of(Logic("&&", Compare(">=", lane, e.lo), Compare("<", lane, e.hi)))
            yield Access("read", e.buffer, (Binary("+", e.index, lane, "int32"),), 1, True, facts + kept, e.lanes)
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
        regs += [n for e in top_exprs(s) for n in distinct_nodes(e) if isinstance(n, VVar)]
        for r in regs:
            if r.name not in sc.registers:
                raise VerifyError("check_allocated_before_use", f"register {r.name} used outside its declaration",
                                  r.name)


def check_loop_vars_scoped(func: PrimFunc) -> None:
    for s, sc in scoped(func):
        if isinstance(s, For) and s.var in sc.bounds:
            raise VerifyError("check_loop_vars_scoped", f"loop {s.var} reuses the variable of a loop around it")
        for e in top_exprs(s):
            for n in distinct_nodes(e):
                if isinstance(n, Var) and n.name not in sc.bounds:
                    where = next((_where(a) for a in expr_accesses(e) if any(
                        v.name == n.name for i in a.indices for v in distinct_nodes(i) if isinstance(v, Var))), repr(e))
                    raise VerifyError("check_loop_vars_scoped", f"{n.name} is used outside its loop, in {where}",
                                      index=n.name)


def check_in_bounds(func: PrimFunc) -> None:
    for s, scope in scoped(func):
        for a in stmt_accesses(s):
            sc = replace(scope, bounds={**scope.bounds, MASK_LANE: (0, a.lane - 1)}) if a.lane else scope
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
    elif isinstance(e, VMaskLoad):
        kids = [(k, 1) for k in vchildren(e)]
    elif isinstance(e, VReduce):
        kids = [(e.value, lanes_of(e.value))]
    elif isinstance(e, VDot):   # groups of narrow operands: a has one group, b one per lane
        kids = [(e.acc, got), (e.a, lanes_of(e.a)), (e.b, got * lanes_of(e.a))]
    elif isinstance(e, VLanes):
        kids = [(k, 1) for k in e.elems]
    else:  # a scalar node: scalar operands
        kids = [(k, 1) for k in vchildren(e)]
    for k, n in kids:
        _lanes_agree(k, n, s, seen)


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
