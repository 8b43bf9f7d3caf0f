"""Conv and ConvTranspose (1-D/2-D/3-D, NCHW as ONNX gives it) lowered to te; ConvNHWC, the channels-last 2-D
conv that layout_pass makes of Conv.

A conv is a padded-input stage (select on the border, inlined by the search) and one multiply-add reduction over
(input channel of the group, kernel taps), as workloads.c2d/c1d/c3d/dep; the bias is its own element-wise compute
so that fusion treats it like any epilogue. A strided ConvTranspose (dilation 1) runs one conv per output phase
(`_phase_transpose`, no multiplications by inserted zeros); with dilations it dilates and pads its input into one
stage and runs a conv with the flipped kernel over it (as TVM's conv2d_transpose)."""
from __future__ import annotations

import numpy as np

from ...ir.program import te
from ...ir.program.phases import PhaseAxis
from ...search.default_schedule import weight_block
from .nn_util import as_tensor, compute, ints, spec, zero
from .window import Window, live_taps, pad_nchw, pad_spatial, padded_at, taps, trimmed, window
from .winograd import conv_winograd_nhwc, tile_size


def _shapes(node):
    xs, ws = tuple(node.in_shapes[0]), tuple(node.in_shapes[1])
    nd = len(xs) - 2
    if not 1 <= nd <= 3 or len(ws) != len(xs):
        raise node.unsupported(f"input of shape {list(xs)} and weight of shape {list(ws)}: only 1-D, 2-D and 3-D "
                               "convolutions are supported")
    kernel = ints(node, "kernel_shape", ws[2:], nd)
    if kernel != ws[2:]:
        raise node.unsupported(f"kernel_shape {list(kernel)} differs from the weight's {list(ws[2:])}")
    group = int(node.attrs.get("group", 1))
    if group < 1:
        raise node.unsupported(f"group={group} must be positive")
    return xs, ws, nd, group


def _channel(co, rc, per_group_out: int, per_group_in: int, group: int):
    """The input channel that output channel `co` reads at reduction index `rc` (None: no channel axis)."""
    if group == 1:
        return 0 if rc is None else rc
    first = co if per_group_out == 1 else co // per_group_out
    if per_group_in == 1:
        return first
    return first * per_group_in + rc.var


def _add_bias(node, out, b, ctx):
    if b is None:
        return out
    bias = as_tensor(b, ctx, f"{node.name}_bias")
    if tuple(bias.shape) != (out.shape[1],):
        raise node.unsupported(f"bias of shape {list(bias.shape)} should be ({out.shape[1]},)")
    return compute(out.shape, lambda n, c, *s: out[(n, c) + s] + bias[c], ctx.name(f"{node.name}_bias_add"),
                   "bias_add")


def _conv(node, padded, w, win: Window, group: int, name: str):
    """out[n, co, o...] = sum_{rc, r...} padded[n, ci(co, rc), o*s + r*d ...] * w[co, rc, r...]."""
    nd = len(win.kernel)
    M, cg = w.shape[0], w.shape[1]
    rc = te.reduce_axis((0, cg), "rc") if cg > 1 else None
    rs = [te.reduce_axis((0, k), n) for k, n in zip(win.kernel, ("rd", "rh", "rw")[3 - nd:])]
    shape = (padded.shape[0], M) + win.out

    def body(n, co, *o):
        ci = _channel(co, rc, M // group, cg, group)
        src = padded[(n, ci) + tuple(taps(o[d], rs[d], win, d) for d in range(nd))]
        wv = w[(co, rc if rc is not None else 0) + tuple(rs)]
        return te.sum(src * wv, axis=([rc] if rc is not None else []) + rs)
    return compute(shape, body, name, f"conv{nd}d_nchw")


def lower_conv(node, ins, ctx):
    xs, ws, nd, group = _shapes(node)
    x, w = as_tensor(ins[0], ctx, f"{node.name}_x"), as_tensor(ins[1], ctx, f"{node.name}_w")
    C, M, cg = xs[1], ws[0], ws[1]
    if C % group or M % group or cg * group != C:
        raise node.unsupported(f"group={group} does not match {C} input channels, {M} output channels and a "
                               f"weight of {cg} channels per group")
    win = window(node, xs[2:], ws[2:])
    padded = pad_spatial(x, xs[2:], win, zero(x.dtype), ctx.name(f"{node.name}_pad"))
    out = _conv(node, padded, w, win, group, ctx.name(node.name))
    return [_add_bias(node, out, ins[2] if len(ins) > 2 else None, ctx)]


# ----------------------------------------------------------------------------- channels-last (layout_pass)

def lower_conv_nhwc(node, ins, ctx):
    """The internal ConvNHWC of layout_pass: x (N, H, W, C), w (KH, KW, C/group, CO), as workloads.c2d/dep:
    out[n, oh, ow, co] = sum_{rh, rw, rc} pad[n, oh*s + rh*d, ow*s + rw*d, ci(co, rc)] * w[rh, rw, rc, co]."""
    xs, ws = tuple(node.in_shapes[0]), tuple(node.in_shapes[1])
    if len(xs) != 4 or len(ws) != 4:
        raise node.unsupported(f"input {list(xs)} and weight {list(ws)} of a channels-last conv must be 4-D")
    kernel = ints(node, "kernel_shape", ws[:2], 2)
    group, (C, cg, M) = int(node.attrs.get("group", 1)), (xs[3], ws[2], ws[3])
    if kernel != ws[:2] or group < 1 or C % group or M % group or cg * group != C:
        raise node.unsupported(f"kernel_shape {list(kernel)}, group={group}: do not match input {list(xs)} and "
                               f"weight {list(ws)}")
    x = as_tensor(ins[0], ctx, f"{node.name}_x")
    win = window(node, xs[1:3], ws[:2])
    if isinstance(ins[1], np.ndarray):
        ins, ws, win = _without_dead_taps(ins, win, xs[1:3])
    # float32 only: the transforms' error grows with m, and float16's 11 bits would not hold F(4, 3)'s
    winograd = group == 1 and isinstance(ins[1], np.ndarray) and x.dtype == "float32"
    m = tile_size(win, xs[0], C, M) if winograd else None
    if m is not None:
        out = conv_winograd_nhwc(node, x, ins[1], xs[1:3], win, m, ctx)
        return [_add_bias_last(node, out, ins[2] if len(ins) > 2 else None, ctx)]
    block = weight_block(M, x.dtype) if group == 1 and isinstance(ins[1], np.ndarray) else None
    w = as_tensor(ins[1] if block is None else _packed(ins[1], block), ctx, f"{node.name}_w")
    padded = pad_spatial(x, xs[1:3], win, zero(x.dtype), ctx.name(f"{node.name}_pad"), channels_last=True)
    rh, rw = te.reduce_axis((0, ws[0]), "rh"), te.reduce_axis((0, ws[1]), "rw")
    rc = te.reduce_axis((0, cg), "rc") if cg > 1 else None
    depthwise = group == C and cg == 1

    reduce = [rh, rw] + ([rc] if rc is not None else [])

    def body(n, oh, ow, co):
        ci = _channel(co, rc, M // group, cg, group)
        src = padded[n, taps(oh, rh, win, 0), taps(ow, rw, win, 1), ci]
        r = rc if rc is not None else 0
        wv = w[rh, rw, r, co] if block is None else w[co // block, rh, rw, r, co % block]
        return te.sum(src * wv, axis=reduce)
    tag = "depthwise_conv2d_nhwc" if depthwise else "conv2d_nhwc"
    out = compute((xs[0],) + win.out + (M,), body, ctx.name(node.name), tag)
    return [_add_bias_last(node, out, ins[2] if len(ins) > 2 else None, ctx)]


def _without_dead_taps(ins, win: Window, sizes):
    """(inputs, weight shape, window) with the kernel taps that read only padding cut from the constant HWIO
    weight: they multiply zeros (an atrous conv whose rate exceeds its map is a 1x1 conv)."""
    taps = live_taps(win, sizes)
    if all(lo == 0 and hi == k - 1 for (lo, hi), k in zip(taps, win.kernel)):
        return ins, tuple(ins[1].shape), win
    (h0, h1), (w0, w1) = taps
    w = np.ascontiguousarray(ins[1][h0:h1 + 1, w0:w1 + 1])
    return [ins[0], w] + list(ins[2:]), w.shape, trimmed(win, sizes, taps)


def _packed(w, block: int):
    """HWIO weights (KH, KW, CI, CO) as (CO / block, KH, KW, CI, block): a block of output channels contiguous."""
    kh, kw, ci, co = w.shape
    return np.ascontiguousarray(w.reshape(kh, kw, ci, co // block, block).transpose(3, 0, 1, 2, 4))


def _add_bias_last(node, out, b, ctx):
    if b is None:
        return out
    bias = as_tensor(b, ctx, f"{node.name}_bias")
    if tuple(bias.shape) != (out.shape[-1],):
        raise node.unsupported(f"bias of shape {list(bias.shape)} should be ({out.shape[-1]},)")
    return compute(out.shape, lambda n, h, w, c: out[n, h, w, c] + bias[c], ctx.name(f"{node.name}_bias_add"),
                   "bias_add")


# ----------------------------------------------------------------------------- ConvTranspose

def _transpose_pads(node, sizes, kernel, strides, dilations):
    """(before, after, output sizes) of a ConvTranspose, by the ONNX rules for pads, output_shape, auto_pad."""
    nd = len(sizes)
    out_pad = ints(node, "output_padding", (0,) * nd, nd)
    full = [s * (n - 1) + op + d * (k - 1) + 1 for s, n, op, d, k in zip(strides, sizes, out_pad, dilations, kernel)]
    auto = node.attrs.get("auto_pad", "NOTSET")
    wanted = node.attrs.get("output_shape")
    if wanted is None and auto in ("SAME_UPPER", "SAME_LOWER"):
        wanted = [n * s for n, s in zip(sizes, strides)]
    if auto not in ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"):
        raise node.unsupported(f"auto_pad={auto!r} is not supported")
    if wanted is not None:
        wanted = [int(v) for v in list(wanted)[-nd:]]
        # a larger output_shape gets no pads: its extra positions see no input (onnxruntime clamps the same way)
        total = [max(0, f - o) for f, o in zip(full, wanted)]
        big = [t - t // 2 for t in total]
        before = [t // 2 for t in total] if auto == "SAME_UPPER" else big
        return tuple(before), tuple(t - b for t, b in zip(total, before)), tuple(wanted)
    pads = ints(node, "pads", (0,) * 2 * nd, 2 * nd) if auto == "NOTSET" else (0,) * 2 * nd
    out = tuple(f - b - a for f, b, a in zip(full, pads[:nd], pads[nd:]))
    return pads[:nd], pads[nd:], out


def _dilate_pad(x, sizes, kernel, strides, dilations, before, out, name):
    """U[n, c, y...] = x[n, c, (y - P)/s ...] where that is an integer inside x, else 0 (P = d*(k-1) - before)."""
    front = [d * (k - 1) - b for d, k, b in zip(dilations, kernel, before)]
    shape = tuple(x.shape[:2]) + tuple(o + d * (k - 1) for o, d, k in zip(out, dilations, kernel))

    def body(n, c, *ys):
        conds, src = [], [n, c]
        for y, p, s, size, ext in zip(ys, front, strides, sizes, shape[2:]):
            last = p + (size - 1) * s       # the last position holding an input element
            if p > 0:
                conds.append(y >= p)
            if last < ext - 1:
                conds.append(y <= last)
            shifted = y - p if p else y
            if s > 1:
                conds.append((shifted % s).equal(0))
                shifted = shifted // s
            src.append(shifted)
        read = x[tuple(src)]
        return te.if_then_else(te.all(*conds), read, zero(x.dtype)) if conds else read
    if all(p == 0 for p in front) and all(s == 1 for s in strides) and shape[2:] == tuple(sizes):
        return x
    return compute(shape, body, name, "pad")


def lower_conv_transpose(node, ins, ctx):
    xs, ws, nd, group = _shapes(node)
    x, w = as_tensor(ins[0], ctx, f"{node.name}_x"), ins[1]
    C, mg = xs[1], ws[1]
    if ws[0] != C or C % group:
        raise node.unsupported(f"weight of shape {list(ws)} does not match {C} input channels and group={group}")
    kernel = ws[2:]
    strides = ints(node, "strides", (1,) * nd, nd)
    dilations = ints(node, "dilations", (1,) * nd, nd)
    before, _, out = _transpose_pads(node, xs[2:], kernel, strides, dilations)
    if min(out) < 1:
        raise node.unsupported(f"output size {list(out)} is empty")
    bias = ins[2] if len(ins) > 2 else None
    if max(strides) > 1 and max(dilations) == 1:
        return [_phase_transpose(node, x, w, xs, (mg, group), kernel, strides, before, out, bias, ctx)]
    w = as_tensor(w, ctx, f"{node.name}_w")
    u = _dilate_pad(x, xs[2:], kernel, strides, dilations, before, out, ctx.name(f"{node.name}_dilate"))
    cg = C // group
    rc = te.reduce_axis((0, cg), "rc") if cg > 1 else None
    rs = [te.reduce_axis((0, k), n) for k, n in zip(kernel, ("rd", "rh", "rw")[3 - nd:])]
    win = Window(kernel, (1,) * nd, dilations, (0,) * nd, (0,) * nd, out)

    def body(n, co, *o):
        g = co if mg == 1 else co // mg
        ci = (0 if cg == 1 else rc) if group == 1 else (g if cg == 1 else g * cg + rc.var)
        src = u[(n, ci) + tuple(taps(o[d], rs[d], win, d) for d in range(nd))]
        flipped = tuple(k - 1 - r.var for k, r in zip(kernel, rs))
        local = 0 if mg == 1 else (co if group == 1 else co % mg)
        wv = w[(ci, local) + flipped]
        return te.sum(src * wv, axis=([rc] if rc is not None else []) + rs)
    conv = compute((xs[0], mg * group) + out, body, ctx.name(node.name), f"conv{nd}d_transpose_nchw")
    return [_add_bias(node, conv, bias, ctx)]


def _phase_transpose(node, x, w, xs, groups, kernel, strides, before, out, bias, ctx):
    """A strided ConvTranspose (dilation 1) without the inserted zeros, as workloads.t2d (the index arithmetic of
    ir.phases, per spatial dimension). Each phase is a conv over the input with its own taps, the same for all its
    outputs (`_phases`), interleaved into the output (with the bias) by a copy: s^d times fewer multiply-adds than over
    the zero-inserted input. Constant weights (group 1) are laid out (k..., C, M) with taps zero-padded to whole
    phases, and the phases channels-last (N, r..., q..., M): a vector of output channels per input element, as
    workloads.t2d, and the interleaving copy moves the channels back to the front."""
    (mg, group), nd, sizes = groups, len(kernel), xs[2:]
    C, cg = xs[1], xs[1] // group
    axes = [PhaseAxis(*a) for a in zip(sizes, out, kernel, strides, before)]
    last = isinstance(w, np.ndarray) and group == 1
    if last:
        full = tuple(a.taps * a.stride for a in axes)
        w = np.pad(w, [(0, 0), (0, 0)] + [(0, f - k) for f, k in zip(full, kernel)])
        w, kernel = np.ascontiguousarray(np.moveaxis(w, (0, 1), (nd, nd + 1))), full
    w = as_tensor(w, ctx, f"{node.name}_w")
    front, back = [a.front for a in axes], [a.back for a in axes]
    spatial = tuple(n + f + a for n, f, a in zip(sizes, front, back))
    if last:   # padded and channels-last in one copy: a tile's rows then broadcast from one run of channels
        padded = compute((xs[0],) + spatial + (C,), lambda n, *pc: padded_at(x, sizes, front, back, zero(x.dtype),
                                                                               [n, pc[-1]], pc[:-1], ()),
                         ctx.name(f"{node.name}_pad"), "pad")
    else:
        padded = x if not any(front + back) else pad_nchw(x, sizes, front, back, zero(x.dtype),
                                                          ctx.name(f"{node.name}_pad"))
    rc = te.reduce_axis((0, cg), "rc") if cg > 1 else None
    rt = [te.reduce_axis((0, a.taps), n) for a, n in zip(axes, ("rd", "rh", "rw")[3 - nd:])]

    def body(n, *idx):
        co, r, q = (idx[-1], idx[:nd], idx[nd:-1]) if last else (idx[0], idx[1:nd + 1], idx[nd + 1:])
        ci = _channel(co, rc, mg, cg, group)
        src = [a.input_at(qd, ph, t) for a, qd, ph, t in zip(axes, q, r, rt)]
        taps_ = tuple(a.kernel_at(ph, t) for a, ph, t in zip(axes, r, rt))
        local = co if group == 1 else co % mg
        at = (n,) + tuple(src) + (ci,) if last else (n, ci) + tuple(src)
        prod = padded[at] * (w[taps_ + (ci, co)] if last else w[(ci, local) + taps_])
        past = [k < K for k, K, s in zip(taps_, kernel, strides) if K % s]   # a phase's last tap past the kernel
        if past:
            prod = te.if_then_else(te.all(*past), prod, zero(x.dtype))
        return te.sum(prod, axis=rt + ([rc] if rc is not None else []))   # channels innermost, as workloads.t2d
    M, grid = mg * group, tuple(strides) + tuple(a.positions for a in axes)
    phases = compute((xs[0],) + grid + (M,) if last else (xs[0], M) + grid, body, ctx.name(f"{node.name}_phases"),
                     f"conv{nd}d_transpose_{'nhwc' if last else 'nchw'}")
    b = as_tensor(bias, ctx, f"{node.name}_bias") if bias is not None else None
    if b is not None and tuple(b.shape) != (M,):
        raise node.unsupported(f"bias of shape {list(b.shape)} should be ({M},)")

    def interleave(n, co, *o):
        at = tuple(od % s for od, s in zip(o, strides)) + tuple(od // s for od, s in zip(o, strides))
        v = phases[(n,) + at + (co,)] if last else phases[(n, co) + at]
        return v + b[co] if b is not None else v
    return compute((xs[0], M) + tuple(out), interleave, ctx.name(node.name), "interleave")


_CONV_ATTRS = ("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")
OPS = {
    "Conv": spec(lower_conv, attrs=_CONV_ATTRS, note="1-D/2-D/3-D, groups (depthwise), optional bias",
                 required=2),
    "ConvTranspose": spec(lower_conv_transpose, attrs=_CONV_ATTRS + ("output_padding", "output_shape"),
                          note="1-D/2-D/3-D, groups, optional bias", required=2),
}
