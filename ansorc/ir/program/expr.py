"""Scalar expression nodes: immutable, structurally compared, with operator sugar.

Integer division and modulo are floor semantics (`//`, `%` as in Python), so index
arithmetic means the same thing in the simplifier, the numpy evaluator and C.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ...errors import ExpressionError
from .convert import scalar as convert_scalar
from .dtypes import DTYPE_TABLE, NARROW_INTS, STORAGE_FLOATS, compute_dtype

FLOAT_DTYPES = tuple(n for n, d in DTYPE_TABLE.items() if d.is_float)
INT_DTYPES = ("int32", "int64")   # the integer types an index may have
DTYPES = tuple(DTYPE_TABLE)
MATH_FUNCS = ("exp", "log", "sqrt", "tanh", "sigmoid", "abs", "pow", "floor", "ceil")
_ORDER = ["bool", "int32", "int64", "float32", "float64"]


def is_float(dtype: str) -> bool:
    return dtype in FLOAT_DTYPES


def check_dtype(dtype: str) -> str:
    if dtype not in DTYPES:
        raise ExpressionError(f"unsupported dtype {dtype!r}; expected one of {', '.join(DTYPES)}")
    return dtype


def _promote(a: str, b: str) -> str:
    """The result type of a binary op: float wins, then the wider type. Narrow types compute in their
    compute_dtype (int8 + int8 is int32, bfloat16 * bfloat16 is float32), as C promotes them."""
    a, b = compute_dtype(a), compute_dtype(b)
    return a if a == b else max(a, b, key=_ORDER.index)


class Expr:
    """Base of all expression nodes. Subclasses are frozen dataclasses with a `dtype`."""

    dtype: str

    # Arithmetic sugar, so that te lambdas read like math.
    def __add__(self, o): return binary("+", self, o)
    def __radd__(self, o): return binary("+", o, self)
    def __sub__(self, o): return binary("-", self, o)
    def __rsub__(self, o): return binary("-", o, self)
    def __mul__(self, o): return binary("*", self, o)
    def __rmul__(self, o): return binary("*", o, self)
    def __truediv__(self, o): return binary("/", self, o)
    def __rtruediv__(self, o): return binary("/", o, self)
    def __floordiv__(self, o): return binary("//", self, o)
    def __rfloordiv__(self, o): return binary("//", o, self)
    def __mod__(self, o): return binary("%", self, o)
    def __rmod__(self, o): return binary("%", o, self)
    def __neg__(self): return binary("-", const(0, self.dtype), self)
    def __lt__(self, o): return compare("<", self, o)
    def __le__(self, o): return compare("<=", self, o)
    def __gt__(self, o): return compare(">", self, o)
    def __ge__(self, o): return compare(">=", self, o)
    def __and__(self, o): return logic("&&", self, o)
    def __or__(self, o): return logic("||", self, o)

    def equal(self, o) -> "Compare":
        return compare("==", self, o)

    def not_equal(self, o) -> "Compare":
        return compare("!=", self, o)

    def astype(self, dtype: str) -> "Expr":
        return Cast(check_dtype(dtype), self) if dtype != self.dtype else self

    def __bool__(self):
        raise ExpressionError("an ansorc expression has no truth value; use te.if_then_else / te.all for conditions")


@dataclass(frozen=True, eq=True)
class Var(Expr):
    name: str
    dtype: str = "int32"

    def __repr__(self):
        return self.name


@dataclass(frozen=True, eq=True)
class Const(Expr):
    value: float | int
    dtype: str = "int32"

    def __repr__(self):
        return repr(self.value)


@dataclass(frozen=True, eq=True)
class Binary(Expr):
    """op in + - * / // % min max; `//` and `%` are floor division and floor modulo."""
    op: str
    a: Expr
    b: Expr
    dtype: str

    def __repr__(self):
        if self.op in ("min", "max"):
            return f"{self.op}({self.a!r}, {self.b!r})"
        return f"({self.a!r} {self.op} {self.b!r})"


@dataclass(frozen=True, eq=True)
class Compare(Expr):
    """op in < <= > >= == != ; result is bool."""
    op: str
    a: Expr
    b: Expr
    dtype: str = "bool"

    def __repr__(self):
        return f"({self.a!r} {self.op} {self.b!r})"


@dataclass(frozen=True, eq=True)
class Logic(Expr):
    """op in && || ! (for ! the second operand is None)."""
    op: str
    a: Expr
    b: Expr | None = None
    dtype: str = "bool"

    def __repr__(self):
        return f"!{self.a!r}" if self.op == "!" else f"({self.a!r} {self.op} {self.b!r})"


@dataclass(frozen=True, eq=True)
class Select(Expr):
    cond: Expr
    t: Expr
    f: Expr
    dtype: str

    def __repr__(self):
        return f"select({self.cond!r}, {self.t!r}, {self.f!r})"


@dataclass(frozen=True, eq=True)
class Cast(Expr):
    dtype: str
    value: Expr

    def __repr__(self):
        return f"{self.dtype}({self.value!r})"


@dataclass(frozen=True, eq=True)
class Call(Expr):
    """A pure math function from MATH_FUNCS, or "saturate": its one argument rounded (half to even) and clamped
    to the integer `dtype` (te.saturate_cast)."""
    name: str
    args: tuple
    dtype: str

    def __repr__(self):
        name = f"{self.name}_{self.dtype}" if self.name == "saturate" else self.name
        return f"{name}({', '.join(map(repr, self.args))})"


@dataclass(frozen=True, eq=True)
class Read(Expr):
    """Element of tensor/buffer `name`. `tensor` (te only) links back to the producer and is not compared."""
    name: str
    indices: tuple
    dtype: str
    tensor: object = field(default=None, compare=False, repr=False, hash=False)

    def __repr__(self):
        return f"{self.name}[{', '.join(map(repr, self.indices))}]"


@dataclass(frozen=True, eq=True)
class CheckedIndex(Expr):
    """An index computed from data (`A[B[i]]`): equals `value` when 0 <= value < extent. Otherwise the evaluator
    raises and a kernel records an error status and uses the clamped index, so no read leaves its tensor."""
    value: Expr
    extent: int
    dtype: str = "int32"

    def __repr__(self):
        return f"checked({self.value!r}, {self.extent})"


@dataclass(frozen=True, eq=True)
class IterVar:
    """A loop axis of a compute: spatial ("S") or reduce ("R"), iterating var over [0, extent)."""
    var: Var
    extent: int
    kind: str = "S"

    @property
    def name(self) -> str:
        return self.var.name


# An IterVar in arithmetic stands for its var, as in TVM (`h * stride + rh` with rh a reduce_axis).
for _m in ("add", "radd", "sub", "rsub", "mul", "rmul", "floordiv", "rfloordiv", "mod", "rmod", "neg",
           "lt", "le", "gt", "ge"):
    setattr(IterVar, f"__{_m}__", lambda self, *o, _m=_m: getattr(self.var, f"__{_m}__")(*o))
IterVar.equal = lambda self, o: self.var.equal(o)
IterVar.not_equal = lambda self, o: self.var.not_equal(o)
IterVar.astype = lambda self, dtype: self.var.astype(dtype)


@dataclass(frozen=True, eq=True)
class Reduce(Expr):
    """combiner(source) over axes; only ever the whole body of a compute."""
    combiner: str
    source: Expr
    axes: tuple
    dtype: str

    def __repr__(self):
        return f"{self.combiner}({self.source!r}, axis=[{', '.join(a.name for a in self.axes)}])"


# ----------------------------------------------------------------------------- constructors

def const(value, dtype: str | None = None) -> Const:
    if dtype is None:
        dtype = "bool" if isinstance(value, bool) else "int32" if isinstance(value, int) else "float32"
    check_dtype(dtype)
    if dtype == "bool":
        value = bool(value)
    elif is_float(dtype):
        value = float(value) if dtype not in STORAGE_FLOATS else _rounded(float(value), dtype)
    else:
        if float(value) != int(value):
            raise ExpressionError(f"constant {value!r} is not an integer but dtype is {dtype}")
        value = int(value)
        lo, hi = DTYPE_TABLE[dtype].int_range
        if dtype in NARROW_INTS and not lo <= value <= hi:
            raise ExpressionError(f"constant {value} does not fit in {dtype} (expected {lo}..{hi})")
    return Const(value, dtype)


def _rounded(value: float, dtype: str) -> float:
    """A float16 / bfloat16 constant holds the value that type stores (the conversion's rounding)."""
    return float(convert_scalar(value, dtype))


def as_expr(x, like: Expr | None = None) -> Expr:
    """Wrap Python numbers; a Python float takes the float type of `like` if any."""
    if isinstance(x, Expr):
        return x
    if isinstance(x, IterVar):
        return x.var
    if isinstance(x, bool):
        return const(x, "bool")
    if isinstance(x, int):
        if like is not None and is_float(like.dtype):
            return const(x, compute_dtype(like.dtype))
        return const(x, "int32")
    if isinstance(x, float):
        return const(x, compute_dtype(like.dtype) if like is not None and is_float(like.dtype) else "float32")
    raise ExpressionError(f"cannot use {type(x).__name__} {x!r} in a tensor expression")


def _pair(a, b):
    if not isinstance(a, Expr) and isinstance(b, Expr):
        a = as_expr(a, b)
    if not isinstance(b, Expr) and isinstance(a, Expr):
        b = as_expr(b, a)
    return as_expr(a), as_expr(b)


def binary(op: str, a, b) -> Expr:
    a, b = _pair(a, b)
    dtype = _promote(a.dtype, b.dtype)
    if op in ("//", "%") and is_float(dtype):
        raise ExpressionError(f"'{op}' needs integer operands, got {a.dtype} and {b.dtype}")
    if op == "/" and not is_float(dtype):
        raise ExpressionError("'/' on integers is ambiguous: use '//' for index arithmetic")
    return Binary(op, _cast_to(a, dtype), _cast_to(b, dtype), dtype)


def compare(op: str, a, b) -> Compare:
    a, b = _pair(a, b)
    dtype = _promote(a.dtype, b.dtype)
    return Compare(op, _cast_to(a, dtype), _cast_to(b, dtype))


def logic(op: str, a, b=None) -> Logic:
    a = as_expr(a)
    if a.dtype != "bool" or (b is not None and as_expr(b).dtype != "bool"):
        raise ExpressionError(f"'{op}' needs boolean conditions")
    return Logic(op, a, None if b is None else as_expr(b))


def checked_index(value, extent: int) -> CheckedIndex:
    value = as_expr(value)
    if value.dtype not in INT_DTYPES:
        raise ExpressionError(f"checked_index needs an integer index, got {value.dtype}")
    if isinstance(extent, Const):
        extent = extent.value
    if isinstance(extent, bool) or not isinstance(extent, int) or not 0 < extent <= 2**31 - 1:
        raise ExpressionError(f"checked_index needs a positive int32 extent, got {extent!r}")
    return CheckedIndex(value, int(extent))


def select(cond, t, f) -> Select:
    cond = as_expr(cond)
    if cond.dtype != "bool":
        raise ExpressionError(f"the condition of a select must be boolean, got {cond.dtype}")
    t, f = _narrow_arm(t, f), _narrow_arm(f, t)
    t, f = _pair(t, f)
    dtype = t.dtype if t.dtype == f.dtype else _promote(t.dtype, f.dtype)
    return Select(cond, _cast_to(t, dtype), _cast_to(f, dtype), dtype)


def _narrow_arm(x, other):
    """A number beside a narrow-typed arm takes its type where that type holds it exactly (padding a bfloat16
    tensor with 0.0 keeps it bfloat16); elsewhere the usual rules apply."""
    dt = getattr(other, "dtype", None)
    if isinstance(x, (Expr, bool)) or not isinstance(x, (int, float)) or not isinstance(other, Expr) or \
            dt not in NARROW_INTS + STORAGE_FLOATS or (dt in NARROW_INTS and not isinstance(x, int)):
        return x
    if dt in NARROW_INTS:
        lo, hi = DTYPE_TABLE[dt].int_range
        return const(x, dt) if lo <= x <= hi else x
    c = const(x, dt)
    return c if c.value == x or x != x else x


def _cast_to(e: Expr, dtype: str) -> Expr:
    if e.dtype == dtype:
        return e
    if isinstance(e, Const):
        return const(e.value, dtype)
    return Cast(dtype, e)


# ----------------------------------------------------------------------------- traversal

_CHILDREN = {
    Binary: lambda e: (e.a, e.b), Compare: lambda e: (e.a, e.b),
    Logic: lambda e: (e.a,) if e.b is None else (e.a, e.b), Select: lambda e: (e.cond, e.t, e.f),
    Cast: lambda e: (e.value,), Call: lambda e: e.args, Read: lambda e: e.indices, Reduce: lambda e: (e.source,),
    CheckedIndex: lambda e: (e.value,),
}
_REBUILD = {
    Binary: lambda e, k: Binary(e.op, k[0], k[1], e.dtype), Compare: lambda e, k: Compare(e.op, k[0], k[1]),
    Logic: lambda e, k: Logic(e.op, k[0], k[1] if len(k) > 1 else None),
    Select: lambda e, k: Select(k[0], k[1], k[2], e.dtype), Cast: lambda e, k: Cast(e.dtype, k[0]),
    Call: lambda e, k: Call(e.name, tuple(k), e.dtype), Read: lambda e, k: Read(e.name, tuple(k), e.dtype, e.tensor),
    Reduce: lambda e, k: Reduce(e.combiner, k[0], e.axes, e.dtype),
    CheckedIndex: lambda e, k: CheckedIndex(k[0], e.extent, e.dtype),
}


def children(e: Expr) -> tuple:
    f = _CHILDREN.get(type(e))
    return f(e) if f is not None else ()


def rebuild(e: Expr, kids: tuple) -> Expr:
    """The same node with new children (the node itself if every child is the same object)."""
    f = _REBUILD.get(type(e))
    if f is None:
        return e
    old = _CHILDREN[type(e)](e)
    if len(old) == len(kids) and all(k is o for k, o in zip(kids, old)):
        return e
    return f(e, kids)


def transform(e: Expr, fn: Callable[[Expr], Expr | None], kids_of=children, rebuild_with=rebuild) -> Expr:
    """Bottom-up rewrite: fn returns a replacement or None to keep the rebuilt node. kids_of/rebuild_with extend
    it to other node families (the vector IR passes its own)."""
    kids = kids_of(e)
    new = rebuild_with(e, tuple([transform(c, fn, kids_of, rebuild_with) for c in kids])) if kids else e
    out = fn(new)
    return new if out is None else out


def walk(e: Expr, kids_of=children):
    """Pre-order iteration over all nodes."""
    stack = [e]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(kids_of(n)))


def substitute(e: Expr, mapping: dict) -> Expr:
    """Replace Vars (keyed by name) with expressions."""
    if not mapping:
        return e
    return transform(e, lambda n: mapping.get(n.name) if isinstance(n, Var) else None)


def free_vars(e: Expr) -> set:
    return {n.name for n in walk(e) if isinstance(n, Var)}


def reads(e: Expr) -> list:
    return [n for n in walk(e) if isinstance(n, Read)]


def conjuncts(cond: Expr) -> list:
    """The terms of a chain of && (the condition itself when it is not one)."""
    if isinstance(cond, Logic) and cond.op == "&&":
        return conjuncts(cond.a) + conjuncts(cond.b)
    return [cond]
