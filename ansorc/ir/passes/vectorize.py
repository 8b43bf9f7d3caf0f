"""vectorize_loops: `For(kind="vectorize")` loops -> vector IR (vector.py), for a given set of vector types.

A loop `for v in [0, E)` is cut into pieces of the widest available lane counts, widest first (16 + 8 + 4 on
AVX-512 float32: E = 28 -> 16, 8, 4); what is left (< the narrowest width) runs as scalar code. Inside a piece,
v == base + l with lane l in [0, L), and every expression is classified by how it depends on l:
  - not at all           -> Broadcast (a loop-invariant value)
  - flat index stride 1  -> VLoad / VStore (contiguous)
  - anything else        -> VLanes / VScatter (one scalar expression or store per lane: gathers, scatters)
A read through a checked index (one read from data) that changes with the lane is always per lane, each lane
checking its own index; one that is the same for every lane (a gathered row, `A[checked(B[i]), j]` along j) is
checked and clamped once as a scalar, so the contiguous load of the row stays inside the tensor.
Arithmetic with an intrinsic becomes VBinary/VCall/VCast, `a*b + c` becomes VFma; a select on one float comparison
that differs per lane becomes VBlend of a VCompare mask when evaluating both arms is safe (a built-in erf's
branches); a guarded contiguous read whose condition bounds the lane's range (a split's overhang) is a masked load
(masks.py), the loop versioned so that iterations where no lane is masked load plainly; everything else is
computed per lane. A store to a lane-invariant element of the form `x = x op y`
is a reduction: `x = x op VReduce(op, y)`.
A guard that depends on the lane takes the vector path when it holds for every lane (it must be a conjunction of
affine comparisons, so testing the first and last lane is enough) and a scalar loop otherwise. Whatever cannot be
vectorized (other guards, nested allocations, parallel loops) leaves the whole loop scalar.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..program.expr import (Binary, Call, Cast, CheckedIndex, Compare, Const, Expr, Logic, Read, Select, Var, free_vars,
                            reads, substitute, walk)
from ..program.simplify import simplify
from ..lowering.stmt import Allocate, For, IfThenElse, PrimFunc, Seq, Stmt, Store, seq, walk_stmt
from .masks import convex, eager_safe, lane_range, lane_stride, reads_nothing, versioned, zero_fill
from .vector import (Broadcast, VAssign, VBinary, VBlend, VCall, VCast, VCompare, VDecl, VFma, VLanes, VLoad, VMaskLoad,
                     VReduce, VScatter, VSelect, VStore, VVar, identifiers, map_exprs)

MAX_UNROLLED_PIECES = 8      # more pieces of one width than this become a loop over pieces
MAX_SCALAR_REPLICAS = 4      # a scalar remainder this short is written out instead of looped
REDUCE_OPS = ("+", "*", "min", "max")
_IDENTITY = {"+": 0.0, "*": 1.0, "min": float("inf"), "max": float("-inf")}
ACCUMULATORS = 4             # vector accumulators of a folding loop (add/max latency 4 cycles, 2 ports)


CMP_NAMES = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne"}


@dataclass(frozen=True)
class VectorCaps:
    """What the target offers: vector types as (dtype, lanes) and operations as (op, dtype, lanes)."""
    types: frozenset = frozenset()
    ops: frozenset = frozenset()
    registers: int = 16      # architectural vector registers (register promotion budget)

    def widths(self, dtype: str) -> tuple:
        return tuple(sorted((n for d, n in self.types if d == dtype), reverse=True))

    def has(self, op: str, dtype: str, lanes: int) -> bool:
        return (op, dtype, lanes) in self.ops


class Unvectorizable(Exception):
    """The loop (or a piece of it) has no vector form; the caller keeps it scalar."""


def flat_index(indices: tuple, shape: tuple) -> Expr:
    flat, stride = None, 1
    for idx, n in zip(reversed(indices), reversed(shape)):
        term = idx if stride == 1 else Binary("*", idx, Const(stride, "int32"), "int32")
        flat = term if flat is None else Binary("+", term, flat, "int32")
        stride *= n
    return Const(0, "int32") if flat is None else flat


class _Piece:
    """One group of `lanes` consecutive iterations: v == base + l."""

    def __init__(self, vec: "_Vectorizer", lane: str, lanes: int, bounds: dict):
        self.vec, self.lane, self.lanes = vec, lane, lanes
        self.bounds = dict(bounds)
        self.bounds[lane] = (0, lanes - 1)

    def at(self, e: Expr, k: int) -> Expr:
        return simplify(substitute(e, {self.lane: Const(k, "int32")}), self.bounds)

    def varies(self, e: Expr) -> bool:
        return self.lane in free_vars(e)

    def need_type(self, dtype: str):
        if (dtype, self.lanes) not in self.vec.caps.types:
            raise Unvectorizable(f"no {dtype} x{self.lanes} vector type")

    def per_lane(self, e: Expr) -> Expr:
        self.need_type(e.dtype)
        return VLanes(tuple(self.at(e, k) for k in range(self.lanes)), e.dtype)

    # ------------------------------------------------------------------ expressions
    def expr(self, e: Expr) -> Expr:
        if not self.varies(e):
            self.need_type(e.dtype)
            return Broadcast(e, self.lanes, e.dtype)
        try:
            method = _EXPR.get(type(e))
            out = method(self, e) if method is not None else None
        except Unvectorizable:
            out = None
        return out if out is not None else self.per_lane(e)

    def _has(self, op: str, dtype: str) -> bool:
        return self.vec.caps.has(op, dtype, self.lanes)

    def read(self, e: Read) -> Expr | None:
        if any(isinstance(n, CheckedIndex) and self.varies(n) for i in e.indices for n in walk(i)):
            return None  # an index read from data: each lane checks (and clamps) its own, as scalar code
        flat = simplify(flat_index(e.indices, self.vec.shape(e.name)), self.bounds)
        if lane_stride(flat, self.lane) == 1 and self._has("load", e.dtype):
            return VLoad(e.name, self.at(flat, 0), self.lanes, e.dtype)
        return None  # strided or gathered: per lane

    def binary(self, e: Binary) -> Expr | None:
        if e.op == "/" and e.dtype.startswith("float") and not self.varies(e.b) and self._has("*", e.dtype):
            # one division per piece and a multiply per lane (vdivps is ~20x a vmulps); like -freciprocal-math,
            # up to 1 ulp apart from x / y
            recip = Broadcast(Binary("/", Const(1.0, e.dtype), e.b, e.dtype), self.lanes, e.dtype)
            return VBinary("*", self.expr(e.a), recip, self.lanes, e.dtype)
        if not self._has(e.op, e.dtype):
            return None
        a, b = self.expr(e.a), self.expr(e.b)
        if e.op == "+" and self._has("fma", e.dtype):
            for m, c in ((a, b), (b, a)):
                if isinstance(m, VBinary) and m.op == "*":
                    return VFma(m.a, m.b, c, self.lanes, e.dtype)
        return VBinary(e.op, a, b, self.lanes, e.dtype)

    def call(self, e: Call) -> Expr | None:
        if e.name == "sigmoid" and not self._has("sigmoid", e.dtype) and self._has("exp", e.dtype) \
                and self._has("/", e.dtype):
            # 1 / (1 + exp(-x)) on the vector exp, not expf per lane (SiLU = x * sigmoid(x) is in every
            # EfficientNet block); the scalar sigmoid is the same formula (codegen/c.py)
            one = Const(1.0, e.dtype)
            neg = Binary("-", Const(0.0, e.dtype), e.args[0], e.dtype)
            return self.expr(Binary("/", one, Binary("+", one, Call("exp", (neg,), e.dtype), e.dtype), e.dtype))
        if not self._has(e.name, e.dtype):
            return None
        return VCall(e.name, tuple(self.expr(a) for a in e.args), self.lanes, e.dtype)

    def cast(self, e: Cast) -> Expr | None:
        if not self._has(f"cvt_from_{e.value.dtype}", e.dtype):
            return None
        return VCast(self.expr(e.value), self.lanes, e.dtype)

    def select(self, e: Select) -> Expr | None:
        if self.varies(e.cond) and convex(e.cond, self.lane):
            every = simplify(Logic("&&", self.at(e.cond, 0), self.at(e.cond, self.lanes - 1)), self.bounds)
            if isinstance(every, Const) and every.value:  # true for every lane of every execution
                return self.expr(e.t)
        if self.varies(e.cond):
            # else per lane, which keeps the arms lazy (padding reads may be out of bounds)
            out = self.blend(e)
            return out if out is not None else self.masked(e)
        return VSelect(e.cond, self.expr(e.t), self.expr(e.f), self.lanes, e.dtype)

    def masked(self, e: Select) -> Expr | None:
        """A contiguous read guarded by a condition on the lane's range, as a load of the lanes it keeps (the
        others take the lane-invariant false arm): masks.py; where the table has such a load."""
        ld = self.read(e.t) if isinstance(e.t, Read) else None
        if not isinstance(ld, VLoad) or self.varies(e.f) or not reads_nothing(e.f) or \
                not self._has("maskload" if zero_fill(e.f) else "maskload_fill", e.dtype):
            return None
        rng = lane_range(e.cond, self.lane, self.lanes, lambda x: self.at(x, 0))
        if rng is None:
            return None
        out = VMaskLoad(ld.buffer, ld.index, rng[0], rng[1], e.f, self.lanes, e.dtype)
        self.vec.masked += 1
        return out if rng[2] is None else VSelect(rng[2], out, self.expr(e.f), self.lanes, e.dtype)

    def blend(self, e: Select) -> Expr | None:
        """A condition that differs per lane, as a mask and a blend of both arms, both evaluated: only where that
        reads nothing the scalar code would not (see _eager_safe) and the condition is one float comparison."""
        c = e.cond
        if not (isinstance(c, Compare) and c.a.dtype == c.b.dtype == e.dtype and eager_safe(e)
                and self._has(f"cmp_{CMP_NAMES[c.op]}", e.dtype) and self._has("blend", e.dtype)):
            return None
        mask = VCompare(c.op, self.expr(c.a), self.expr(c.b), self.lanes, e.dtype)
        return VBlend(mask, self.expr(e.t), self.expr(e.f), self.lanes, e.dtype)

    # ------------------------------------------------------------------ statements
    def stmt(self, s: Stmt) -> Stmt | None:
        if isinstance(s, Seq):
            return seq(*[self.stmt(c) for c in s.stmts])
        if isinstance(s, Store):
            return self.store(s)
        if isinstance(s, IfThenElse):
            return self.guard(s)
        if isinstance(s, For) and s.kind in ("serial", "unroll"):
            self.bounds[s.var] = (0, s.extent - 1)  # loop names are unique within a function
            body = self.stmt(s.body)
            return None if body is None else replace(s, body=body)
        raise Unvectorizable(f"{type(s).__name__} ({getattr(s, 'kind', '')}) inside a vectorized loop")

    def store(self, s: Store) -> Stmt:
        buf = self.vec.buffers[s.buffer]
        flat = simplify(flat_index(s.indices, buf.storage), self.bounds)
        value = simplify(s.value, self.bounds)
        self.need_type(buf.dtype)
        stride = lane_stride(flat, self.lane)
        if stride == 0:
            return self.reduction(s, flat, value)
        if stride == 1 and self._has("store", buf.dtype):
            return VStore(s.buffer, self.at(flat, 0), self.expr(value))
        return VScatter(s.buffer, tuple(self.at(flat, k) for k in range(self.lanes)), self.expr(value))

    def reduction(self, s: Store, flat: Expr, value: Expr) -> Stmt:
        """x = x op y over the lanes: x = x op reduce(op, y)."""
        dtype = self.vec.buffers[s.buffer].dtype
        if not (isinstance(value, Binary) and value.op in REDUCE_OPS and isinstance(value.a, Read)
                and value.a.name == s.buffer and self._has(f"reduce_{value.op}", dtype)):
            raise Unvectorizable("a lane-invariant store that is not a reduction")
        me = value.a
        mflat = simplify(flat_index(me.indices, self.vec.shape(me.name)), self.bounds)
        if self.varies(mflat) or mflat != flat or any(r.name == s.buffer for r in reads(value.b)):
            raise Unvectorizable("a reduction whose operand reads its own accumulator")
        total = VReduce(value.op, self.expr(value.b), dtype)
        return Store(s.buffer, tuple(self.at(i, 0) for i in s.indices), Binary(value.op, self.at(me, 0), total, dtype))

    def guard(self, s: IfThenElse) -> Stmt | None:
        cond = simplify(s.cond, self.bounds)
        if isinstance(cond, Const):
            return self.stmt(s.then) if cond.value else None
        if not self.varies(cond):
            body = self.stmt(s.then)
            return None if body is None else replace(s, cond=cond, then=body)
        if not convex(cond, self.lane):
            raise Unvectorizable(f"guard {cond!r} is not a conjunction of affine comparisons in the lane")
        every = simplify(Logic("&&", self.at(cond, 0), self.at(cond, self.lanes - 1)), self.bounds)
        fallback = For(self.lane, self.lanes, "serial", IfThenElse(cond, s.then))
        body = self.stmt(s.then)
        if isinstance(every, Const):  # decided for every execution: one path is dead
            return body if every.value else fallback
        if body is None:
            return fallback
        return seq(IfThenElse(every, body), IfThenElse(Logic("!", every), fallback))


_EXPR = {Read: _Piece.read, Binary: _Piece.binary, Call: _Piece.call, Cast: _Piece.cast, Select: _Piece.select}


class _Vectorizer:
    def __init__(self, func: PrimFunc, caps: VectorCaps):
        self.caps = caps
        self.buffers = {b.name: b for b in func.args}
        self.names = identifiers(func)
        self.masked = 0          # masked loads made so far

    def shape(self, name: str) -> tuple:
        return self.buffers[name].storage

    def fresh(self, base: str) -> str:
        name, k = base, 0
        while name in self.names:
            k += 1
            name = f"{base}{k}"
        self.names.add(name)
        return name

    def visit(self, s: Stmt, bounds: dict) -> Stmt:
        if isinstance(s, Seq):
            return seq(*[self.visit(c, bounds) for c in s.stmts])
        if isinstance(s, Allocate):
            self.buffers[s.buffer.name] = s.buffer
            return Allocate(s.buffer, self.visit(s.body, bounds))
        if isinstance(s, IfThenElse):
            return replace(s, then=self.visit(s.then, bounds))
        if isinstance(s, For):
            inner = dict(bounds)
            inner[s.var] = (0, s.extent - 1)
            if s.kind == "vectorize":
                return self.loop(s, bounds)
            return replace(s, body=self.visit(s.body, inner))
        return s

    def loop(self, f: For, bounds: dict) -> Stmt:
        allocs = [x.buffer for x in _all(f.body) if isinstance(x, Allocate)]  # stages computed at this loop
        self.buffers.update((b.name, b) for b in allocs)
        stores = [self.buffers[x.buffer].dtype for x in _stores(f.body)]
        widths = self.caps.widths(stores[0]) if stores else ()
        if widths and f.extent >= widths[-1] and not allocs:
            try:
                masked = self.masked
                out = self.pieces(f, bounds, widths)
                return versioned(out, bounds) if self.masked > masked else out
            except Unvectorizable:
                pass
        inner = dict(bounds)
        inner[f.var] = (0, f.extent - 1)
        return _scalar(replace(f, body=self.visit(f.body, inner)))  # nested vectorize loops still get their turn

    def pieces(self, f: For, bounds: dict, widths: tuple) -> Stmt:
        reduced = self.reduce_loop(f, bounds, widths[0])
        if reduced is not None:
            return reduced
        out, pos = [], 0
        lane = self.fresh(f.var + "_l")
        for w in widths:
            n = (f.extent - pos) // w
            if n == 0:
                continue
            if n > MAX_UNROLLED_PIECES:  # a loop over pieces: v == pos + w*c + l
                c = self.fresh(f.var + "_c")
                inner = dict(bounds)
                inner[c] = (0, n - 1)
                base = Binary("+", Binary("*", Var(c), Const(w, "int32"), "int32"), Const(pos, "int32"), "int32")
                out.append(For(c, n, "serial", self.piece(f, base, lane, w, inner)))
            else:
                out += [self.piece(f, Const(pos + k * w, "int32"), lane, w, bounds) for k in range(n)]
            pos += n * w
        rest = f.extent - pos
        if rest:
            tail = For(f.var, rest, "serial", _shift(f.body, f.var, pos))
            out.append(_replicate(tail) if rest <= MAX_SCALAR_REPLICAS else tail)
        return seq(*out)

    def reduce_loop(self, f: For, bounds: dict, lanes: int) -> Stmt | None:
        """A loop that only folds into one element, `x = x op y(v)`, as vector accumulators (up to ACCUMULATORS,
        so consecutive pieces do not wait on each other) folded horizontally once after the loop; None where the
        loop is not that or has fewer than two full pieces. Per piece, the horizontal fold would cost more than
        the piece itself (a row max over 512 floats; docs/perf-notes.md, "Code generation")."""
        s, n = f.body, f.extent // lanes
        if not (n >= 2 and isinstance(s, Store) and isinstance(s.value, Binary) and s.value.op in REDUCE_OPS
                and self.buffers[s.buffer].dtype.startswith("float")):
            return None
        op, me, dtype = s.value.op, s.value.a, self.buffers[s.buffer].dtype
        if not (isinstance(me, Read) and me.name == s.buffer and me.indices == s.indices
                and f.var not in set().union(*(free_vars(i) for i in s.indices))
                and all(r.name != s.buffer for r in reads(s.value.b))):
            return None
        k = next(a for a in (ACCUMULATORS, 2, 1) if n % a == 0)
        lane = self.fresh(f.var + "_l")
        accs = [VVar(self.fresh(f"{s.buffer}_acc"), lanes, dtype) for _ in range(k)]

        def update(base: Expr, acc: VVar, inner: dict) -> Stmt:
            p = _Piece(self, lane, lanes, inner)
            y = simplify(substitute(s.value.b, {f.var: Binary("+", base, Var(lane), "int32")}), p.bounds)
            return VAssign(acc, VBinary(op, acc, p.expr(y), lanes, dtype))
        if n <= MAX_UNROLLED_PIECES:
            body = seq(*[update(Const(j * lanes, "int32"), accs[j % k], bounds) for j in range(n)])
        else:   # a loop over groups of k pieces: v == (k*c + j) * lanes + l
            c = self.fresh(f.var + "_c")
            inner = dict(bounds)
            inner[c] = (0, n // k - 1)
            group = Binary("*", Var(c), Const(k * lanes, "int32"), "int32")
            body = For(c, n // k, "serial", seq(*[update(Binary("+", group, Const(j * lanes, "int32"), "int32"),
                                                         accs[j], inner) for j in range(k)]))
        folds = [VAssign(accs[0], VBinary(op, accs[0], a, lanes, dtype)) for a in accs[1:]]
        total = Store(s.buffer, s.indices, Binary(op, me, VReduce(op, accs[0], dtype), dtype))
        rest = f.extent - n * lanes
        tail = self.loop(For(f.var, rest, f.kind, _shift(s, f.var, n * lanes)), bounds) if rest else None
        ident = Const(_IDENTITY[op], dtype)
        return seq(VDecl(tuple((a, Broadcast(ident, lanes, dtype)) for a in accs), seq(body, *folds, total)), tail)

    def piece(self, f: For, base: Expr, lane: str, lanes: int, bounds: dict) -> Stmt:
        p = _Piece(self, lane, lanes, bounds)
        v = Binary("+", base, Var(lane), "int32")
        body = _subst_stmt(f.body, {f.var: v})
        return p.stmt(body) or Seq(())


def _stores(s: Stmt) -> list:
    return [x for x in _all(s) if isinstance(x, Store)]


def _all(s: Stmt):
    return walk_stmt(s)  # iterative, pre-order


def _subst_stmt(s: Stmt, mapping: dict) -> Stmt:
    if isinstance(s, Seq):
        return seq(*[_subst_stmt(c, mapping) for c in s.stmts])
    if isinstance(s, For):
        return replace(s, body=_subst_stmt(s.body, mapping))
    if isinstance(s, IfThenElse):
        return replace(s, cond=substitute(s.cond, mapping), then=_subst_stmt(s.then, mapping))
    if isinstance(s, Store):
        return Store(s.buffer, tuple(substitute(i, mapping) for i in s.indices), substitute(s.value, mapping))
    if isinstance(s, Allocate):
        return Allocate(s.buffer, _subst_stmt(s.body, mapping))
    return s


def _shift(body: Stmt, var: str, offset: int) -> Stmt:
    if not offset:
        return body
    return _subst_stmt(body, {var: Binary("+", Var(var), Const(offset, "int32"), "int32")})


def _replicate(f: For) -> Stmt:
    return seq(*[map_exprs(_subst_stmt(f.body, {f.var: Const(k, "int32")}), simplify) for k in range(f.extent)])


def _scalar(f: For) -> Stmt:
    """The loop as plain scalar code. `#pragma omp simd` (kind vectorize) only where no iteration writes an element
    another iteration writes too (a reduction under that pragma would be a data race) and no loop inside it is
    parallel or SIMD itself (OpenMP forbids nesting those in a simd region)."""
    lane_invariant = any(f.var not in set().union(*(free_vars(i) for i in x.indices)) for x in _stores(f.body))
    nested = any(x is not f and (isinstance(x, For) and x.kind in ("vectorize", "parallel") or
                                 not isinstance(x, (For, Seq, Store, IfThenElse, Allocate))) for x in _all(f))
    return replace(f, kind="serial") if lane_invariant or nested else f


def vectorize_loops(func: PrimFunc, caps: VectorCaps) -> PrimFunc:
    """Every `vectorize` loop becomes vector IR where the target's types allow, else stays a scalar loop."""
    body = _Vectorizer(func, caps).visit(func.body, {})
    return replace(func, body=body)


__all__ = ["vectorize_loops", "VectorCaps", "Unvectorizable", "flat_index", "lane_stride"]
