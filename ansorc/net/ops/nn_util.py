"""Helpers of the nn operator lowerings (nn, conv, pool, norm, reduce): attribute checks, axis
normalisation, numpy broadcasting, reading a value whatever its form (te Tensor, constant array, rank-0 held as
shape (1,)). Every rejection is one `node.unsupported(...)` line.

(The element-wise ops keep similar helpers in util.py; the two can merge once both are in.)"""
from __future__ import annotations

import numpy as np

from ...ir.program import te
from .common import OpSpec

FLOATS = ("float32", "float64")
MAX_DTYPES = FLOATS + ("int8", "uint8")   # max pools: order-preserving on quantized values too
_LOWEST = {"int8": -128, "uint8": 0}


def check_attrs(node, known) -> None:
    """Reject attributes the lowering does not understand (names starting with '_' come from the importer)."""
    for key in node.attrs:
        if not key.startswith("_") and key not in known:
            raise node.unsupported(f"attribute {key!r} is not supported")


def spec(lower, dtypes=FLOATS, attrs=(), note: str = "", required: int = 1) -> OpSpec:
    """An OpSpec whose lowering first checks the `required` leading inputs are there, the first input's dtype
    and the attribute names."""
    def checked(node, ins, ctx):
        if len(ins) < required or any(x is None for x in ins[:required]) or len(node.in_shapes) < len(ins):
            raise node.unsupported(f"needs {required} input(s), got {sum(x is not None for x in ins)}")
        dtype = node.in_dtypes[0] if node.in_dtypes else None
        if dtype is not None and dtype not in dtypes:
            raise node.unsupported(f"dtype {dtype} is not supported (supported: {', '.join(dtypes)})")
        check_attrs(node, attrs)
        outs = list(lower(node, ins, ctx))
        return outs[:max(len(node.out_shapes), 1)]  # optional outputs not asked for are None, none past the end
    checked.__name__ = getattr(lower, "__name__", "lower")
    checked.__doc__ = lower.__doc__
    return OpSpec(checked, tuple(dtypes), tuple(attrs), note)


def opset(node) -> int:
    return int(node.attrs.get("_opset", 22))


def te_shape(shape) -> tuple:
    """The te shape holding an ONNX shape: rank-0 is (1,)."""
    return tuple(int(s) for s in shape) or (1,)


def as_tensor(x, ctx, hint: str):
    """A te Tensor for an input: constants become weight placeholders."""
    if isinstance(x, np.ndarray) or np.isscalar(x):
        return ctx.weight(np.asarray(x), hint)
    return x


def reader(x, shape):
    """A function idx -> Read for value `x` whose ONNX shape is `shape` (rank-0 values are read at [0])."""
    if len(shape) == 0:
        return lambda idx: x[0]
    return lambda idx: x[tuple(idx)]


def norm_axis(node, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise node.unsupported(f"axis {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def norm_axes(node, axes, rank: int) -> tuple:
    out = sorted({norm_axis(node, int(a), rank) for a in axes})
    if len(out) != len(list(axes)):
        raise node.unsupported(f"axes {list(axes)} repeat an axis")
    return tuple(out)


def broadcast_shape(node, *shapes) -> tuple:
    """numpy's broadcast of the shapes, or one line naming the node."""
    try:
        return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        raise node.unsupported(f"shapes {', '.join(str(tuple(s)) for s in shapes)} do not broadcast") from None


def broadcast_index(idx, shape) -> tuple:
    """Index into an operand of `shape` from the index `idx` of the broadcast result (trailing dims aligned)."""
    idx = tuple(idx)[len(idx) - len(shape):] if shape else ()
    return tuple(0 if s == 1 else i for i, s in zip(idx, shape))


def const_input(node, x, what: str):
    """The value of an input that must be known at import time (axes, shapes), or None when omitted."""
    if x is None:
        return None
    if not isinstance(x, np.ndarray):
        raise node.unsupported(f"{what} must be a constant (it is computed at run time)")
    return x


def ints(node, name: str, default, n: int | None = None) -> tuple:
    """An int-list attribute, checked to have `n` entries when n is given."""
    value = node.attrs.get(name, default)
    value = tuple(int(v) for v in value)
    if n is not None and len(value) != n:
        raise node.unsupported(f"attribute {name}={list(value)} should have {n} entries")
    return value


def zero(dtype: str):
    return te.const(0, dtype)


def lowest(dtype: str):
    return te.const(float("-inf") if dtype in FLOATS else _LOWEST.get(dtype, -2**31), dtype)


def compute(shape, fn, name: str, tag: str = ""):
    """te.compute for a body taking any number of indices (`fn(*idx)`); axes are named i0, i1, ..."""
    return te.compute(tuple(shape), lambda *idx: fn(*idx), name=name, tag=tag)
