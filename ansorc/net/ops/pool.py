"""MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool (1-D/2-D/3-D, NCHW) lowered to te.

A pool is a padded stage (-inf or 0 on the border) and one max/sum reduction over the kernel taps; an average
divides by the per-position count in its own element-wise compute. The count depends only on the output
position and is separable per spatial dim, so it is a product of small per-dim select chains built here from
the exact counts (ceil_mode, count_include_pad and dilations all included). The *_nhwc lowerings are the 2-D
channels-last pools of layout_pass (internal ops, layout.INTERNAL)."""
from __future__ import annotations

from collections import Counter

import numpy as np

from ...ir.program import te
from .nn_util import MAX_DTYPES, as_tensor, compute, ints, lowest, spec, zero
from .window import Window, pad_spatial, taps, window


def pool_window(node, sizes, kernel, ceil_mode: bool) -> Window:
    """The pool's window; pads of at least the kernel are refused (as onnxruntime does): a window wholly in
    the padding has no element to take the max or the average of."""
    win = window(node, sizes, kernel, ceil_mode)
    pads = ints(node, "pads", (0,) * 2 * len(sizes), 2 * len(sizes))
    if node.attrs.get("auto_pad", "NOTSET") == "NOTSET" and any(p >= k for p, k in zip(pads, kernel * 2)):
        raise node.unsupported(f"pads {list(pads)} must be smaller than kernel_shape {list(kernel)}")
    return win


def _prepare(node, ins, ctx):
    shape = tuple(node.in_shapes[0])
    nd = len(shape) - 2
    if not 1 <= nd <= 3:
        raise node.unsupported(f"input of shape {list(shape)}: only 1-D, 2-D and 3-D pooling is supported")
    if "kernel_shape" not in node.attrs:
        raise node.unsupported("attribute kernel_shape is required")
    kernel = ints(node, "kernel_shape", (), nd)
    ceil_mode = bool(node.attrs.get("ceil_mode", 0))
    win = pool_window(node, shape[2:], kernel, ceil_mode)
    return as_tensor(ins[0], ctx, f"{node.name}_x"), shape, win


def _pool(node, padded, win: Window, combiner, name: str):
    nd = len(win.kernel)
    rs = [te.reduce_axis((0, k), n) for k, n in zip(win.kernel, ("rd", "rh", "rw")[3 - nd:])]

    def body(n, c, *o):
        return combiner(padded[(n, c) + tuple(taps(o[d], rs[d], win, d) for d in range(nd))], axis=rs)
    return compute(padded.shape[:2] + win.out, body, name, "pool")


def lower_max_pool(node, ins, ctx):
    x, shape, win = _prepare(node, ins, ctx)
    padded = pad_spatial(x, shape[2:], win, lowest(x.dtype), ctx.name(f"{node.name}_pad"))
    out = _pool(node, padded, win, te.max, ctx.name(node.name))
    if len(node.out_shapes) < 2 or node.out_shapes[1] is None:
        return [out]
    return [out, _indices(node, padded, out, shape, win, ctx)]


def _indices(node, padded, best, shape, win: Window, ctx):
    """MaxPool's Indices: the flat NCHW index (storage_order=1: spatial dims column-major) of the smallest-index
    input element equal to the max of each window; padding never wins."""
    nd = len(win.kernel)
    col_major = bool(node.attrs.get("storage_order", 0))
    rs = [te.reduce_axis((0, k), n) for k, n in zip(win.kernel, ("rd", "rh", "rw")[3 - nd:])]
    miss = te.const(2**62, "int64")

    def body(n, c, *o):
        pos = [taps(o[d], rs[d], win, d) for d in range(nd)]
        coords = [p - b if b else p for p, b in zip(pos, win.before)]
        inside = te.all(*[q >= 0 for q in coords], *[q < size for q, size in zip(coords, shape[2:])])
        dims = list(zip(coords, shape[2:]))
        flat = n * shape[1] + c
        for q, size in (dims[::-1] if col_major else dims):
            flat = flat * size + q
        hit = te.all(inside, padded[(n, c) + tuple(pos)].equal(best[(n, c) + o]))
        return te.min(te.if_then_else(hit, flat.astype("int64"), miss), axis=rs)
    return compute(best.shape, body, ctx.name(f"{node.name}_indices"), "pool_indices")


def _counts(size: int, win: Window, d: int, include_pad: bool) -> list:
    """How many taps of each output position along dim d fall inside the input (or inside input + pads)."""
    lo, hi = (-win.before[d], size + win.after[d]) if include_pad else (0, size)
    o = np.arange(win.out[d])[:, None]
    pos = o * win.strides[d] - win.before[d] + np.arange(win.kernel[d])[None, :] * win.dilations[d]
    return [int(c) for c in ((pos >= lo) & (pos < hi)).sum(axis=1)]


def _table(o, values: list):
    """An int expression equal to values[o]: the most common value, with selects for the others."""
    common = Counter(values).most_common(1)[0][0]
    expr = te.const(common, "int32")
    for i, v in enumerate(values):
        if v != common:
            expr = te.if_then_else(o.equal(i), te.const(v, "int32"), expr)
    return expr


def lower_average_pool(node, ins, ctx):
    x, shape, win = _prepare(node, ins, ctx)
    include = bool(node.attrs.get("count_include_pad", 0))
    padded = pad_spatial(x, shape[2:], win, zero(x.dtype), ctx.name(f"{node.name}_pad"))
    total = _pool(node, padded, win, te.sum, ctx.name(f"{node.name}_sum"))
    counts = [_counts(n, win, d, include) for d, n in enumerate(shape[2:])]
    if min(min(c) for c in counts) < 1:
        raise node.unsupported("a pooling window covers no input element")

    def body(n, c, *o):
        count = None
        for d, values in enumerate(counts):
            term = _table(o[d], values)
            count = term if count is None else count * term
        return total[(n, c) + o] / count.astype(x.dtype)
    return [compute(total.shape, body, ctx.name(node.name), "pool_average")]


def _power(v, p: int):
    return v * v if p == 2 else te.abs(v) if p == 1 else te.pow(te.abs(v), float(p))


def _root(v, p: int):
    return te.sqrt(v) if p == 2 else v if p == 1 else te.pow(v, 1.0 / p)


def lower_lp_pool(node, ins, ctx):
    """(sum over the window of |x|^p)^(1/p), zero padding: the powers in a stage of their own, then a sum pool."""
    x, shape, win = _prepare(node, ins, ctx)
    p = int(node.attrs.get("p", 2))
    if p < 1:
        raise node.unsupported(f"p={p} must be positive")
    powered = compute(shape, lambda *i: _power(x[i], p), ctx.name(f"{node.name}_pow"), "pool_pow")
    padded = pad_spatial(powered, shape[2:], win, zero(x.dtype), ctx.name(f"{node.name}_pad"))
    total = _pool(node, padded, win, te.sum, ctx.name(f"{node.name}_sum"))
    return [compute(total.shape, lambda *i: _root(total[i], p), ctx.name(node.name), "pool_root")]


def lower_global_lp_pool(node, ins, ctx):
    p = int(node.attrs.get("p", 2))
    if p < 1:
        raise node.unsupported(f"p={p} must be positive")
    shape = tuple(node.in_shapes[0])
    x = as_tensor(ins[0], ctx, f"{node.name}_x")
    powered = compute(shape, lambda *i: _power(x[i], p), ctx.name(f"{node.name}_pow"), "pool_pow")
    total = _global(node, [powered], ctx, te.sum)
    return [compute(total.shape, lambda *i: _root(total[i], p), ctx.name(node.name), "pool_root")]


def _global(node, ins, ctx, combiner):
    shape = tuple(node.in_shapes[0])
    if len(shape) < 3:
        raise node.unsupported(f"input of shape {list(shape)} has no spatial dimension")
    x = as_tensor(ins[0], ctx, f"{node.name}_x")
    rs = [te.reduce_axis((0, n), f"r{d}") for d, n in enumerate(shape[2:])]
    out_shape = shape[:2] + (1,) * len(rs)
    name = ctx.name(node.name if combiner is te.max else f"{node.name}_sum")
    return compute(out_shape, lambda n, c, *_: combiner(x[(n, c) + tuple(rs)], axis=rs), name, "pool_global")


def lower_global_average_pool(node, ins, ctx):
    total = _global(node, ins, ctx, te.sum)
    count = float(np.prod(node.in_shapes[0][2:]))
    return [compute(total.shape, lambda *i: total[i] / count, ctx.name(node.name), "pool_average")]


def lower_global_max_pool(node, ins, ctx):
    return [_global(node, ins, ctx, te.max)]


# ----------------------------------------------------------------------------- channels-last (layout_pass)

def _nhwc(node, ins, ctx, fill):
    """(x, padded, window, (H, W)) of a 2-D pool on x (N, H, W, C)."""
    shape = tuple(node.in_shapes[0])
    if len(shape) != 4 or "kernel_shape" not in node.attrs:
        raise node.unsupported(f"a channels-last pool needs a 4-D input (got {list(shape)}) and kernel_shape")
    win = pool_window(node, shape[1:3], ints(node, "kernel_shape", (), 2), bool(node.attrs.get("ceil_mode", 0)))
    x = as_tensor(ins[0], ctx, f"{node.name}_x")
    return x, pad_spatial(x, shape[1:3], win, fill(x.dtype), ctx.name(f"{node.name}_pad"), True), win, shape[1:3]


def _pool_last(padded, win: Window, combiner, name: str):
    rh, rw = te.reduce_axis((0, win.kernel[0]), "rh"), te.reduce_axis((0, win.kernel[1]), "rw")
    return compute((padded.shape[0],) + win.out + (padded.shape[-1],), lambda n, h, w, c: combiner(
        padded[n, taps(h, rh, win, 0), taps(w, rw, win, 1), c], axis=[rh, rw]), name, "pool")


def lower_max_pool_nhwc(node, ins, ctx):
    _, padded, win, _ = _nhwc(node, ins, ctx, lowest)
    return [_pool_last(padded, win, te.max, ctx.name(node.name))]


def lower_average_pool_nhwc(node, ins, ctx):
    x, padded, win, sizes = _nhwc(node, ins, ctx, zero)
    total = _pool_last(padded, win, te.sum, ctx.name(f"{node.name}_sum"))
    include = bool(node.attrs.get("count_include_pad", 0))
    counts = [_counts(n, win, d, include) for d, n in enumerate(sizes)]
    if min(min(c) for c in counts) < 1:
        raise node.unsupported("a pooling window covers no input element")
    return [compute(total.shape, lambda n, h, w, c: total[n, h, w, c] / (
        _table(h, counts[0]) * _table(w, counts[1])).astype(x.dtype), ctx.name(node.name), "pool_average")]


def _global_last(node, ins, ctx, combiner, name):
    shape = tuple(node.in_shapes[0])
    x = as_tensor(ins[0], ctx, f"{node.name}_x")
    rh, rw = te.reduce_axis((0, shape[1]), "rh"), te.reduce_axis((0, shape[2]), "rw")
    return compute((shape[0], 1, 1, shape[3]), lambda n, h, w, c: combiner(x[n, rh, rw, c], axis=[rh, rw]),
                   ctx.name(name), "pool_global")


def lower_global_average_pool_nhwc(node, ins, ctx):
    total = _global_last(node, ins, ctx, te.sum, f"{node.name}_sum")
    count = float(np.prod(node.in_shapes[0][1:3]))
    return [compute(total.shape, lambda *i: total[i] / count, ctx.name(node.name), "pool_average")]


def lower_global_max_pool_nhwc(node, ins, ctx):
    return [_global_last(node, ins, ctx, te.max, node.name)]


_POOL_ATTRS = ("auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "strides")
OPS = {
    "MaxPool": spec(lower_max_pool, MAX_DTYPES, attrs=_POOL_ATTRS + ("storage_order",),
                    note="1-D/2-D/3-D; Indices output"),
    "AveragePool": spec(lower_average_pool, attrs=_POOL_ATTRS + ("count_include_pad",), note="1-D/2-D/3-D"),
    "GlobalAveragePool": spec(lower_global_average_pool),
    "GlobalMaxPool": spec(lower_global_max_pool, MAX_DTYPES),
    "LpPool": spec(lower_lp_pool, attrs=_POOL_ATTRS + ("p",), note="1-D/2-D/3-D"),
    "GlobalLpPool": spec(lower_global_lp_pool, attrs=("p",)),
}
