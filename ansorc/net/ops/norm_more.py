"""Less common normalizations lowered to te: RMSNormalization, GroupNormalization, MeanVarianceNormalization,
LpNormalization, Hardmax. Same shape as norm: reductions into their own computes, one element-wise output."""
from __future__ import annotations

import math

from ...ir.program import te
from .nn_util import (FLOATS, as_tensor, broadcast_index, broadcast_shape, compute, norm_axes, norm_axis, opset, reader,
                      spec, te_shape)
from .norm import moments, softmax_axes
from .reduce import reduce_compute, stat_index


def lower_rms_norm(node, ins, ctx):
    shape = tuple(node.in_shapes[0])
    axis = norm_axis(node, int(node.attrs.get("axis", -1)), len(shape))
    if int(node.attrs.get("stash_type", 1)) != 1:
        raise node.unsupported("stash_type other than 1 (float32) is not supported")
    eps = float(node.attrs.get("epsilon", 1e-5))
    x = as_tensor(ins[0], ctx, f"{node.name}_x")
    sshape = tuple(node.in_shapes[1])
    if broadcast_shape(node, shape, sshape) != shape:
        raise node.unsupported(f"scale of shape {list(sshape)} does not broadcast to the input {list(shape)}")
    scale = reader(as_tensor(ins[1], ctx, f"{node.name}_scale"), sshape)
    read = reader(x, shape)
    axes = tuple(range(axis, len(shape)))
    sq = reduce_compute(shape, axes, False, te.sum, lambda i: read(i) * read(i), ctx.name(f"{node.name}_sqsum"))
    inv = 1.0 / math.prod(shape[axis:])

    def body(*i):
        return read(i) / te.sqrt(sq[stat_index(i, axes)] * inv + eps) * scale(broadcast_index(i, sshape))
    return [compute(te_shape(shape), body, ctx.name(node.name), "rms_norm")]


def lower_group_norm(node, ins, ctx):
    """Statistics per (n, group) over the group's channels and all spatial positions; scale/bias per channel
    (opset >= 21) or per group (opset 18)."""
    shape = tuple(node.in_shapes[0])
    groups = int(node.attrs.get("num_groups", 0))
    if len(shape) < 3 or groups < 1 or shape[1] % groups:
        raise node.unsupported(f"num_groups={groups} must divide the channels of an input {list(shape)}")
    if int(node.attrs.get("stash_type", 1)) != 1:
        raise node.unsupported("stash_type other than 1 (float32) is not supported")
    per = shape[1] // groups
    per_channel = opset(node) >= 21
    want = (shape[1],) if per_channel else (groups,)
    if any(tuple(s) != want for s in node.in_shapes[1:3]):
        raise node.unsupported(f"scale and bias should have shape {list(want)}")
    eps = float(node.attrs.get("epsilon", 1e-5))
    x = as_tensor(ins[0], ctx, f"{node.name}_x")
    sc, bi = (as_tensor(v, ctx, f"{node.name}_{w}") for v, w in zip(ins[1:3], ("scale", "bias")))
    # view x as (N, groups, per, spatial...) so the statistics are an ordinary reduction over axes 2..
    gshape = (shape[0], groups, per) + shape[2:]
    xg = lambda i: x[(i[0], i[1] * per + i[2] if per > 1 else i[1]) + tuple(i[3:])]  # noqa: E731
    s1, s2, inv = moments(node, _Viewed(xg, gshape), gshape, tuple(range(2, len(gshape))), ctx)

    def body(n, c, *rest):
        g = c // per if per > 1 else c
        k = c if per_channel else g
        return (x[(n, c) + rest] - s1[n, g] * inv) / te.sqrt(s2[n, g] * inv + eps) * sc[k] + bi[k]
    return [compute(shape, body, ctx.name(node.name), "group_norm")]


class _Viewed:
    """A read function and a shape that `reader` treats like a tensor (x[idx] -> fn(idx))."""

    def __init__(self, fn, shape):
        self.fn, self.shape = fn, shape

    def __getitem__(self, idx):
        return self.fn(idx if isinstance(idx, tuple) else (idx,))


def lower_mvn(node, ins, ctx):
    shape = tuple(node.in_shapes[0])
    axes = norm_axes(node, node.attrs.get("axes", [0, 2, 3]), len(shape))
    x = as_tensor(ins[0], ctx, f"{node.name}_x")
    s1, s2, inv = moments(node, x, shape, axes, ctx)

    def body(*i):
        st = stat_index(i, axes)
        return (x[i] - s1[st] * inv) / (te.sqrt(s2[st] * inv) + 1e-9)
    return [compute(shape, body, ctx.name(node.name), "mvn")]


def lower_lp_norm(node, ins, ctx):
    shape = tuple(node.in_shapes[0])
    axes = (norm_axis(node, int(node.attrs.get("axis", -1)), len(shape)),)
    p = int(node.attrs.get("p", 2))
    if p not in (1, 2):
        raise node.unsupported(f"p={p} (only 1 and 2)")
    x = as_tensor(ins[0], ctx, f"{node.name}_x")
    read = reader(x, shape)
    src = (lambda i: te.abs(read(i))) if p == 1 else (lambda i: read(i) * read(i))
    s = reduce_compute(shape, axes, False, te.sum, src, ctx.name(f"{node.name}_norm"))
    zero = te.const(0, x.dtype)

    def body(*i):
        n = s[stat_index(i, axes)]
        n = n if p == 1 else te.sqrt(n)
        return te.if_then_else(n.equal(zero), zero, read(i) / n)  # a zero norm gives 0, as onnx's reference
    return [compute(te_shape(shape), body, ctx.name(node.name), "lp_norm")]


def lower_hardmax(node, ins, ctx):
    """1 at the first maximum over the axis (opset >= 13) or over the trailing block (before), else 0."""
    shape = tuple(node.in_shapes[0])
    axes = softmax_axes(node, len(shape))
    x = as_tensor(ins[0], ctx, f"{node.name}_x")
    read = reader(x, shape)
    mx = reduce_compute(shape, axes, False, te.max, read, ctx.name(f"{node.name}_max"))

    def flat(i):
        out = None
        for a in axes:
            out = i[a] if out is None else out * shape[a] + i[a]
        return out
    big = te.const(2**31 - 1, "int32")
    first = reduce_compute(shape, axes, False, te.min,
                           lambda i: te.if_then_else(read(i).equal(mx[stat_index(i, axes)]), flat(i), big),
                           ctx.name(f"{node.name}_first"))
    one, zero = te.const(1, x.dtype), te.const(0, x.dtype)
    return [compute(te_shape(shape), lambda *i: te.if_then_else(flat(i).equal(first[stat_index(i, axes)]), one, zero),
                    ctx.name(node.name), "hardmax")]


OPS = {
    "RMSNormalization": spec(lower_rms_norm, FLOATS, ("axis", "epsilon", "stash_type"), required=2),
    "GroupNormalization": spec(lower_group_norm, FLOATS, ("epsilon", "num_groups", "stash_type"),
                               "scale/bias per group (opset 18) or per channel (21)", 3),
    "MeanVarianceNormalization": spec(lower_mvn, FLOATS, ("axes",)),
    "LpNormalization": spec(lower_lp_norm, FLOATS, ("axis", "p"), "p = 1 or 2"),
    "Hardmax": spec(lower_hardmax, FLOATS, ("axis",), "opset < 13 coerces to 2-D"),
}
