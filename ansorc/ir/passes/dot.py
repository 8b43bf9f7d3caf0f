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

A vector loop narrower than the instruction (an output tile's last columns, N not a multiple of the lanes) still
becomes one instruction where the extra lanes are safe (`_widened`): X a buffer of the kernel's own whose rows
then get `row_pad` room for the whole vector (the extra lanes' sums land there and are never read), and B's whole
group of lanes inside its storage (the grouped copy is zero past N, so they add zeros; any value would do, as
nothing reads them). Bit-exact: the real lanes compute what they did.

Runs before vectorize_loops (which then skips the loops this pass replaced); `offers` maps (broadcast dtype,
vector dtype, accumulator dtype, lanes, group) to the target's instruction (codegen/dot.py: table lookups on the
target's ISA features), so this pass stays target-free. Integer accumulation is exact (wrapping int32, as the
scalar loop); float (bfloat16) products are summed in the instruction's order.
"""
from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

from ..lowering.stmt import Allocate, Buffer, For, IfThenElse, PrimFunc, Seq, Stmt, Store, seq
from ..program.expr import Binary, Cast, Compare, Const, Expr, Logic, Read, free_vars, select, substitute, walk
from ..program.simplify import bound, linear_form, simplify
from .masks import lane_stride
from .vector import VDot, VLanes, VLoad, VStore, stmt_kids, top_exprs, vwalk, walk_all, with_kids
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
        self.own: dict = {}    # buffers the kernel allocates (name -> Buffer): their rows may grow
        self.pads: dict = {}   # name -> row_pad a widened instruction needs there

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
            return self.allocate(s)
        if isinstance(s, For) and s.body is None:   # a step whose guard never holds, simplified away: no work
            return None
        if isinstance(s, For) and s.kind in ("serial", "unroll") and s.extent <= self.groups[0]:
            out = self.whole(s)
            if out is not None:
                return out
        if isinstance(s, Seq):
            return seq(*self.runs(list(s.stmts)))
        return with_kids(s, tuple(self.visit(c) for c in stmt_kids(s)))

    def allocate(self, s: Allocate) -> Stmt:
        """The body rewritten; where a widened instruction needs longer rows, the rows padded and the body
        rewritten again (its flat indices are taken over the padded rows)."""
        buf = self.take(s.buffer)
        body = self.visit(s.body)
        pad = self.pads.pop(buf.name, 0)
        if pad > buf.row_pad:
            buf = self.take(replace(buf, row_pad=pad))
            body = self.visit(s.body)
            self.pads.pop(buf.name, None)
        return Allocate(buf, body)

    def take(self, buf: Buffer) -> Buffer:
        """buf as one of the kernel's own buffers, at its (maybe padded) storage."""
        self.shapes[buf.name], self.own[buf.name] = buf.storage, buf
        return buf

    def whole(self, s: For) -> Stmt | None:
        """A loop of steps left a loop (not unrolled): one dot-product statement for all of them, or None."""
        steps = _written_out(s)
        return next((out for g in self.groups if s.extent <= g and (out := self.run(steps, g)) is not None), None)

    def runs(self, stmts: list) -> list:
        out, i = [], 0
        while i < len(stmts):
            for g, n in self.sizes():
                dot = self.run(stmts[i:i + n], g) if i + n <= len(stmts) else None
                if dot is not None:
                    out.append(dot)
                    i += n
                    break
            else:
                out.append(self.visit(stmts[i]))
                i += 1
        return out

    def sizes(self) -> list:
        """(group, steps) to try at a statement: whole groups first, then a reduction shorter than one (K < G)."""
        return [(g, g) for g in self.groups] + [(g, n) for g in self.groups for n in range(g - 1, 0, -1)]

    def run(self, stmts: list, g: int | None = None) -> Stmt | None:
        """One dot-product statement for up to G matching steps (module docstring), or None. Fewer steps than G
        (a reduction of K < G, or its last steps) zero the broadcast group's missing elements."""
        steps = [self.step(s) for s in stmts]
        if not steps or any(x is None for x in steps):
            return None
        g, first = g or len(steps), steps[0]
        lanes, stride = first.shape
        if stride != g or len(steps) > g:
            return None
        for t, st in enumerate(steps):
            if (st.x, st.b, st.shape, st.key) != (first.x, first.b, first.shape, first.key) or \
                    _offset(first.xi, st.xi) != 0 or _offset(first.bi, st.bi) != t:
                return None
        short = len(steps) < g
        name, lanes = self.instruction(first, g, stmts[0], short or any(st.clipped for st in steps))
        if name is None:
            return None
        x, xi, b, bi, key = first.x, first.xi, first.b, first.bi, first.key
        zeros = [Const(0, key[0])] * (g - len(steps))
        bcast = [st.a for st in steps] + zeros

        def dot(group) -> Stmt:
            value = VDot(name, VLoad(x, xi, lanes, key[2]), group, VLoad(b, bi, lanes * g, key[1]), lanes, key[2])
            return VStore(x, xi, value)
        fast = dot(self.group_of(bcast, key[0]))
        all_conds = [st.cond for st in steps]
        if all(c == all_conds[0] for c in all_conds):   # none, or one guard of the whole group (a row's overhang)
            return fast if all_conds[0] is None else IfThenElse(all_conds[0], fast)
        if all_conds[0] is not None:
            # only the later steps guarded (a reduction's tail): the first step's accesses show X's index and B's
            # group in range, so leaving a step out can be zeroing its broadcast element; else a guard may keep
            # an index in range, and the group stays with the vectorizer
            return None
        conds = [c for c in all_conds if c is not None]
        every = conds[0]
        for c in conds[1:]:
            every = Logic("&&", every, c)
        guarded = [st.a if st.cond is None else select(st.cond, st.a, Const(0, key[0])) for st in steps] + zeros
        return seq(IfThenElse(every, fast, version=True),
                   IfThenElse(Logic("!", every), dot(VLanes(tuple(guarded), key[0])), version=True))

    def instruction(self, first: "_Step", g: int, loop: For, checked: bool) -> tuple:
        """(instruction, its lanes) for a vector loop of first.shape[0] lanes: one of that many, else the
        narrowest wider one. Where `checked` (B's group reaches past the steps, or lanes past a guard) or wider,
        only if the extra reads and writes are safe: B's whole group inside its storage (`_b_fits`), X's rows
        padded for the lanes past them (`_row_pad`); (None, lanes) if not."""
        lanes, key = first.shape[0], first.key
        name = self.offers.get((*key, lanes, g))
        if name is not None and not checked:
            return name, lanes
        fits = sorted(n for (*k, n, gg) in self.offers if tuple(k) == key and gg == g and n >= lanes)
        if not fits or not _b_fits(first.b, first.bi, fits[0] * g, self.shapes, self.bounds):
            return None, lanes
        n = fits[0]
        if n == lanes and not first.clipped:
            return self.offers[(*key, n, g)], n
        pad = _row_pad(loop, n, self.own, self.bounds)
        if pad is None:
            return None, lanes
        self.pads[first.x] = max(self.pads.get(first.x, 0), pad)
        return (self.offers[(*key, n, g)], n) if pad <= self.own[first.x].row_pad else (None, lanes)

    def group_of(self, bcast: list, dtype: str):
        """The broadcast group: one load where its elements are consecutive reads of one buffer, else per element."""
        if all(isinstance(a, Read) and a.name == bcast[0].name and a.name in self.shapes for a in bcast):
            flats = [simplify(flat_index(a.indices, self.shapes[a.name])) for a in bcast]
            if all(_offset(flats[0], f) == t for t, f in enumerate(flats)):
                return VLoad(bcast[0].name, flats[0], len(bcast), dtype)
        return VLanes(tuple(bcast), dtype)

    def step(self, s: Stmt) -> "_Step | None":
        """One step's parts (_Step), or None. A guard on the lane must bound X's row (`_row_guard`): those lanes
        are then computed into the row's padding (clipped)."""
        if not (isinstance(s, For) and s.kind == "vectorize"):
            return None
        lane, body, cond, clipped = s.var, s.body, None, False
        if isinstance(body, IfThenElse) and not (body.skip or body.prepare or body.version):
            cond, body = simplify(body.cond, self.bounds), body.then
            if isinstance(cond, Const):   # always true here (or never: then leave it)
                cond = None if cond.value else Const(0, "bool")
            if lane in free_vars(cond):
                cond, clipped = _row_guard(cond, lane, body, self.own), True
                if cond is False:
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
            return _Step(x, simplify(substitute(xi, at0)), cond, a, v.name, simplify(substitute(bi, at0)),
                         (s.extent, stride), (a.dtype, v.dtype, body.value.dtype), clipped)
        return None


class DotMatch(NamedTuple):
    """What dot_products makes of a loop of steps (match_dot)."""
    instr: str        # the instruction (codegen/dot.py's table)
    lanes: int        # its 32-bit lanes: the vector loop's, or more where the loop is a narrower last tile
    group: int        # products per lane (4 int8, 2 bfloat16)
    word_load: bool   # the broadcast group is one 32-bit load (consecutive elements), else packed one by one
    count: int        # instructions per run of the loop (a guarded tail may take shorter groups, or none)


def match_dot(loop: For, offers: dict, shapes: dict, own: dict | None = None, bounds: dict | None = None,
              unrolled: bool = True) -> DotMatch | None:
    """What dot_products makes of `loop`, a loop of up to G steps around the vector loop as lowering leaves it
    before unrolling (lower(passes=False)), or None: the pass's own code, read-only, for the cost model's
    features (search/features.py). shapes: buffer -> storage; own: the kernel's allocated buffers (name ->
    Buffer, whose rows a widened instruction may pad); bounds: var -> (lo, hi) of the loops around; unrolled:
    whether the unroll pass writes the loop out (the pass then sees a sequence of steps, which shorter groups
    may cover where one whole group does not)."""
    if not offers or not (isinstance(loop, For) and loop.kind in ("serial", "unroll")) or \
            loop.extent > max(k[4] for k in offers) or not _narrow_step(loop.body):   # cheap tests first
        return None
    rw = _Rewriter(dict(shapes), offers)
    rw.bounds = {**(bounds or {}), loop.var: (0, loop.extent - 1)}
    for buf in (own or {}).values():
        rw.take(buf)
    for _ in range(2):   # again with the rows a widened instruction asked for, padded as allocate does
        out = rw.runs(_written_out(loop)) if unrolled else [rw.whole(loop)]
        if not rw.pads:
            break
        for n, pad in rw.pads.items():
            rw.take(replace(rw.own[n], row_pad=max(pad, rw.own[n].row_pad)))
        rw.pads.clear()
    dots = [d for d in map(_first_dot, out) if d is not None]
    if not dots:
        return None
    d = dots[0]
    return DotMatch(d.instr, d.lanes, d.b.lanes // d.lanes, isinstance(d.a, VLoad), len(dots))


def _first_dot(s: Stmt | None) -> VDot | None:
    """The first VDot under s (of a versioned pair, the unguarded group's: one of the two runs)."""
    for st in walk_all(s) if s is not None else ():
        for top in top_exprs(st):
            for e in vwalk(top):
                if isinstance(e, VDot):
                    return e
    return None


def _narrow_step(s: Stmt) -> bool:
    """A vector loop whose store adds a product of two casts to its own buffer (a step's shape, not yet checked)."""
    if not (isinstance(s, For) and s.kind == "vectorize"):
        return False
    st = _store_of(s)
    p = _added_to(st.value, st.buffer, st.indices) if isinstance(st, Store) else None
    return p is not None and _product(p, st.value.dtype) is not None


class _Step(NamedTuple):
    x: str            # the accumulator
    xi: Expr          # its flat index at lane 0
    cond: Expr | None  # the lane-invariant guard
    a: Expr           # the broadcast scalar
    b: str            # the vector operand
    bi: Expr          # its flat index at lane 0
    shape: tuple      # (lanes, B's lane stride)
    key: tuple        # (broadcast dtype, B's dtype, X's dtype)
    clipped: bool     # a guard left some lanes out (X's row ends inside the vector)


def _row_guard(cond: Expr, lane: str, store, own: dict):
    """cond without its conjuncts on the lane, where each of them is `X's last index < X's row length` (lanes
    past the row, which the padded row takes); False where one is anything else (None: nothing left)."""
    parts, rest = _conjuncts(cond), []
    buf = own.get(getattr(store, "buffer", None))
    last = simplify(store.indices[-1]) if buf is not None and store.indices else None
    for c in parts:
        if lane not in free_vars(c):
            rest.append(c)
        elif buf is None or not (isinstance(c, Compare) and c.op == "<" and c.b == Const(buf.shape[-1], "int32")
                                 and simplify(c.a) == last):
            return False
    if not rest:
        return None
    out = rest[0]
    for c in rest[1:]:
        out = Logic("&&", out, c)
    return out


def _conjuncts(c: Expr) -> list:
    if isinstance(c, Logic) and c.op == "&&":
        return _conjuncts(c.a) + _conjuncts(c.b)
    return [c]


def _store_of(s: Stmt) -> Store:
    """The Store of one step (a vector loop around it, maybe a guard between)."""
    body = s.body
    return body.then if isinstance(body, IfThenElse) else body


def _row_pad(s: For, lanes: int, own: dict, bounds: dict) -> int | None:
    """The row_pad X (the step's accumulator) needs for `lanes` lanes from the loop's first, or None where they
    cannot have it: X must be a buffer of the kernel's own (not an argument nor a kept prepared copy) indexed by
    the lane in its last dimension only, from a start >= 0 known over the loops' full ranges."""
    store = _store_of(s)
    buf: Buffer | None = own.get(store.buffer)
    if buf is None or buf.scope == "prepared" or not store.indices:
        return None
    *rows, last = store.indices
    if any(s.var in free_vars(i) for i in rows) or lane_stride(last, s.var) != 1:
        return None
    start = bound(simplify(substitute(last, {s.var: Const(0, "int32")})), bounds)
    if start is None or start[0] < 0:
        return None
    return max(0, start[1] + lanes - buf.shape[-1])


def _b_fits(b: str, bi, elems: int, shapes: dict, bounds: dict) -> bool:
    """Whether `elems` elements of B from flat index bi lie inside its storage at every point of the loops
    around (their full ranges: a proof for every iteration, not only those the guards let run)."""
    got = bound(bi, bounds)
    size = 1
    for n in shapes[b]:
        size *= n
    return got is not None and got[0] >= 0 and got[1] + elems <= size


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


__all__ = ["DotMatch", "dot_products", "match_dot"]
