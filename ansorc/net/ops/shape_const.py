"""ONNX Pad, CenterCropPad and Trilu, and the ops whose result is known at import time (Shape, Size, Constant,
ConstantOfShape, EyeLike, Range: shapes are static, so they return np.ndarray). A ConstantOfShape, EyeLike or
Range result above import_passes.FOLD_LIMIT elements is computed at run time instead (a te tensor): folded, it
would fill memory at import and the weight file (te.compute refuses what no kernel can index).
Interface: common.py."""
from __future__ import annotations

import math

import numpy as np

from ... import te
from ...ir.program.expr import binary, const
from ..import_passes import FOLD_LIMIT
from ..network import NetError
from .common import OpSpec
from .util import (ALL, NUMERIC, ONNX_DTYPES, attr_array, axes, check_dtypes, compute, const_input, int_list, numel,
                   scalar_const, shape_of)


def _pad_args(node, ins, rank):
    """(begin, end, value) with value a te constant, a te tensor's element or None (zero)."""
    if node.attrs.get("_opset", 18) < 11:
        pads, value, ax = node.attrs.get("pads", node.attrs.get("paddings", [])), node.attrs.get("value", 0.0), None
    else:
        pads, value = const_input(node, ins, 1, "pads"), ins[2] if len(ins) > 2 else None
        ax = const_input(node, ins, 3, "axes")
    pads = int_list(node, pads, "pads")
    ax = list(range(rank)) if ax is None else axes(node, int_list(node, ax, "axes"), rank)
    if len(pads) != 2 * len(ax):
        raise NetError(f"{node.where()}: {len(pads)} pads for {len(ax)} axes")
    begin, end = [0] * rank, [0] * rank
    for k, a in enumerate(ax):
        begin[a], end[a] = pads[k], pads[k + len(ax)]
    if isinstance(value, np.ndarray):
        value = scalar_const(value) if value.size else None
    elif value is not None and not isinstance(value, (int, float)):
        value = value[0]  # a run-time scalar (held as shape (1,))
    return begin, end, value


def _clamp(e, n):
    return binary("min", binary("max", e, const(0, e.dtype)), const(n - 1, e.dtype))


def _source(mode, s, n, lo, hi):
    """The input index read for output position s (already shifted by the begin pad) under `mode`, and the
    in-range condition for constant mode (None when every s is in range)."""
    if lo <= 0 and hi <= 0:
        return s, None
    if mode == "edge":
        return _clamp(s, n), None
    if mode == "reflect":
        r = te.if_then_else(s < 0, -s, te.if_then_else(s > n - 1, 2 * (n - 1) - s, s))
        return _clamp(r, n), None  # a no-op (pads < n, checked above); it lets te prove the read in range
    if mode == "wrap":
        return s % n, None
    conds = ([s >= 0] if lo > 0 else []) + ([s < n] if hi > 0 else [])
    return s, te.all(*conds)


def _pad(node, ins, ctx):
    check_dtypes(node, ALL, 0, 1)
    mode = node.attrs.get("mode", "constant")
    if mode not in ("constant", "reflect", "edge", "wrap"):
        raise node.unsupported(f"mode={mode!r}")
    begin, end, value = _pad_args(node, ins, len(shape_of(node, 0, ins[0])))
    return [pad_compute(node, ins[0], begin, end, mode, value, ctx)]


def _fill(value, dtype: str):
    """The pad value in the tensor's dtype (an opset < 11 `value` attribute is a float even for integers)."""
    if value is None:
        return const(0, dtype)
    if isinstance(value, (int, float)):
        return const(value if dtype in ("float32", "float64") else int(value), dtype)
    return value.astype(dtype)


def pad_compute(node, x, begin, end, mode, value, ctx):
    """x grown (or, for negative pads, cropped) by begin/end per dim, new cells filled per `mode`."""
    src = shape_of(node, 0, x)
    if isinstance(x, np.ndarray):
        x = ctx.weight(x, node.name)
    dst = tuple(n + b + e for n, b, e in zip(src, begin, end))
    if any(d <= 0 for d in dst):
        raise NetError(f"{node.where()}: pads {list(begin) + list(end)} leave an empty output")
    wide = [a for a, (n, b, e) in enumerate(zip(src, begin, end)) if max(b, e) >= n]
    if mode == "reflect" and wide:  # undefined in ONNX (onnxruntime refuses it): reading clamped would be made up
        a = wide[0]
        raise NetError(f"{node.where()}: reflect pads {begin[a]}, {end[a]} on axis {a} must be smaller than its "
                       f"size {src[a]}")
    for k, (n, b, e) in enumerate(zip(src, begin, end)):
        # the modes copy from what the crop keeps (onnxruntime: "zero effective input extent")
        if mode != "constant" and max(b, e) > 0 and n + min(b, 0) + min(e, 0) <= 0:
            raise NetError(f"{node.where()}: mode={mode!r} pads {list(begin) + list(end)} crop axis {k} to nothing "
                           f"to pad from")

    def body(i):
        idx, conds = [], []
        for k, n, b, e in zip(i, src, begin, end):
            s, cond = _source(mode, k - b if b else k, n, b, e)
            idx.append(s)
            conds += [cond] if cond is not None else []
        v = x[tuple(idx)] if src else x[0]
        if not conds:
            return v
        return te.if_then_else(te.all(*conds), v, _fill(value, v.dtype))
    return compute(dst, body, ctx, node)


def _center_crop_pad(node, ins, ctx):
    """Each listed axis cropped or zero-padded to the wanted size, centred (the odd cell at the end)."""
    check_dtypes(node, ALL, 0, 1)
    src = shape_of(node, 0, ins[0])
    want = int_list(node, const_input(node, ins, 1, "shape"), "shape")
    ax = axes(node, node.attrs.get("axes", range(len(src))), len(src))
    if len(want) != len(ax):
        raise NetError(f"{node.where()}: shape {want} for axes {ax}")
    begin, end = [0] * len(src), [0] * len(src)
    for a, w in zip(ax, want):
        grow = w - src[a]
        begin[a] = grow // 2 if grow >= 0 else -((-grow) // 2)
        end[a] = grow - begin[a]
    return [pad_compute(node, ins[0], begin, end, "constant", None, ctx)]


def _trilu(node, ins, ctx):
    check_dtypes(node, ALL, 0, 1)
    x, src = ins[0], shape_of(node, 0, ins[0])
    if len(src) < 2:
        raise NetError(f"{node.where()}: Trilu needs a rank >= 2 input, got shape {list(src)}")
    k = const_input(node, ins, 1, "k")
    k = 0 if k is None else int(k.reshape(-1)[0])
    upper = int(node.attrs.get("upper", 1))
    x = ctx.weight(x, node.name) if isinstance(x, np.ndarray) else x

    def body(i):
        d = i[-1] - i[-2]
        return te.if_then_else(d >= k if upper else d <= k, x[tuple(i)], const(0, x.dtype))
    return [compute(src, body, ctx, node)]


def _shape(node, ins, ctx):
    src = shape_of(node, 0, ins[0])
    start, end = int(node.attrs.get("start", 0)), node.attrs.get("end")
    return [np.array(src[start:None if end is None else int(end)], dtype=np.int64)]


def _size(node, ins, ctx):
    return [np.array(numel(shape_of(node, 0, ins[0])), dtype=np.int64)]


def _constant(node, ins, ctx):
    a = node.attrs
    if "value" in a:
        out = attr_array(a["value"])
    elif "value_float" in a:
        out = np.array(a["value_float"], dtype=np.float32)
    elif "value_floats" in a:
        out = np.array(a["value_floats"], dtype=np.float32)
    elif "value_int" in a:
        out = np.array(a["value_int"], dtype=np.int64)
    elif "value_ints" in a:
        out = np.array(a["value_ints"], dtype=np.int64)
    else:
        raise node.unsupported(f"Constant with {sorted(k for k in a if k != '_opset')} (supported: value, "
                               "value_float(s), value_int(s))")
    if out.dtype.name not in ALL:
        raise node.unsupported(f"a constant of dtype {out.dtype.name}")
    return [np.ascontiguousarray(out)]


def _constant_of_shape(node, ins, ctx):
    shape = int_list(node, const_input(node, ins, 0, "shape"), "shape")
    value = attr_array(node.attrs["value"]) if "value" in node.attrs else np.zeros(1, np.float32)
    if value.dtype.name not in ALL or value.size != 1:
        raise node.unsupported(f"value of dtype {value.dtype.name} and {value.size} elements")
    if min(shape, default=1) < 0:
        raise NetError(f"{node.where()}: negative dimension in shape {shape}")
    if math.prod(shape) > FOLD_LIMIT:
        fill = scalar_const(value)
        return [compute(tuple(shape), lambda i: fill, ctx, node)]  # too large to fold: run time
    return [np.full(shape, value.reshape(-1)[0], dtype=value.dtype)]


def _eye_like(node, ins, ctx):
    src = shape_of(node, 0, ins[0])
    dtype = ONNX_DTYPES.get(int(node.attrs["dtype"])) if "dtype" in node.attrs else node.in_dtypes[0]
    if len(src) != 2 or dtype not in ALL:
        raise node.unsupported(f"a {len(src)}-D input or dtype {node.attrs.get('dtype', dtype)}")
    k = int(node.attrs.get("k", 0))
    if math.prod(src) > FOLD_LIMIT:
        one, zero = const(1, dtype), const(0, dtype)
        return [compute(src, lambda i: te.if_then_else((i[1] - i[0]).equal(k), one, zero), ctx, node)]
    return [np.eye(src[0], src[1], k, dtype=dtype)]


def _range(node, ins, ctx):
    check_dtypes(node, NUMERIC)
    start, limit, delta = (const_input(node, ins, i, n).reshape(-1)[0] for i, n in
                           enumerate(("start", "limit", "delta")))
    if delta == 0:
        raise NetError(f"{node.where()}: delta is 0")
    n = max(int(math.ceil((float(limit) - float(start)) / float(delta))), 0)
    dtype = const_input(node, ins, 0, "start").dtype
    if n > FOLD_LIMIT:  # (te.compute refuses more elements than a kernel can index: one line naming the node)
        first, step = const(start.item(), dtype.name), const(delta.item(), dtype.name)
        return [compute((n,), lambda i: first + i[0].astype(dtype.name) * step, ctx, node)]
    return [(start + np.arange(n, dtype=dtype) * delta).astype(dtype)]


_BIG = "a constant result (computed at run time above 4M elements)"
OPS: dict = {
    "Pad": OpSpec(_pad, ALL, ("mode", "pads", "paddings", "value"),
                  "constant pads; modes constant, reflect (pads < the dimension), edge, wrap"),
    "CenterCropPad": OpSpec(_center_crop_pad, ALL, ("axes",), "constant shape"),
    "Trilu": OpSpec(_trilu, ALL, ("upper",), "constant k"),
    "Shape": OpSpec(_shape, ALL, ("start", "end"), "a constant (static shapes)"),
    "Size": OpSpec(_size, ALL, (), "a constant (static shapes)"),
    "Constant": OpSpec(_constant, ALL, ("value", "value_float", "value_floats", "value_int", "value_ints")),
    "ConstantOfShape": OpSpec(_constant_of_shape, ("int64",), ("value",), "constant shape; " + _BIG),
    "EyeLike": OpSpec(_eye_like, ALL, ("dtype", "k"), _BIG),
    "Range": OpSpec(_range, NUMERIC, (), "constant inputs; " + _BIG),
}
