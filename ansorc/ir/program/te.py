"""TVM-style tensor expression DSL: placeholder, compute, reduce_axis, reducers and math.

    A = te.placeholder((N, K), name="A")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
"""
from __future__ import annotations

import builtins
import inspect
import itertools
import math
import re
from dataclasses import dataclass, field

from ...errors import ExpressionError
from .bounds import check_reads
from .convert import SATURATE_TARGETS
from .dtypes import DTYPE_TABLE, NARROW_INTS, STORAGE_FLOATS, compute_dtype
from .expr import (Call, Const, Expr, IterVar, Read, Reduce, Var, as_expr, binary, check_dtype, checked_index, const,
                   is_float, logic, select, substitute, walk)

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")
_counter = itertools.count()


def _name(name: str | None, default: str) -> str:
    if name is None:
        n = next(_counter)
        return default if n == 0 else f"{default}_{n}"
    if not isinstance(name, str) or not name:
        raise ExpressionError(f"a tensor name must be a non-empty string, got {name!r}")
    return name


@dataclass(frozen=True, eq=False)
class PlaceholderOp:
    name: str
    shape: tuple
    dtype: str

    @property
    def inputs(self) -> tuple:
        return ()


@dataclass(frozen=True, eq=False)
class ComputeOp:
    """out[axes] = body, or out[axes] = combiner over reduce_axes of body when combiner is set."""
    name: str
    axes: tuple            # IterVar, kind "S"
    reduce_axes: tuple     # IterVar, kind "R"
    body: Expr             # the reduction source when combiner is set
    combiner: str | None   # "sum" | "max" | "min" | None
    dtype: str
    inputs: tuple = field(default=(), repr=False)  # producer Tensors, in first-read order
    tag: str = ""

    @property
    def shape(self) -> tuple:
        return tuple(a.extent for a in self.axes)


class Tensor:
    """The output of an op. Indexing it gives a Read expression."""

    def __init__(self, op):
        self.op = op

    name = property(lambda self: self.op.name)
    shape = property(lambda self: tuple(self.op.shape))
    dtype = property(lambda self: self.op.dtype)
    ndim = property(lambda self: len(self.op.shape))

    def __getitem__(self, idx) -> Read:
        if not isinstance(idx, tuple):
            idx = (idx,)
        if len(idx) != len(self.shape):
            raise ExpressionError(f"tensor {self.name!r} has {len(self.shape)} dimensions, indexed with {len(idx)}")
        exprs = []
        for i in idx:
            e = i.var if isinstance(i, IterVar) else as_expr(i)
            if is_float(e.dtype) or e.dtype == "bool":
                raise ExpressionError(f"index of tensor {self.name!r} must be an integer expression, got {e.dtype}")
            exprs.append(e)
        return Read(self.name, tuple(exprs), self.dtype, self)

    def __repr__(self):
        return f"Tensor({self.name}, shape={self.shape}, dtype={self.dtype})"

    def __hash__(self):
        return id(self.op)

    def __eq__(self, other):
        return isinstance(other, Tensor) and other.op is self.op


MAX_ELEMENTS = 2**31 - 1  # kernels index with int32: a tensor's flat index must fit


def _shape(shape, name: str | None = None) -> tuple:
    if isinstance(shape, int):
        shape = (shape,)
    out = []
    for s in shape:
        if isinstance(s, Const):
            s = s.value
        if isinstance(s, bool) or not isinstance(s, int) or s <= 0:
            raise ExpressionError(f"shape {tuple(shape)!r}: every dimension must be a positive integer, got {s!r}")
        out.append(int(s))
    if math.prod(out) > MAX_ELEMENTS:
        what = f"tensor {name!r}" if name else "a tensor"
        raise ExpressionError(f"{what} of shape {tuple(out)} has {math.prod(out)} elements (expected at most "
                         f"{MAX_ELEMENTS}: kernels index with 32-bit integers)")
    return tuple(out)


def placeholder(shape, dtype: str = "float32", name: str | None = None) -> Tensor:
    return Tensor(PlaceholderOp(_name(name, "placeholder"), _shape(shape, name), check_dtype(dtype)))


def reduce_axis(dom, name: str | None = None) -> IterVar:
    lo, hi = dom
    lo, hi = (x.value if isinstance(x, Const) else x for x in (lo, hi))
    if not (isinstance(lo, int) and isinstance(hi, int)) or hi <= lo:
        raise ExpressionError(f"reduce_axis range must be two integers lo < hi, got {dom!r}")
    iv = IterVar(Var(_name(name, "rv")), hi - lo, "R")
    if lo != 0:  # normalized to start at 0: uses of the axis are shifted by lo
        object.__setattr__(iv, "_offset", lo)
    return iv


def _reducer(combiner: str):
    def reduce(expr, axis=None, where=None):
        is_axes = isinstance(axis, IterVar) or (isinstance(axis, (list, tuple)) and len(axis) > 0 and
                                                 builtins.all(isinstance(a, IterVar) for a in axis))
        if axis is not None and not is_axes and combiner in ("max", "min") and where is None:
            return binary(combiner, expr, axis)  # te.max(a, b) is element-wise, as in TVM
        if axis is None:
            return _missing_axis(combiner)
        axes = tuple(axis) if isinstance(axis, (list, tuple)) else (axis,)
        if not is_axes or not builtins.all(a.kind == "R" for a in axes):
            raise ExpressionError(f"te.{combiner}: axis must be a reduce_axis (or a list of them)")
        src = as_expr(expr)
        if src.dtype in STORAGE_FLOATS:
            raise ExpressionError(f"te.{combiner} over {src.dtype} values: accumulate in float32 "
                                  f"(te.{combiner}(x.astype('float32'), axis=...))")
        if where is not None:
            src = select(where, src, _identity(combiner, src.dtype))
        return Reduce(combiner, src, axes, src.dtype)
    reduce.__name__ = combiner
    return reduce


def _missing_axis(combiner):
    raise ExpressionError(f"te.{combiner} needs axis=<reduce_axis> (or two operands for element-wise max/min)")


def _identity(combiner: str, dtype: str) -> Const:
    if combiner == "sum":
        return const(0, dtype)
    if dtype in NARROW_INTS:
        lo, hi = DTYPE_TABLE[dtype].int_range
        return const(lo if combiner == "max" else hi, dtype)
    big = float("inf") if is_float(dtype) else (2**31 - 1)
    return const(-big if combiner == "max" else big, dtype)


sum = _reducer("sum")  # noqa: A001 - TVM's name
max = _reducer("max")  # noqa: A001
min = _reducer("min")  # noqa: A001


def compute(shape, fcompute, name: str | None = None, tag: str = "") -> Tensor:
    shape = _shape(shape, name)
    try:
        params = list(inspect.signature(fcompute).parameters)
    except (TypeError, ValueError):
        params = []
    if len(params) == 1 and len(shape) > 1 and inspect.signature(fcompute).parameters[params[0]].kind == \
            inspect.Parameter.VAR_POSITIONAL:
        params = [f"i{d}" for d in range(len(shape))]
    if len(params) != len(shape):
        raise ExpressionError(f"compute {name or ''}: the function takes {len(params)} indices but the shape has "
                        f"{len(shape)} dimensions")
    axes = tuple(IterVar(Var(p), n, "S") for p, n in zip(params, shape))
    body = as_expr(fcompute(*[a.var for a in axes]))
    name = _name(name, "compute")
    combiner, reduce_axes = None, ()
    if isinstance(body, Reduce):
        combiner, reduce_axes = body.combiner, body.axes
        body = body.source
    if builtins.any(isinstance(n, Reduce) for n in walk(body)):
        raise ExpressionError(f"compute {name!r}: a reduction must be the whole body of a compute; put the rest of the "
                        "expression in a second compute")
    # reduce axes declared with a nonzero lower bound iterate from 0 and are shifted in the body
    shift = {a.name: a.var + getattr(a, "_offset") for a in reduce_axes if hasattr(a, "_offset")}
    body = substitute(body, shift)
    reduce_axes = tuple(IterVar(a.var, a.extent, "R") for a in reduce_axes)
    names = [a.name for a in axes + reduce_axes]
    if len(set(names)) != len(names):
        raise ExpressionError(f"compute {name!r}: axis names must be distinct, got {names}")
    known = set(names)
    for n in walk(body):
        if isinstance(n, Var) and n.name not in known:
            raise ExpressionError(f"compute {name!r}: the body uses {n.name!r}, which is not an axis of this compute "
                             "(a reduce_axis must be listed in the reducer's axis=)")
    check_reads(name, axes + reduce_axes, body)  # BoundsError (a ValueError) names the read and its range
    inputs = []
    for r in (n for n in walk(body) if isinstance(n, Read)):
        if r.tensor is not None and r.tensor not in inputs:
            inputs.append(r.tensor)
    return Tensor(ComputeOp(name, axes, reduce_axes, body, combiner, body.dtype, tuple(inputs), tag))


# ----------------------------------------------------------------------------- math

def _math(fname: str):
    def f(*args):
        xs = [as_expr(a) for a in args]
        first = compute_dtype(xs[0].dtype)   # 16-bit floats compute in float32, narrow ints in int32
        dtype = first if is_float(first) else "float32"
        if fname in ("abs",) and not is_float(first):
            dtype = first
        xs = [x if x.dtype == dtype else x.astype(dtype) for x in xs]
        return Call(fname, tuple(xs), dtype)
    f.__name__ = fname
    return f


exp, log, sqrt, tanh, sigmoid, abs, floor, ceil = (_math(n) for n in  # noqa: A001
                                                    ("exp", "log", "sqrt", "tanh", "sigmoid", "abs", "floor", "ceil"))


def pow(a, b):  # noqa: A001
    return _math("pow")(a, b)


def cast(x, dtype: str) -> Expr:
    """x converted to dtype (float to int truncates toward zero; docs/expression-language.md, "Types")."""
    return as_expr(x).astype(dtype)


def saturate_cast(x, dtype: str) -> Expr:
    """x converted to the integer dtype (int8, uint8, int16 or int32) with saturation: a float is rounded half to
    even and clamped to the type's range, NaN gives 0; an integer is clamped."""
    x = as_expr(x)
    if check_dtype(dtype) not in SATURATE_TARGETS:
        raise ExpressionError(f"te.saturate_cast targets {', '.join(SATURATE_TARGETS)}, got {dtype}")
    if x.dtype == "bool":
        x = x.astype("int32")
    return Call("saturate", (x,), dtype)


def if_then_else(cond, t, f) -> Expr:
    return select(cond, t, f)


def all(*conds) -> Expr:  # noqa: A001
    if not conds:
        return const(True, "bool")
    out = as_expr(conds[0])
    for c in conds[1:]:
        out = logic("&&", out, c)
    return out


def any(*conds) -> Expr:  # noqa: A001
    out = as_expr(conds[0])
    for c in conds[1:]:
        out = logic("||", out, c)
    return out


def var(name: str, dtype: str = "int32") -> Var:
    return Var(name, check_dtype(dtype))


__all__ = ["placeholder", "compute", "reduce_axis", "sum", "max", "min", "exp", "log", "sqrt", "tanh", "sigmoid",
           "abs", "pow", "floor", "ceil", "if_then_else", "all", "any", "const", "Tensor", "IterVar", "var",
           "checked_index", "cast", "saturate_cast"]
