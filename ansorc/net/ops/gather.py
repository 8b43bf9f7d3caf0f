"""ONNX operators lowered to te: Gather and GatherElements, loads whose index comes from a tensor.
Interface: common.py.

An index known only at run time goes through `te.checked_index`: a negative index wraps (idx + dim, as ONNX
says), and one still outside 0..dim-1 makes the kernel fail with "index out of range" (as onnxruntime does)
instead of reading outside the tensor. Constant indices are checked here, at import time; when they step evenly
(a scalar index, a slice-like list) the read is plain affine arithmetic with nothing left to check at run time.
"""
from __future__ import annotations

import numpy as np

from ... import te
from ..network import NetError
from .common import OpSpec

DATA_DTYPES = ("float32", "float64", "int32", "int64", "bool", "int8", "uint8")   # moved, not computed
INDEX_DTYPES = ("int32", "int64")


def _axis(node, rank: int) -> int:
    axis = int(node.attrs.get("axis", 0))
    if not -rank <= axis < rank:
        raise NetError(f"{node.where()}: axis {axis} is out of range for data of rank {rank}")
    return axis + rank if axis < 0 else axis


def _const_indices(node, idx: np.ndarray, dim: int, axis: int) -> np.ndarray:
    """The constant indices wrapped into 0..dim-1 (int64); NetError naming the first one out of range."""
    if str(np.asarray(idx).dtype) not in INDEX_DTYPES:
        raise node.unsupported(f"indices of dtype {np.asarray(idx).dtype} (expected int32 or int64)")
    v = np.asarray(idx).astype(np.int64)
    bad = (v < -dim) | (v >= dim)
    if bad.any():
        raise NetError(f"{node.where()}: index {int(v[bad].flat[0])} is out of range for axis {axis} of size {dim} "
                       f"(expected {-dim}..{dim - 1})")
    return np.where(v < 0, v + dim, v)


def _evenly_spaced(v: np.ndarray):
    """(start, step) when the flattened values are start + step*k, else None."""
    flat = v.reshape(-1)
    if flat.size == 1:
        return int(flat[0]), 0
    step = int(flat[1] - flat[0])
    if np.array_equal(flat, flat[0] + step * np.arange(flat.size, dtype=np.int64)):
        return int(flat[0]), step
    return None


def _flat_position(vars_, shape: tuple):
    """The row-major position of the point `vars_` in `shape` (0 for a scalar)."""
    pos, stride = 0, 1
    for v, n in zip(reversed(vars_), reversed(shape)):
        pos = v * stride + pos if stride != 1 else v + pos
        stride *= n
    return pos


def _index_reader(node, idx, q_shape: tuple, dim: int, axis: int, ctx):
    """A function from the index tensor's axes (empty for a scalar index) to a subscript in 0..dim-1."""
    if isinstance(idx, np.ndarray):
        wrapped = _const_indices(node, idx, dim, axis)
        even = _evenly_spaced(wrapped)
        if even is not None:
            start, step = even
            return lambda qi: start + step * _flat_position(qi, q_shape) if step else start
        table = ctx.weight(wrapped.astype(np.int32).reshape(q_shape or (1,)), f"{node.name}_indices")
        return lambda qi: te.checked_index(table[tuple(qi) if qi else 0], dim)  # in range: never fires
    if idx.dtype not in INDEX_DTYPES:
        raise node.unsupported(f"indices of dtype {idx.dtype} (expected int32 or int64)")

    def read(qi):
        v = idx[tuple(qi) if qi else 0]
        return te.checked_index(te.if_then_else(v < 0, v + dim, v), dim)
    return read


def _data(node, data, ctx):
    if isinstance(data, np.ndarray):
        return ctx.weight(data, f"{node.name}_data")
    return data


def lower_gather(node, ins: list, ctx) -> list:
    data, idx = ins[0], ins[1]
    d_shape, q_shape = tuple(node.in_shapes[0]), tuple(node.in_shapes[1])
    axis = _axis(node, len(d_shape))
    dim = d_shape[axis]
    if isinstance(data, np.ndarray) and isinstance(idx, np.ndarray):  # folded at import time
        return [np.take(data, _const_indices(node, idx, dim, axis), axis=axis)]
    src = _data(node, data, ctx)
    index = _index_reader(node, idx, q_shape, dim, axis, ctx)
    q = len(q_shape)
    out_shape = d_shape[:axis] + q_shape + d_shape[axis + 1:]

    def f(*o):
        o = o if out_shape else ()
        return src[(*o[:axis], index(o[axis:axis + q]), *o[axis + q:])]
    return [te.compute(out_shape or (1,), f, name=ctx.name(node.name))]


def lower_gather_elements(node, ins: list, ctx) -> list:
    data, idx = ins[0], ins[1]
    d_shape, q_shape = tuple(node.in_shapes[0]), tuple(node.in_shapes[1])
    axis = _axis(node, len(d_shape))
    dim = d_shape[axis]
    if len(q_shape) != len(d_shape) or any(q > d for k, (q, d) in enumerate(zip(q_shape, d_shape)) if k != axis):
        raise NetError(f"{node.where()}: indices of shape {list(q_shape)} do not fit data of shape {list(d_shape)}")
    if isinstance(data, np.ndarray) and isinstance(idx, np.ndarray):  # off the axis, data may be larger
        part = data[tuple(slice(None) if k == axis else slice(0, q) for k, q in enumerate(q_shape))]
        return [np.take_along_axis(part, _const_indices(node, idx, dim, axis), axis=axis)]
    src = _data(node, data, ctx)
    if isinstance(idx, np.ndarray):
        idx = ctx.weight(_const_indices(node, idx, dim, axis).astype(np.int32), f"{node.name}_indices")
    elif idx.dtype not in INDEX_DTYPES:
        raise node.unsupported(f"indices of dtype {idx.dtype} (expected int32 or int64)")

    def f(*o):
        v = idx[o]
        k = te.checked_index(te.if_then_else(v < 0, v + dim, v), dim)
        return src[(*o[:axis], k, *o[axis + 1:])]
    return [te.compute(q_shape, f, name=ctx.name(node.name))]


OPS: dict = {
    "Gather": OpSpec(lower_gather, DATA_DTYPES, ("axis",),
                     "indices int32/int64, constant or computed; negative indices wrap; out of range: run-time error"),
    "GatherElements": OpSpec(lower_gather_elements, DATA_DTYPES, ("axis",),
                             "indices int32/int64; out of range: run-time error"),
}
