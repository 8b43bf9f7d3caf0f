"""Helpers shared by the operator lowerings: dtypes, shapes, numpy broadcasting, axes, constant inputs.

ONNX shapes are the true ones (rank 0 allowed); te tensors hold a rank-0 value as shape (1,) (common).
"""
from __future__ import annotations

import math

import numpy as np

from ... import te
from ...ir.program.expr import Expr, const
from ..network import NetError

FLOATS = ("float32", "float64")
NUMERIC = FLOATS + ("int32", "int64")
ALL = NUMERIC + ("bool",)
MOVED = ALL + ("int8", "uint8")   # data moved, not computed: also quantized tensors
# ONNX TensorProto.DataType -> the IR's dtype names (the others are unsupported)
ONNX_DTYPES = {1: "float32", 6: "int32", 7: "int64", 9: "bool", 11: "float64"}


def check_dtypes(node, allowed: tuple, first: int = 0, last: int | None = None) -> None:
    """Every present input in [first, last) has a dtype in `allowed`, else UnsupportedError."""
    for i, dt in enumerate(node.in_dtypes[first:last], start=first):
        if dt is not None and dt not in allowed:
            raise node.unsupported(f"input {i} has dtype {dt} (supported: {', '.join(allowed)})")


def te_shape(shape) -> tuple:
    """The te shape holding an ONNX shape (rank 0 -> (1,))."""
    return tuple(int(d) for d in shape) or (1,)


def shape_of(node, i: int, x) -> tuple:
    """The ONNX shape of input `i` (value `x`): the array's own, else the node's, else the te tensor's."""
    if isinstance(x, np.ndarray):
        return tuple(x.shape)
    if i < len(node.in_shapes) and node.in_shapes[i] is not None and None not in node.in_shapes[i]:
        return tuple(int(d) for d in node.in_shapes[i])
    return tuple(x.shape)


def broadcast(node, *shapes) -> tuple:
    """numpy (multidirectional) broadcasting of ONNX shapes; a mismatch is a malformed model."""
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        raise NetError(f"{node.where()}: shapes {', '.join(map(str, shapes))} do not broadcast") from None


def axis(node, a: int, rank: int, what: str = "axis") -> int:
    """An ONNX axis (negative counts from the end) as 0..rank-1, else a NetError naming it."""
    a = int(a)
    if not -rank <= a < rank:
        raise NetError(f"{node.where()}: {what} {a} is out of range for rank {rank}")
    return a + rank if a < 0 else a


def axes(node, values, rank: int) -> list:
    out = [axis(node, a, rank, "axes entry") for a in values]
    if len(set(out)) != len(out):
        raise NetError(f"{node.where()}: repeated axes {list(values)}")
    return out


def const_input(node, ins, i: int, what: str):
    """Input `i` as a numpy array (None when omitted); a run-time tensor there is unsupported."""
    x = ins[i] if i < len(ins) else None
    if x is None or isinstance(x, np.ndarray):
        return x
    raise node.unsupported(f"input {i} ({what}) must be a constant known at import time")


def attr_array(value) -> np.ndarray:
    """A tensor-valued attribute as numpy (the importer may pass an onnx TensorProto)."""
    if isinstance(value, np.ndarray):
        return value
    from onnx import numpy_helper  # only reached for undecoded TensorProto attributes
    return numpy_helper.to_array(value)


def scalar_const(arr: np.ndarray) -> Expr:
    """A one-element array as a te constant of its dtype."""
    dt = str(arr.dtype)
    v = arr.reshape(-1)[0]
    return const(bool(v) if dt == "bool" else v.item(), dt)


def reader(x, shape: tuple, out_rank: int, ctx, hint: str = "c"):
    """A function from output indices (out_rank exprs) to the broadcast element of `x` (ONNX shape `shape`).
    One-element constants become te constants; larger ones weights without their unit dims, so a (C, 1, 1)
    bias is read as w[c], a plain subsequence of the output's indices (what fusion calls broadcast)."""
    if isinstance(x, np.ndarray):
        if x.size == 1:
            c = scalar_const(x)
            return lambda idx: c
        keep = [d for d, n in enumerate(shape) if n != 1]
        t, lead = ctx.weight(x.reshape([shape[d] for d in keep]), hint), out_rank - len(shape)
        return lambda idx: t[tuple(idx[lead + d] for d in keep)]
    t, rank = x, len(shape)
    if rank == 0:
        return lambda idx: t[0]
    lead = out_rank - rank

    def read(idx):
        return t[tuple(0 if shape[d] == 1 else idx[lead + d] for d in range(rank))]
    return read


def compute(shape: tuple, fn, ctx, node):
    """te.compute over an ONNX shape for `node`: fn gets one index expr per ONNX dim (none for rank 0)."""
    rank = len(shape)
    if any(d <= 0 for d in shape):
        raise NetError(f"{node.where()}: the result would have shape {list(shape)}; empty tensors are not "
                       "supported")
    if rank == 0:
        return te.compute((1,), lambda i: fn(()), name=ctx.name(node.name))
    return te.compute(te_shape(shape), lambda *i: fn(tuple(i)), name=ctx.name(node.name))


def as_tensor(x, ctx, hint: str = "c"):
    """A te tensor for `x` (a constant becomes a weight)."""
    return ctx.weight(x, hint) if isinstance(x, np.ndarray) else x


def horner(x, coefs):
    """coefs[0] + coefs[1] x + coefs[2] x^2 + ... as a te expression of x's dtype."""
    out = const(coefs[-1], x.dtype)
    for c in reversed(coefs[:-1]):
        out = out * x + c
    return out


def numel(shape) -> int:
    return math.prod(int(d) for d in shape)


def int_list(node, values, what: str) -> list:
    try:
        return [int(v) for v in np.asarray(values).reshape(-1)]
    except (TypeError, ValueError):
        raise NetError(f"{node.where()}: {what} must be integers, got {values!r}") from None


def elementwise(node, xs: list, ctx, fn, out: int = 0, shapes=None):
    """One compute over the broadcast shape of the inputs `xs` (node inputs 0..len-1, ONNX shapes `shapes` when
    given): out = fn(*elements), cast to the node's declared output dtype where that differs. All-constant
    inputs give a constant (evaluated now, as the kernel would compute it)."""
    shapes = shapes or [shape_of(node, i, x) for i, x in enumerate(xs)]
    if xs and all(isinstance(x, np.ndarray) for x in xs):
        return _fold(node, xs, fn, out, shapes)
    shape = broadcast(node, *shapes)
    readers = [reader(x, s, len(shape), ctx) for x, s in zip(xs, shapes)]
    want = node.out_dtypes[out] if out < len(node.out_dtypes) else None

    def body(idx):
        e = fn(*[r(idx) for r in readers])
        return e.astype(want) if want in ALL and e.dtype != want else e
    return compute(shape, body, ctx, node)


def _fold(node, xs, fn, out, shapes) -> np.ndarray:
    from ...ir.program.evaluate import evaluate
    from .common import LowerContext
    scratch = LowerContext()
    t = elementwise(node, [scratch.weight(x, "c") for x in xs], scratch, fn, out, shapes)
    return evaluate([t], scratch.weights)[t.name].reshape(broadcast(node, *shapes))


def unary(node, x, ctx, fn):
    return elementwise(node, [x], ctx, fn)
