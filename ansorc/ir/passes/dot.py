"""dot_products: G consecutive steps of a narrow-type multiply-add reduction, vectorized along the output's
columns, become one dot-product instruction (VDot; its C is codegen/dot.py's table).

The pattern (what a reduction split by G with the inner G steps unrolled, the columns vectorized, lowers to):

    for t in 0..G-1:                                     # written out, or a loop of G steps around the vector loop
      vectorize j in [0, L):
        [if (cond_t)]  X[x + j] = X[x + j] + acc(a_t) * acc(B[b + G*j + t])

a_t lane-invariant (the broadcast operand, one per step), B laid out with the G steps of a column together (a
grouped CacheRead: steps.CacheRead.group) and X's lanes contiguous. Lane j then adds the dot product of the G
values a_0..a_{G-1} with B's G consecutive elements b + G*j .. b + G*j + G-1: exactly the instruction's operand
layout (4 int8 products or 2 bfloat16 products per 32-bit lane). cond_t (a split's guard on the reduction, lane
invariant) zeroes a_t; the instruction still reads B's whole group, which the grouped copy pads with zeros. Where
every cond_t holds the broadcast group is one load, so the group gets two versions under one test.

Runs before vectorize_loops (which then skips the loops this pass replaced); `offers` maps (broadcast dtype,
vector dtype, accumulator dtype, lanes, group) to the target's instruction (codegen/dot.py: table lookups on the
target's ISA features), so this pass stays target-free. Integer accumulation is exact (wrapping int32, as the
scalar loop); float (bfloat16) products are summed in the instruction's order.
"""
from __future__ import annotations

from dataclasses import replace

from ..lowering.stmt import Allocate, For, IfThenElse, PrimFunc, Seq, Stmt, Store, seq
from ..program.expr import Binary, Cast, Const, Logic, Read, free_vars, select, substitute, walk
from ..program.simplify import linear_form, simplify
from .masks import lane_stride
from .vector import VDot, VLanes, VLoad, VStore, stmt_kids, with_kids
from .vectorize import flat_index


def dot_products(func: PrimFunc, offers: dict) -> PrimFunc:
    if not offers:
        return func
    shapes = {b.name: b.storage for b in func.args}
    return replace(func, body=_Rewriter(shapes, offers).visit(func.body))


class _Rewriter:
    def __init__(self, shapes: dict, offers: dict):
        self.shapes, self.offers, self.bounds = shapes, offers, {}
        self.groups = sorted({k[4] for k in offers}, reverse=True)

    def visit(self, s: Stmt) -> Stmt:
        if not isinstance(s, For):
            return self.visit_in(s)
        outer = self.bounds   # the loops around: a written-out step's guard may hold for all of them
        self.bounds = {**outer, s.var: (0, s.extent - 1)}
        try:
            return self.visit_in(s)
        finally:
            self.bounds = outer

    def visit_in(self, s: Stmt) -> Stmt:
        if isinstance(s, Allocate):
            self.shapes[s.buffer.name] = s.buffer.storage
        if isinstance(s, For) and s.kind in ("serial", "unroll") and s.extent in self.groups:
            out = self.run(_written_out(s))
            if out is not None:
                return out
        if isinstance(s, Seq):
            return seq(*self.runs(list(s.stmts)))
        return with_kids(s, tuple(self.visit(c) for c in stmt_kids(s)))

    def runs(self, stmts: list) -> list:
        out, i = [], 0
        while i < len(stmts):
            for g in self.groups:
                dot = self.run(stmts[i:i + g]) if i + g <= len(stmts) else None
                if dot is not None:
                    out.append(dot)
                    i += g
                    break
            else:
                out.append(self.visit(stmts[i]))
                i += 1
        return out

    def run(self, stmts: list) -> Stmt | None:
        """One dot-product statement for G matching steps (module docstring), or None."""
        steps = [self.step(s) for s in stmts]
        if not steps or any(x is None for x in steps):
            return None
        g, first = len(steps), steps[0]
        x, xi, _, _, b, bi, (lanes, stride), key = first
        name = self.offers.get((*key, lanes, g))
        if name is None or stride != g:
            return None
        for t, (x2, xi2, _, _, b2, bi2, shape2, key2) in enumerate(steps):
            if (x2, b2, shape2, key2) != (x, b, (lanes, stride), key) or _offset(xi, xi2) != 0 or _offset(bi, bi2) != t:
                return None
        acc_dtype = key[2]
        bcast = [a for _, _, _, a, _, _, _, _ in steps]
        conds = [c for _, _, c, _, _, _, _, _ in steps if c is not None]

        def dot(group) -> Stmt:
            value = VDot(name, VLoad(x, xi, lanes, acc_dtype), group, VLoad(b, bi, lanes * g, key[1]), lanes,
                         acc_dtype)
            return VStore(x, xi, value)
        fast = dot(self.group_of(bcast, key[0]))
        all_conds = [c for _, _, c, _, _, _, _, _ in steps]
        if all(c == all_conds[0] for c in all_conds):   # none, or one guard of the whole group (a row's overhang)
            return fast if all_conds[0] is None else IfThenElse(all_conds[0], fast)
        if all_conds[0] is not None:
            # only the later steps guarded (a reduction's tail): the first step's accesses show X's index and B's
            # group in range, so leaving a step out can be zeroing its broadcast element; else a guard may keep
            # an index in range, and the group stays with the vectorizer
            return None
        every = conds[0]
        for c in conds[1:]:
            every = Logic("&&", every, c)
        guarded = [a if c is None else select(c, a, Const(0, key[0]))
                   for a, (_, _, c, _, _, _, _, _) in zip(bcast, steps)]
        return seq(IfThenElse(every, fast, version=True),
                   IfThenElse(Logic("!", every), dot(VLanes(tuple(guarded), key[0])), version=True))

    def group_of(self, bcast: list, dtype: str):
        """The broadcast group: one load where its elements are consecutive reads of one buffer, else per element."""
        if all(isinstance(a, Read) and a.name == bcast[0].name and a.name in self.shapes for a in bcast):
            flats = [simplify(flat_index(a.indices, self.shapes[a.name])) for a in bcast]
            if all(_offset(flats[0], f) == t for t, f in enumerate(flats)):
                return VLoad(bcast[0].name, flats[0], len(bcast), dtype)
        return VLanes(tuple(bcast), dtype)

    def step(self, s: Stmt):
        """(X, X's flat index at lane 0, guard or None, broadcast scalar, B, B's flat index at lane 0, (lanes,
        B's lane stride), (broadcast dtype, B's dtype, X's dtype)) of one step, or None."""
        if not (isinstance(s, For) and s.kind == "vectorize"):
            return None
        lane, body, cond = s.var, s.body, None
        if isinstance(body, IfThenElse) and not (body.skip or body.prepare or body.version):
            cond, body = simplify(body.cond, self.bounds), body.then
            if isinstance(cond, Const):   # always true here (or never: then leave it)
                cond = None if cond.value else Const(0, "bool")
            if lane in free_vars(cond):
                return None
        if not isinstance(body, Store) or body.buffer not in self.shapes:
            return None
        x = body.buffer
        xi = simplify(flat_index(body.indices, self.shapes[x]))
        prod = _added_to(body.value, x, body.indices)
        if prod is None or lane_stride(xi, lane) != 1:
            return None
        ops = _product(prod, body.value.dtype)
        if ops is None:
            return None
        for a, v in (ops, ops[::-1]):
            if lane in free_vars(a) or not isinstance(v, Read) or v.name not in self.shapes or v.name == x or \
                    any(isinstance(r, Read) and r.name == x for r in walk(a)):   # the sum must not read itself
                continue
            bi = simplify(flat_index(v.indices, self.shapes[v.name]))
            stride = lane_stride(bi, lane)
            if stride not in self.groups:
                continue
            at0 = {lane: Const(0, "int32")}
            return (x, simplify(substitute(xi, at0)), cond, a, v.name, simplify(substitute(bi, at0)),
                    (s.extent, stride), (a.dtype, v.dtype, body.value.dtype))
        return None


def _written_out(f: For) -> list:
    """A loop of G steps as its G bodies."""
    return [substitute_stmt(f.body, {f.var: Const(t, "int32")}) for t in range(f.extent)]


def substitute_stmt(s: Stmt, mapping: dict) -> Stmt:
    if isinstance(s, Store):
        return Store(s.buffer, tuple(simplify(substitute(i, mapping)) for i in s.indices),
                     simplify(substitute(s.value, mapping)))
    if isinstance(s, IfThenElse):
        return replace(s, cond=simplify(substitute(s.cond, mapping)), then=substitute_stmt(s.then, mapping))
    if isinstance(s, For):
        return replace(s, body=substitute_stmt(s.body, mapping))
    if isinstance(s, Seq):
        return seq(*[substitute_stmt(c, mapping) for c in s.stmts])
    return s


def _added_to(value, x: str, indices: tuple):
    """p where value is X[indices] + p (either order), else None."""
    if not (isinstance(value, Binary) and value.op == "+"):
        return None
    for acc, p in ((value.a, value.b), (value.b, value.a)):
        if isinstance(acc, Read) and acc.name == x and tuple(acc.indices) == tuple(indices):
            return p
    return None


def _product(p, dtype: str):
    """(a, b) where p is cast(a) * cast(b) to dtype from narrower types, else None."""
    if not (isinstance(p, Binary) and p.op == "*" and p.dtype == dtype):
        return None
    if not all(isinstance(o, Cast) and o.dtype == dtype for o in (p.a, p.b)):
        return None
    return p.a.value, p.b.value


def _offset(base, e) -> int | None:
    """e - base when it is a constant, else None."""
    d = linear_form(simplify(Binary("-", e, base, "int32")))
    return d[1] if not d[0] else None


__all__ = ["dot_products"]
