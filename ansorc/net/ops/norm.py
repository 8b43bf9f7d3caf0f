"""BatchNormalization, InstanceNormalization, LayerNormalization, LRN, Softmax and LogSoftmax lowered to te.

Statistics are reductions into their own computes (mean, then the variance around it: two passes, as numpy and
onnxruntime, so large offsets do not cancel); the normalisation is one element-wise compute. Softmax is
max-reduce, exp, sum-reduce, divide, as workloads.sfm."""
from __future__ import annotations

import math

import numpy as np

from ...ir.program import te
from .nn_util import (as_tensor, broadcast_index, broadcast_shape, compute, norm_axis, opset, reader, spec, te_shape)
from .reduce import reduce_compute, stat_index


def _channel_vectors(node, ins, ctx, names):
    """Per-channel inputs as readers c -> Expr (constants become weights)."""
    out = []
    for x, shape, name in zip(ins[1:], node.in_shapes[1:], names):
        if x is None:
            out.append(None)
            continue
        if tuple(shape) != (node.in_shapes[0][1],):
            raise node.unsupported(f"{name} of shape {list(shape)} should be ({node.in_shapes[0][1]},)")
        t = as_tensor(x, ctx, f"{node.name}_{name}")
        out.append(lambda c, t=t: t[c])
    return out


def lower_batch_norm(node, ins, ctx):
    if node.attrs.get("training_mode", 0):
        return _batch_norm_training(node, ins, ctx)
    if len(node.out_shapes) > 1:
        raise node.unsupported("running statistics outputs need training_mode=1 (opset >= 14)")
    if not node.attrs.get("spatial", 1) or not node.attrs.get("is_test", 1) and opset(node) < 7:
        raise node.unsupported("only the spatial, inference form is supported")
    shape = tuple(node.in_shapes[0])
    if len(shape) < 2:
        raise node.unsupported(f"input of shape {list(shape)} has no channel dimension")
    eps = float(node.attrs.get("epsilon", 1e-5))
    x = as_tensor(ins[0], ctx, f"{node.name}_x")
    if all(isinstance(v, np.ndarray) for v in ins[1:5]):
        # constant statistics: fold into one scale and one shift per channel
        scale, bias, mean, var = (np.asarray(v, np.float64) for v in ins[1:5])
        a = scale / np.sqrt(var + eps)
        b = bias - mean * a
        ins = [ins[0], a.astype(x.dtype), b.astype(x.dtype)]
        sc, sh = _channel_vectors(node, ins, ctx, ("scale", "shift"))
        return [compute(shape, lambda *i: x[i] * sc(i[1]) + sh(i[1]), ctx.name(node.name), "batch_norm")]
    sc, bi, mu, var = _channel_vectors(node, ins, ctx, ("scale", "bias", "mean", "var"))

    def body(*i):
        c = i[1]
        return (x[i] - mu(c)) * (sc(c) / te.sqrt(var(c) + eps)) + bi(c)
    return [compute(shape, body, ctx.name(node.name), "batch_norm")]


def _batch_norm_training(node, ins, ctx):
    """training_mode=1 (opset >= 14): normalise with the batch statistics (population variance); the running
    statistics outputs are input * momentum + batch * (1 - momentum)."""
    shape = tuple(node.in_shapes[0])
    if opset(node) < 14 or len(shape) < 2:
        raise node.unsupported("training mode needs opset >= 14 and an input with a channel dimension")
    eps, momentum = float(node.attrs.get("epsilon", 1e-5)), float(node.attrs.get("momentum", 0.9))
    x = as_tensor(ins[0], ctx, f"{node.name}_x")
    sc, bi, mu, var = _channel_vectors(node, ins, ctx, ("scale", "bias", "mean", "var"))
    axes = tuple(d for d in range(len(shape)) if d != 1)
    s1, s2, inv = moments(node, x, shape, axes, ctx)
    outs = [compute(shape, lambda *i: (x[i] - s1[i[1]] * inv) / te.sqrt(s2[i[1]] * inv + eps) * sc(i[1]) +
                    bi(i[1]), ctx.name(node.name), "batch_norm")]
    for k, (old, stat) in enumerate(((mu, lambda c: s1[c] * inv), (var, lambda c: s2[c] * inv)), start=1):
        if len(node.out_shapes) <= k or node.out_shapes[k] is None:
            outs.append(None)  # not asked for; keeps later outputs at their ONNX positions
        else:
            outs.append(compute((shape[1],), lambda c, old=old, stat=stat: old(c) * momentum + stat(c) *
                                (1.0 - momentum), ctx.name(f"{node.name}_running{k}"), "batch_norm_stat"))
    return outs


def moments(node, x, shape, axes, ctx):
    """Sum and sum of squared deviations over `axes` (keepdims=0 layouts), and the count."""
    count = math.prod(shape[a] for a in axes)
    read = reader(x, shape)
    s1 = reduce_compute(shape, axes, False, te.sum, read, ctx.name(f"{node.name}_sum"))
    inv = 1.0 / count

    def deviation(i):
        d = read(i) - s1[stat_index(i, axes)] * inv
        return d * d
    s2 = reduce_compute(shape, axes, False, te.sum, deviation, ctx.name(f"{node.name}_sqsum"))
    return s1, s2, inv


def lower_instance_norm(node, ins, ctx):
    shape = tuple(node.in_shapes[0])
    if len(shape) < 3:
        raise node.unsupported(f"input of shape {list(shape)} has no spatial dimension")
    eps = float(node.attrs.get("epsilon", 1e-5))
    x = as_tensor(ins[0], ctx, f"{node.name}_x")
    sc, bi = _channel_vectors(node, ins[:3], ctx, ("scale", "bias"))
    axes = tuple(range(2, len(shape)))
    s1, s2, inv = moments(node, x, shape, axes, ctx)

    def body(*i):
        st = stat_index(i, axes)
        return (x[i] - s1[st] * inv) * (sc(i[1]) / te.sqrt(s2[st] * inv + eps)) + bi(i[1])
    return [compute(shape, body, ctx.name(node.name), "instance_norm")]


def lower_layer_norm(node, ins, ctx):
    shape = tuple(node.in_shapes[0])
    rank = len(shape)
    axis = norm_axis(node, int(node.attrs.get("axis", -1)), rank)
    if int(node.attrs.get("stash_type", 1)) != 1:
        raise node.unsupported("stash_type other than 1 (float32) is not supported")
    eps = float(node.attrs.get("epsilon", 1e-5))
    x = as_tensor(ins[0], ctx, f"{node.name}_x")
    read = reader(x, shape)
    params = []
    for v, s, what in zip((list(ins) + [None] * 3)[1:3], (tuple(node.in_shapes) + (None,) * 3)[1:3], ("scale", "bias")):
        if v is None:
            params.append(None)
            continue
        if broadcast_shape(node, shape, s) != shape:
            raise node.unsupported(f"{what} of shape {list(s)} does not broadcast to the input {list(shape)}")
        t, s = as_tensor(v, ctx, f"{node.name}_{what}"), tuple(s)
        params.append(lambda i, t=t, s=s: reader(t, s)(broadcast_index(i, s)))
    axes = tuple(range(axis, rank))
    s1, s2, inv = moments(node, x, shape, axes, ctx)

    def body(*i):
        st = stat_index(i, axes)
        y = (read(i) - s1[st] * inv) / te.sqrt(s2[st] * inv + eps)
        if params[0] is not None:
            y = y * params[0](i)
        return y + params[1](i) if params[1] is not None else y
    outs = [compute(te_shape(shape), body, ctx.name(node.name), "layer_norm")]
    stat_shape = te_shape(shape[:axis] + (1,) * (rank - axis))
    extra = [lambda *i: s1[i[:axis] or (0,)] * inv, lambda *i: 1.0 / te.sqrt(s2[i[:axis] or (0,)] * inv + eps)]
    for k, fn in enumerate(extra[:len(node.out_shapes) - 1]):
        wanted = node.out_shapes[k + 1]
        outs.append(None if wanted is None else compute(stat_shape, fn, ctx.name(f"{node.name}_stat{k}"), "stat"))
    return outs


def lower_lrn(node, ins, ctx):
    """Local response normalization across channels: x / (bias + alpha / size * sum of squares) ** beta, the sum
    over channels [c - (size-1)//2, c + ceil((size-1)/2)] clipped to the input."""
    shape = tuple(node.in_shapes[0])
    if len(shape) < 3 or "size" not in node.attrs:
        raise node.unsupported(f"needs an input of rank >= 3 (got {list(shape)}) and the size attribute")
    size = int(node.attrs["size"])
    alpha, beta = float(node.attrs.get("alpha", 1e-4)), float(node.attrs.get("beta", 0.75))
    bias = float(node.attrs.get("bias", 1.0))
    x = as_tensor(ins[0], ctx, f"{node.name}_x")
    r, lo, C = te.reduce_axis((0, size), "rc"), (size - 1) // 2, shape[1]

    def square(n, c, *rest):
        ch = c + (r.var - lo) if lo else c + r.var
        v = x[(n, ch) + rest]
        return te.sum(te.if_then_else(te.all(ch >= 0, ch < C), v * v, 0.0), axis=r)
    sq = compute(shape, square, ctx.name(f"{node.name}_sqsum"), "lrn_sum")
    scale = alpha / size
    return [compute(shape, lambda *i: x[i] / te.pow(sq[i] * scale + bias, beta), ctx.name(node.name), "lrn")]


def softmax_axes(node, rank: int) -> tuple:
    """opset >= 13: the one `axis`; before: every axis from `axis` on (the input coerced to 2-D)."""
    if opset(node) >= 13:
        return (norm_axis(node, int(node.attrs.get("axis", -1)), rank),)
    return tuple(range(norm_axis(node, int(node.attrs.get("axis", 1)), rank), rank))


def lower_softmax(node, ins, ctx):
    shape = tuple(node.in_shapes[0])
    x = as_tensor(ins[0], ctx, f"{node.name}_x")
    read = reader(x, shape)
    axes = softmax_axes(node, len(shape))
    mx = reduce_compute(shape, axes, False, te.max, read, ctx.name(f"{node.name}_max"))
    if node.op_type == "LogSoftmax":
        sm = reduce_compute(shape, axes, False, te.sum, lambda i: te.exp(read(i) - mx[stat_index(i, axes)]),
                            ctx.name(f"{node.name}_sum"))

        def log_body(*i):
            st = stat_index(i, axes)
            return read(i) - mx[st] - te.log(sm[st])
        return [compute(te_shape(shape), log_body, ctx.name(node.name), "log_softmax")]
    ex = compute(te_shape(shape), lambda *i: te.exp(read(i) - mx[stat_index(i, axes)]),
                 ctx.name(f"{node.name}_exp"), "softmax_exp")
    sm = reduce_compute(shape, axes, False, te.sum, reader(ex, shape), ctx.name(f"{node.name}_sum"))
    return [compute(te_shape(shape), lambda *i: ex[i] / sm[stat_index(i, axes)], ctx.name(node.name), "softmax")]


OPS = {
    "BatchNormalization": spec(lower_batch_norm, attrs=("epsilon", "momentum", "spatial", "is_test",
                                                        "training_mode", "consumed_inputs"),
                               note="inference form; training_mode=1 at opset >= 14", required=5),
    "InstanceNormalization": spec(lower_instance_norm, attrs=("epsilon",), required=3),
    "LayerNormalization": spec(lower_layer_norm, attrs=("axis", "epsilon", "stash_type"),
                               note="Mean/InvStdDev outputs supported", required=2),
    "LRN": spec(lower_lrn, attrs=("alpha", "beta", "bias", "size"), note="across channels"),
    "Softmax": spec(lower_softmax, attrs=("axis",), note="opset < 13 coerces to 2-D"),
    "LogSoftmax": spec(lower_softmax, attrs=("axis",), note="opset < 13 coerces to 2-D"),
}
