"""The internal ops of layout_pass (domain "ansorc"; not ONNX ops, so not in ops.SUPPORT nor in
docs/networks.md's support table): the layout transposes and the channels-last conv and pools.

Each row names the ONNX op it stands for: a table without that op (a restricted test table) rejects the internal
op with the same message, dtype and attribute checks as the ONNX op; the transposes stand for none."""
from __future__ import annotations

import dataclasses

from .conv import _CONV_ATTRS, lower_conv_nhwc
from .nn_util import FLOATS, MAX_DTYPES, as_tensor, compute, spec
from .quant import QTYPES
from .quant_linear import CONV_INTEGER_NHWC, QLINEAR_CONV_NHWC
from .pool import (_POOL_ATTRS, lower_average_pool_nhwc, lower_global_average_pool_nhwc,
                       lower_global_max_pool_nhwc, lower_max_pool_nhwc)
from .util import ALL

DOMAIN = "ansorc"


def _to_nhwc(node, ins, ctx):
    x = as_tensor(ins[0], ctx, f"{node.name}_x")
    n, c, h, w = x.shape
    return [compute((n, h, w, c), lambda i, j, k, ch: x[i, ch, j, k], ctx.name(node.name), "layout_transform")]


def _to_nchw(node, ins, ctx):
    x = as_tensor(ins[0], ctx, f"{node.name}_x")
    n, h, w, c = x.shape
    return [compute((n, c, h, w), lambda i, ch, j, k: x[i, j, k, ch], ctx.name(node.name), "layout_transform")]


def _to_hwio(node, ins, ctx):
    """A conv weight computed at run time, (CO, CI/group, KH, KW) -> (KH, KW, CI/group, CO)."""
    w = as_tensor(ins[0], ctx, f"{node.name}_w")
    co, ci, kh, kw = w.shape
    return [compute((kh, kw, ci, co), lambda h, v, c, o: w[o, c, h, v], ctx.name(node.name), "layout_transform")]


# internal op -> (the ONNX op it stands for, or None; its OpSpec)
INTERNAL: dict = {
    "ToNHWC": (None, spec(_to_nhwc, ALL + QTYPES)),   # data movement: any element type
    "ToNCHW": (None, spec(_to_nchw, ALL + QTYPES)),
    "ToHWIO": (None, spec(_to_hwio, ALL + QTYPES)),
    "ConvNHWC": ("Conv", spec(lower_conv_nhwc, FLOATS, _CONV_ATTRS, required=2)),
    "QLinearConvNHWC": ("QLinearConv", QLINEAR_CONV_NHWC),
    "ConvIntegerNHWC": ("ConvInteger", CONV_INTEGER_NHWC),
    "MaxPoolNHWC": ("MaxPool", spec(lower_max_pool_nhwc, MAX_DTYPES, _POOL_ATTRS + ("storage_order",))),
    "AveragePoolNHWC": ("AveragePool", spec(lower_average_pool_nhwc, FLOATS, _POOL_ATTRS + ("count_include_pad",))),
    "GlobalAveragePoolNHWC": ("GlobalAveragePool", spec(lower_global_average_pool_nhwc, FLOATS)),
    "GlobalMaxPoolNHWC": ("GlobalMaxPool", spec(lower_global_max_pool_nhwc, MAX_DTYPES)),
}


def internal_spec(proto, node, table: dict, check_node) -> tuple:
    """(node, OpSpec) of an internal node, after `check_node` passed the ONNX op it stands for against `table`;
    the node then carries that op's name, so that messages name the op of the user's model."""
    row = INTERNAL.get(proto.op_type)
    if row is None:
        raise node.unsupported(f"internal operator {proto.op_type} is not known")
    origin, op_spec = row
    if origin is not None:
        node = dataclasses.replace(node, op_type=origin)
        check_node(node, table)
    return node, op_spec


__all__ = ["DOMAIN", "INTERNAL", "internal_spec"]
