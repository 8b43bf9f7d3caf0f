"""Vector IR: the nodes the vectorize pass produces and the C renderer maps onto intrinsics.

A vector value has `lanes` elements of `dtype`. Memory is addressed by a flat element index (the buffer's
row-major offset of lane 0); every buffer here is dense, so a contiguous vector is `index .. index+lanes-1`.
These nodes never reach the search: they exist only between `vectorize_loops` and the renderer.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from ..program.expr import Binary, Const, Expr, children as scalar_children, rebuild as scalar_rebuild, transform, walk
from ..lowering.stmt import Allocate, For, IfThenElse, Seq, Stmt, Store, seq


# ----------------------------------------------------------------------------- expressions

@dataclass(frozen=True)
class Broadcast(Expr):
    """A lane-invariant scalar copied to every lane."""
    value: Expr
    lanes: int
    dtype: str


@dataclass(frozen=True)
class VLoad(Expr):
    """buffer[index + k] for k in 0..lanes-1 (contiguous)."""
    buffer: str
    index: Expr
    lanes: int
    dtype: str


@dataclass(frozen=True)
class VMaskLoad(Expr):
    """buffer[index + k] for the lanes lo <= k < hi, `fill` (a lane-invariant scalar that reads nothing) in the
    others: the lanes outside are not read, and cannot fault (a guarded contiguous read, see masks.py)."""
    buffer: str
    index: Expr
    lo: Expr
    hi: Expr
    fill: Expr
    lanes: int
    dtype: str


@dataclass(frozen=True)
class VLanes(Expr):
    """One scalar expression per lane: gathers, strided loads and every op without an intrinsic."""
    elems: tuple
    dtype: str

    @property
    def lanes(self) -> int:
        return len(self.elems)


@dataclass(frozen=True)
class VBinary(Expr):
    op: str          # + - * / min max
    a: Expr
    b: Expr
    lanes: int
    dtype: str


@dataclass(frozen=True)
class VFma(Expr):
    """a * b + c, fused."""
    a: Expr
    b: Expr
    c: Expr
    lanes: int
    dtype: str


@dataclass(frozen=True)
class VCall(Expr):
    name: str        # a math function with an intrinsic (sqrt, abs, floor, ceil)
    args: tuple
    lanes: int
    dtype: str


@dataclass(frozen=True)
class VCast(Expr):
    value: Expr      # a vector of another dtype with the same lane count
    lanes: int
    dtype: str


@dataclass(frozen=True)
class VSelect(Expr):
    """cond ? t : f with a lane-invariant scalar cond; only the taken arm is evaluated (padding loads)."""
    cond: Expr
    t: Expr
    f: Expr
    lanes: int
    dtype: str


@dataclass(frozen=True)
class VCompare(Expr):
    """A per-lane comparison (op in < <= > >= == !=) of two vectors of `dtype`: a mask, used only by VBlend."""
    op: str
    a: Expr
    b: Expr
    lanes: int
    dtype: str       # the operands' dtype (the mask is laid out as their lanes)


@dataclass(frozen=True)
class VBlend(Expr):
    """mask ? t : f per lane. Both arms are evaluated for every lane (vectorize.py decides when that is safe)."""
    mask: Expr
    t: Expr
    f: Expr
    lanes: int
    dtype: str


@dataclass(frozen=True)
class VDot(Expr):
    """acc plus, in lane l, sum_t a[t] * b[l * G + t] for t < G: a dot-product instruction (passes/dot.py). `a` is
    one group of G narrow elements for every lane (a VLoad or VLanes of G), `b` lanes x G elements; `instr` names
    the instruction in codegen/dot.py's table."""
    instr: str
    acc: Expr
    a: Expr
    b: Expr
    lanes: int
    dtype: str


@dataclass(frozen=True)
class VReduce(Expr):
    """Horizontal reduction of a vector with op (+ * min max) to a scalar."""
    op: str
    value: Expr
    dtype: str


@dataclass(frozen=True)
class VVar(Expr):
    """A named register (vector, or scalar when lanes == 1) introduced by register promotion."""
    name: str
    lanes: int
    dtype: str


# ----------------------------------------------------------------------------- statements

@dataclass(frozen=True)
class VStore(Stmt):
    """buffer[index + k] = value[k], contiguous."""
    buffer: str
    index: Expr
    value: Expr


@dataclass(frozen=True)
class VScatter(Stmt):
    """buffer[indices[k]] = value[k], in lane order (a later lane wins on a repeated index, as in the loop)."""
    buffer: str
    indices: tuple
    value: Expr


@dataclass(frozen=True)
class VTranspose(Stmt):
    """buffer[index + k*stride + l] = src[src_index + l*src_stride + k] for k, l in [0, lanes): a square block
    copied transposed through registers (passes/transpose.py makes it from a vectorized copy that gathers a column)."""
    buffer: str
    index: Expr
    stride: int
    src: str
    src_index: Expr
    src_stride: int
    lanes: int
    dtype: str

    def rows(self) -> tuple:
        """(kind, buffer, flat index of a contiguous row of `lanes`) for every row it reads and writes."""
        def at(base, k, n):
            return base if k * n == 0 else Binary("+", base, Const(k * n, "int32"), "int32")
        return tuple([("read", self.src, at(self.src_index, k, self.src_stride)) for k in range(self.lanes)] +
                     [("store", self.buffer, at(self.index, k, self.stride)) for k in range(self.lanes)])


@dataclass(frozen=True)
class VPrefetch(Stmt):
    """A hint that buffer[index] is read soon: its cache line is fetched (no access is made, nothing faults);
    ir/passes/prefetch.py puts these before the vector loads of a loop with the prefetch pragma."""
    buffer: str
    index: Expr


@dataclass(frozen=True)
class VAssign(Stmt):
    var: VVar
    value: Expr


@dataclass(frozen=True)
class VDecl(Stmt):
    """Registers (VVar, initial value or None) live in a block around body; `pin`: each is held in a register
    from its declaration (the target's "pin" op after it; see pin.py)."""
    decls: tuple
    body: Stmt
    pin: bool = False


# ----------------------------------------------------------------------------- traversal

_FIELDS = {Broadcast: ("value",), VLoad: ("index",), VBinary: ("a", "b"), VFma: ("a", "b", "c"),
           VCast: ("value",), VSelect: ("cond", "t", "f"), VReduce: ("value",), VCompare: ("a", "b"),
           VBlend: ("mask", "t", "f"), VMaskLoad: ("index", "lo", "hi", "fill"),
           VDot: ("acc", "a", "b")}


def lanes_of(e: Expr) -> int:
    return getattr(e, "lanes", 1)


def vchildren(e: Expr) -> tuple:
    if isinstance(e, VLanes):
        return e.elems
    if isinstance(e, VCall):
        return e.args
    fields = _FIELDS.get(type(e))
    if fields is not None:
        return tuple(getattr(e, f) for f in fields)
    return scalar_children(e)


def vrebuild(e: Expr, kids: tuple) -> Expr:
    old = vchildren(e)
    if len(kids) == len(old) and all(k is o for k, o in zip(kids, old)):
        return e
    if isinstance(e, VLanes):
        return VLanes(tuple(kids), e.dtype)
    if isinstance(e, VCall):
        return VCall(e.name, tuple(kids), e.lanes, e.dtype)
    fields = _FIELDS.get(type(e))
    if fields is not None:
        d = dict(e.__dict__)
        d.update(zip(fields, kids))
        return type(e)(**d)
    return scalar_rebuild(e, tuple(kids))


def vtransform(e: Expr, fn: Callable[[Expr], Expr | None]) -> Expr:
    """Bottom-up rewrite over scalar and vector nodes; fn returns a replacement or None."""
    return transform(e, fn, vchildren, vrebuild)


def vwalk(e: Expr):
    return walk(e, vchildren)


def map_exprs(s: Stmt, fn: Callable[[Expr], Expr]) -> Stmt:
    """Apply fn to every top-level expression of every statement (indices, values, conditions)."""
    return map_top(with_kids(s, tuple(map_exprs(c, fn) for c in stmt_kids(s))), fn)


def with_kids(s: Stmt, kids: tuple) -> Stmt:
    """The same statement over new child statements (in stmt_kids order)."""
    if isinstance(s, Seq):
        return seq(*kids)
    if isinstance(s, For):
        return For(s.var, s.extent, s.kind, kids[0], s.auto_unroll)
    if isinstance(s, Allocate):
        return Allocate(s.buffer, kids[0])
    if isinstance(s, IfThenElse):
        return replace(s, then=kids[0])
    if isinstance(s, VDecl):
        return replace(s, body=kids[0])
    return s


def map_top(s: Stmt, fn: Callable[[Expr], Expr]) -> Stmt:
    """Apply fn to the expressions the statement itself evaluates (see top_exprs)."""
    if isinstance(s, IfThenElse):
        return replace(s, cond=fn(s.cond))
    if isinstance(s, Store):
        return Store(s.buffer, tuple(fn(i) for i in s.indices), fn(s.value))
    if isinstance(s, VStore):
        return VStore(s.buffer, fn(s.index), fn(s.value))
    if isinstance(s, VScatter):
        return VScatter(s.buffer, tuple(fn(i) for i in s.indices), fn(s.value))
    if isinstance(s, VTranspose):
        return replace(s, index=fn(s.index), src_index=fn(s.src_index))
    if isinstance(s, VPrefetch):
        return VPrefetch(s.buffer, fn(s.index))
    if isinstance(s, VAssign):
        return VAssign(s.var, fn(s.value))
    if isinstance(s, VDecl):
        return replace(s, decls=tuple((v, None if i is None else fn(i)) for v, i in s.decls))
    return s


def stmt_kids(s: Stmt) -> tuple:
    if isinstance(s, Seq):
        return s.stmts
    if isinstance(s, (For, Allocate, VDecl)):
        return (s.body,)
    if isinstance(s, IfThenElse):
        return (s.then,)
    return ()


def top_exprs(s: Stmt) -> tuple:
    """The expressions a statement itself evaluates (not those of nested statements)."""
    if isinstance(s, IfThenElse):
        return (s.cond,)
    if isinstance(s, Store):
        return (*s.indices, s.value)
    if isinstance(s, VStore):
        return (s.index, s.value)
    if isinstance(s, VScatter):
        return (*s.indices, s.value)
    if isinstance(s, VTranspose):
        return (s.index, s.src_index)
    if isinstance(s, VPrefetch):
        return (s.index,)
    if isinstance(s, VAssign):
        return (s.value,)
    if isinstance(s, VDecl):
        return tuple(i for _, i in s.decls if i is not None)
    return ()


def walk_all(s: Stmt):
    """Every statement under s, pre-order (an explicit stack: no recursion through deep nests)."""
    stack = [s]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(stmt_kids(n)))


def identifiers(func) -> set:
    """The names the C of `func` declares: arguments, allocated buffers, loop variables, registers."""
    out = {b.name for b in func.args}
    for s in walk_all(func.body):
        if isinstance(s, For):
            out.add(s.var)
        elif isinstance(s, Allocate):
            out.add(s.buffer.name)
        elif isinstance(s, VDecl):
            out.update(v.name for v, _ in s.decls)
    return out


def format_vstmt(s: Stmt, indent: int = 0) -> str:
    """Readable dump of a tree that may hold vector nodes (for tests and debugging)."""
    pad = "  " * indent
    if isinstance(s, Seq):
        return "\n".join(format_vstmt(c, indent) for c in s.stmts)
    if isinstance(s, For):
        return f"{pad}{s.kind} {s.var} in [0, {s.extent}):\n" + format_vstmt(s.body, indent + 1)
    if isinstance(s, IfThenElse):
        return f"{pad}if {s.cond!r}:\n" + format_vstmt(s.then, indent + 1)
    if isinstance(s, Allocate):
        return f"{pad}allocate {s.buffer.name}{list(s.buffer.shape)}\n" + format_vstmt(s.body, indent)
    if isinstance(s, VDecl):
        head = ", ".join(f"{v.name}x{v.lanes}={i!r}" for v, i in s.decls)
        return f"{pad}regs {head}:\n" + format_vstmt(s.body, indent + 1)
    return f"{pad}{s!r}"
