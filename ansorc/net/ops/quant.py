"""ONNX quantization operators on int8/uint8 lowered to te: QuantizeLinear, DequantizeLinear and
DynamicQuantizeLinear here; MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv in quant_linear.py.
Interface: common.py.

The float arithmetic is done as onnxruntime's CPU kernels (MLAS) do it, in float32 and in the same order, so that
the results agree bit for bit (docs/networks.md, "Quantized models"):
  QuantizeLinear     y = saturate(round_half_even(x / scale) + zero_point)   (a division, as MLAS divides)
  DequantizeLinear   y = float(int32(x) - int32(zero_point)) * scale
  requantization     y = saturate(round_half_even(float(acc) * (a_scale * b_scale / y_scale)) + y_zero_point)
Rounding before adding the zero point matters: x / scale + zero_point would round twice in float32.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ... import te
from ...ir.program.expr import Expr, const
from .common import OpSpec
from .nn_util import check_attrs
from .util import axis as norm_axis
from .util import compute, numel, shape_of

QTYPES = ("int8", "uint8")
# ONNX TensorProto element types of QuantizeLinear's output_dtype attribute (opset 21) that ansorc computes
_OUTPUT_DTYPES = {2: "uint8", 3: "int8"}


@dataclass(frozen=True)
class Param:
    """A scale or zero point input: one value, or one per index of an axis (per-axis / per-channel)."""
    dtype: str
    values: np.ndarray | None    # the flat values when known at import time
    tensor: object = None        # the te tensor holding them (a weight for a per-axis constant)

    @property
    def per_axis(self) -> bool:
        return (self.values.size if self.values is not None else numel(self.tensor.shape)) > 1

    def at(self, i=None) -> Expr:
        """The value for index `i` of the axis (ignored for a single value)."""
        if not self.per_axis:
            if self.values is not None:
                return const(self.values[0].item(), self.dtype)
            return self.tensor[(0,) * len(self.tensor.shape)]
        return self.tensor[i]

    def is_zero(self) -> bool:
        return self.values is not None and not self.values.any()


def param(node, ins, i: int, what: str, dtypes: tuple, extent: int | None, ctx, where: str = "") -> Param | None:
    """Input `i` (a scale or zero point) as a Param, None when omitted. It holds one element, or `extent` in a 1-D
    tensor (`where` names that axis in the error); anything else is one line naming the node."""
    v = ins[i] if i < len(ins) else None
    if v is None:
        return None
    dt = node.in_dtypes[i]
    if dt not in dtypes:
        raise node.unsupported(f"{what} (input {i}) has dtype {dt}; it must be {' or '.join(dtypes)}")
    shape = shape_of(node, i, v)
    n = numel(shape)
    if n != 1 and (len(shape) != 1 or extent is None or n != extent):
        want = "a single value" + (f" or a 1-D tensor of {extent} ({where})" if extent is not None else "")
        raise node.unsupported(f"{what} (input {i}) has shape {list(shape)}; it must be {want}")
    if isinstance(v, np.ndarray):
        flat = np.ascontiguousarray(v.reshape(-1))
        return Param(dt, flat, ctx.weight(flat, f"{node.name}_{what}") if n > 1 else None)
    return Param(dt, None, v)


def check_pair(node, scale: Param | None, zp: Param | None, what: str) -> None:
    """A scale and its zero point are both per-tensor or both per-axis (the spec: the same shape)."""
    if scale is not None and zp is not None and zp.per_axis and not scale.per_axis:
        raise node.unsupported(f"{what} zero point is per-axis but its scale is a single value")


def quantized(v: Expr, zp: Param | None, zp_index, dtype: str) -> Expr:
    """saturate(round_half_even(v) + zero_point) as `dtype` (v float32). The first saturation (to int16) keeps the
    sum from overflowing; it cannot change the result, whose range is inside int16's less any zero point."""
    q = te.saturate_cast(v, "int16")
    if zp is not None and not zp.is_zero():
        q = q + zp.at(zp_index)
    return te.saturate_cast(q, dtype)


def _axis_of(node, rank: int, scale: Param | None, zp: Param | None) -> int | None:
    if not any(p is not None and p.per_axis for p in (scale, zp)):
        return None
    return norm_axis(node, int(node.attrs.get("axis", 1)), rank)


def _params(node, ins, ctx, qdtype: str, x_shape: tuple):
    """(scale, zero point, axis or None) of QuantizeLinear / DequantizeLinear, checked."""
    if int(node.attrs.get("block_size", 0)):
        raise node.unsupported("blocked quantization (block_size > 0) is not supported")
    rank, ax = len(x_shape), int(node.attrs.get("axis", 1))
    ax = ax + rank if ax < 0 else ax
    extent = x_shape[ax] if 0 <= ax < rank else None   # a bad axis is an error only where a scale is per-axis
    where = f"axis {ax} of the input, shape {list(x_shape)}"
    scale = param(node, ins, 1, "scale", ("float32",), extent, ctx, where)
    zp = param(node, ins, 2, "zero_point", (qdtype,), extent, ctx, where)
    if scale is None:
        raise node.unsupported("the scale input is missing")
    return scale, zp, _axis_of(node, rank, scale, zp)


def _reader(x, shape: tuple):
    if not shape:
        return lambda idx: x[0]
    return lambda idx: x[tuple(idx)]


def lower_quantize(node, ins, ctx):
    check_attrs(node, _Q_ATTRS)
    if int(node.attrs.get("precision", 0)) not in (0, 1):   # 1: float32, what the division is done in
        raise node.unsupported(f"precision={node.attrs['precision']}: only float32 division is supported")
    x_shape = shape_of(node, 0, ins[0])
    out = node.out_dtypes[0] if node.out_dtypes and node.out_dtypes[0] else \
        _OUTPUT_DTYPES.get(int(node.attrs.get("output_dtype", 2)))
    if out not in QTYPES:
        raise node.unsupported(f"output dtype {out}: only int8 and uint8 quantization is supported")
    scale, zp, ax = _params(node, ins, ctx, out, x_shape)
    x = _reader(_tensor(ins[0], ctx, node), x_shape)

    def body(idx):
        i = idx[ax] if ax is not None else None
        return quantized(x(idx) / scale.at(i), zp, i, out)
    return [compute(x_shape, body, ctx, node)]


def lower_dequantize(node, ins, ctx):
    check_attrs(node, _DQ_ATTRS)
    x_shape, qdtype = shape_of(node, 0, ins[0]), node.in_dtypes[0]
    if qdtype not in QTYPES + ("int32",):
        raise node.unsupported(f"input dtype {qdtype}: only int8, uint8 and int32 are supported")
    scale, zp, ax = _params(node, ins, ctx, qdtype, x_shape)
    if qdtype == "int32" and zp is not None and not zp.is_zero():
        raise node.unsupported("an int32 input takes no zero point other than 0")
    x = _reader(_tensor(ins[0], ctx, node), x_shape)

    def body(idx):
        i = idx[ax] if ax is not None else None
        v = x(idx).astype("int32")
        if zp is not None and not zp.is_zero():
            v = v - zp.at(i).astype("int32")
        return v.astype("float32") * scale.at(i)
    return [compute(x_shape, body, ctx, node)]


def _tensor(x, ctx, node):
    return ctx.weight(x, f"{node.name}_x") if isinstance(x, np.ndarray) else x


def _whole(x, shape: tuple, fn, name: str):
    """A one-element reduction (`fn`: te.min or te.max) over every element of x."""
    rs = [te.reduce_axis((0, n), f"r{d}") for d, n in enumerate(shape)] or [te.reduce_axis((0, 1), "r0")]
    return te.compute((1,), lambda i: fn(x[tuple(r.var for r in rs)], axis=rs), name=name)


def lower_dynamic_quantize(node, ins, ctx):
    """uint8, as the spec and onnxruntime: the range [min(x, 0), max(x, 0)] over 255 steps (a scale of 1 for an
    all-zero input, where onnxruntime divides by no zero), the zero point that range's low end rounded and
    saturated, then QuantizeLinear."""
    check_attrs(node, ())
    x_shape = shape_of(node, 0, ins[0])
    x = _tensor(ins[0], ctx, node)
    lo = _whole(x, tuple(x.shape), te.min, ctx.name(f"{node.name}_min"))
    hi = _whole(x, tuple(x.shape), te.max, ctx.name(f"{node.name}_max"))
    zero = const(0.0, "float32")

    def scale_of(lo_v, hi_v):
        lo_v, hi_v = te.if_then_else(lo_v < zero, lo_v, zero), te.if_then_else(hi_v > zero, hi_v, zero)
        return te.if_then_else(hi_v.equal(lo_v), const(1.0, "float32"), (hi_v - lo_v) / const(255.0, "float32"))
    scale = te.compute((1,), lambda i: scale_of(lo[0], hi[0]), name=ctx.name(f"{node.name}_scale"))

    def zero_point(i):
        low = te.if_then_else(lo[0] < zero, lo[0], zero)
        return te.saturate_cast(zero - low / scale[0], "uint8")
    zp = te.compute((1,), zero_point, name=ctx.name(f"{node.name}_zero_point"))
    read = _reader(x, x_shape)
    zparam = Param("uint8", None, zp)
    y = compute(x_shape, lambda idx: quantized(read(idx) / scale[0], zparam, None, "uint8"), ctx, node)
    return [y, scale, zp]


_Q_ATTRS = ("axis", "saturate", "block_size", "output_dtype", "precision")
_DQ_ATTRS = ("axis", "block_size", "output_dtype")


OPS: dict = {
    "QuantizeLinear": OpSpec(lower_quantize, ("float32",), _Q_ATTRS,
                            "to int8/uint8; per-tensor or per-axis (not blocked); bit-exact"),
    "DequantizeLinear": OpSpec(lower_dequantize, QTYPES + ("int32",), _DQ_ATTRS,
                              "to float32; per-tensor or per-axis (not blocked); bit-exact"),
    "DynamicQuantizeLinear": OpSpec(lower_dynamic_quantize, ("float32",), (),
                                   "uint8; bit-exact"),
}
