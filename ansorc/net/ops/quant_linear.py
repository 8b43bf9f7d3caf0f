"""ONNX integer matmul and conv operators lowered to te: MatMulInteger and ConvInteger (int32 results),
QLinearMatMul and QLinearConv (int32 accumulation, then requantized to int8/uint8 in an element-wise epilogue).
Interface: common.py; the rounding rules are quant.py's.

The accumulation is sum (a - a_zero_point) (b - b_zero_point) in int32. Where the weight's zero point is 0 and
the weight is a constant (symmetric int8 weights, what onnxruntime's quantizer writes), it is computed as
sum a*b - a_zero_point * sum_k b: the reduction is then a plain product of two reads (a multiply-add, which fusion
and the schedules treat as a matmul or conv), and the column sums are folded at import time into one int32 vector
the epilogue subtracts (with the bias, for QLinearConv). A conv pads its input with the input's zero point, the
quantized 0.0, as onnxruntime does, so both forms agree at the border."""
from __future__ import annotations

import numpy as np

from ...ir.program import te
from ...ir.program.expr import const
from .common import OpSpec
from .conv import _channel
from .nn_util import as_tensor, broadcast_index, broadcast_shape, check_attrs, compute, ints, te_shape
from .quant import QTYPES, Param, check_pair, param, quantized
from .window import pad_spatial, taps, window

_I32 = "int32"


def _check_types(node, *idx) -> None:
    for i in idx:
        if node.in_dtypes[i] not in QTYPES:
            raise node.unsupported(f"input {i} has dtype {node.in_dtypes[i]}; it must be int8 or uint8")


def _split(x, w, corr):
    """(fast form?, correction vector or None): the fast form needs a constant weight, a zero weight zero point
    and one input zero point; `corr(w)` gives sum_k w per output column / channel."""
    xzp, wzp = x
    fast = isinstance(w, np.ndarray) and (wzp is None or wzp.is_zero()) and (xzp is None or not xzp.per_axis)
    if not fast or xzp is None or xzp.is_zero():
        return fast, None
    return True, corr(w.astype(np.int64))


def _epilogue(node, acc, shape, col: int, xzp: Param | None, colsum, bias, ctx):
    """A function idx -> the exact int32 result at idx: acc + bias - x_zero_point * colsum (col: the index of the
    column / channel axis in idx). Constant parts are folded into one int32 vector."""
    parts = []
    if colsum is not None and xzp.values is not None:
        parts.append(-int(xzp.values[0]) * colsum)
        colsum = None
    if isinstance(bias, np.ndarray):
        parts.append(bias.reshape(-1).astype(np.int64))
        bias = None
    vec = None
    if parts:
        total = sum(parts)
        if total.min() < -2**31 or total.max() >= 2**31:
            raise node.unsupported("the bias and zero-point correction overflow int32")
        vec = ctx.weight(total.astype(np.int32), f"{node.name}_offset")
    cs = ctx.weight(colsum.astype(np.int32), f"{node.name}_colsum") if colsum is not None else None
    bt = as_tensor(bias, ctx, f"{node.name}_bias") if bias is not None else None

    def exact(idx):
        v, c = acc[tuple(idx)], idx[col]
        if vec is not None:
            v = v + vec[c]
        if bt is not None:
            v = v + bt[c]
        if cs is not None:
            v = v - xzp.at() * cs[c]
        return v
    return exact


# ----------------------------------------------------------------------------- matmul

def _int_matmul(node, ins, ia: int, ib: int, azp: Param | None, bzp: Param | None, bias, ctx):
    """(output shape, idx -> exact int32 value) of numpy's matmul of A and B less their zero points."""
    sa, sb = (tuple(node.in_shapes[i]) for i in (ia, ib))
    if len(sa) < 2 or len(sb) < 2:
        raise node.unsupported(f"operands of shapes {list(sa)} and {list(sb)}: both must be at least 2-D")
    K = sa[-1]
    if K != sb[-2]:
        raise node.unsupported(f"inner dimensions of {list(sa)} and {list(sb)} differ")
    batch = broadcast_shape(node, sa[:-2], sb[:-2])
    out, nb = batch + (sa[-2], sb[-1]), len(batch)
    b_const = ins[ib] if isinstance(ins[ib], np.ndarray) and len(sb) == 2 else None
    fast, colsum = _split((azp, bzp), b_const, lambda w: w.sum(axis=0))
    a, b = as_tensor(ins[ia], ctx, f"{node.name}_A"), as_tensor(ins[ib], ctx, f"{node.name}_B")
    k = te.reduce_axis((0, K), "k")

    def body(*idx):
        bi, m, n = idx[:nb], idx[nb], idx[nb + 1]
        av = a[broadcast_index(bi, sa[:-2]) + (m, k.var)].astype(_I32)
        bv = b[broadcast_index(bi, sb[:-2]) + (k.var, n)].astype(_I32)
        if not fast:
            av = av - azp.at(m) if azp is not None and not azp.is_zero() else av
            bv = bv - bzp.at(n) if bzp is not None and not bzp.is_zero() else bv
        return te.sum(av * bv, axis=k)
    acc = compute(te_shape(out), body, ctx.name(f"{node.name}_acc"), "matmul_integer")
    return out, _epilogue(node, acc, out, nb + 1, azp, colsum, bias, ctx)


def _finish(node, shape, exact, ctx, requant=None):
    """The int32 result, or its requantization (requant = (multiplier(idx), y zero point, dtype))."""
    if requant is None:
        return compute(te_shape(shape), lambda *i: exact(i), ctx.name(node.name), "int32_result")
    mult, yzp, dtype = requant
    return compute(te_shape(shape), lambda *i: quantized(exact(i).astype("float32") * mult(i), yzp, None, dtype),
                   ctx.name(node.name), "requantize")


def _multiplier(node, a_scale: Param, b_scale: Param, y_scale: Param, col: int, ctx):
    """idx -> a_scale * b_scale[col] / y_scale in float32, in onnxruntime's order (a constant when known)."""
    if all(p.values is not None for p in (a_scale, b_scale, y_scale)):
        m = (a_scale.values.astype(np.float32)[0] * b_scale.values.astype(np.float32)) / \
            y_scale.values.astype(np.float32)[0]
        if m.size == 1:
            c = const(float(m[0]), "float32")
            return lambda idx: c
        t = ctx.weight(m.astype(np.float32), f"{node.name}_multiplier")
        return lambda idx: t[idx[col]]
    return lambda idx: (a_scale.at() * b_scale.at(idx[col])) / y_scale.at()


def lower_matmul_integer(node, ins, ctx):
    check_attrs(node, ())
    _check_types(node, 0, 1)
    sa, sb = node.in_shapes[0], node.in_shapes[1]
    rows = sa[-2] if len(sa) >= 2 else None
    azp = param(node, ins, 2, "a_zero_point", (node.in_dtypes[0],), rows, ctx, f"A's {rows} rows")
    bzp = param(node, ins, 3, "b_zero_point", (node.in_dtypes[1],), sb[-1] if sb else None, ctx,
                f"B's {sb[-1] if sb else 0} columns")
    shape, exact = _int_matmul(node, ins, 0, 1, azp, bzp, None, ctx)
    return [_finish(node, shape, exact, ctx)]


def lower_qlinear_matmul(node, ins, ctx):
    check_attrs(node, ())
    _check_types(node, 0, 3)
    sb = node.in_shapes[3]
    n = sb[-1] if sb else None
    ydt = node.out_dtypes[0]
    a_scale = param(node, ins, 1, "a_scale", ("float32",), None, ctx)
    azp = param(node, ins, 2, "a_zero_point", (node.in_dtypes[0],), None, ctx)
    b_scale = param(node, ins, 4, "b_scale", ("float32",), n, ctx, f"B's {n} columns")
    bzp = param(node, ins, 5, "b_zero_point", (node.in_dtypes[3],), n, ctx, f"B's {n} columns")
    y_scale = param(node, ins, 6, "y_scale", ("float32",), None, ctx)
    yzp = param(node, ins, 7, "y_zero_point", (ydt,), None, ctx)
    check_pair(node, b_scale, bzp, "b")
    bias = ins[8] if len(ins) > 8 else None   # only from the QDQ pass (a Gemm's bias): ONNX's op has none
    if bias is not None and (node.in_dtypes[8] != _I32 or tuple(node.in_shapes[8]) != (n,)):
        raise node.unsupported(f"the bias must be int32 of shape [{n}]")
    shape, exact = _int_matmul(node, ins, 0, 3, azp, bzp, bias, ctx)
    mult = _multiplier(node, a_scale, b_scale, y_scale, len(shape) - 1, ctx)
    return [_finish(node, shape, exact, ctx, (mult, yzp, ydt))]


# ----------------------------------------------------------------------------- conv

def _conv_shapes(node, xs: tuple, ws: tuple, channels_last: bool):
    """(spatial sizes, kernel, C, M, channels per group, group) of an NCHW conv or a channels-last 2-D one (x
    N H W C, w KH KW C/group M: the layout pass's QLinearConvNHWC)."""
    nd = len(xs) - 2
    if not 1 <= nd <= 3 or len(ws) != len(xs) or (channels_last and nd != 2):
        raise node.unsupported(f"input of shape {list(xs)} and weight of shape {list(ws)}: only 1-D, 2-D and 3-D "
                               "convolutions are supported")
    sizes, kernel = (xs[1:3], ws[:2]) if channels_last else (xs[2:], ws[2:])
    C, M, cg = (xs[3], ws[3], ws[2]) if channels_last else (xs[1], ws[0], ws[1])
    if ints(node, "kernel_shape", kernel, nd) != kernel:
        raise node.unsupported(f"kernel_shape {node.attrs['kernel_shape']} differs from the weight's {list(kernel)}")
    group = int(node.attrs.get("group", 1))
    if group < 1 or C % group or M % group or cg * group != C:
        raise node.unsupported(f"group={group} does not match {C} input channels, {M} output channels and a "
                               f"weight of {cg} channels per group")
    return sizes, kernel, C, M, cg, group


def _int_conv(node, ins, ix: int, iw: int, xzp: Param | None, wzp: Param | None, bias, ctx,
              channels_last: bool = False):
    """(output shape, idx -> exact int32 value) of the conv of X and W less their zero points (NCHW, or NHWC)."""
    xs, ws = tuple(node.in_shapes[ix]), tuple(node.in_shapes[iw])
    sizes, kernel, C, M, cg, group = _conv_shapes(node, xs, ws, channels_last)
    nd = len(sizes)
    colsum_of = (lambda w: w.reshape(-1, M).sum(axis=0)) if channels_last else \
        (lambda w: w.reshape(w.shape[0], -1).sum(axis=1))
    fast, colsum = _split((xzp, wzp), ins[iw], colsum_of)
    win = window(node, sizes, kernel)
    x, w = as_tensor(ins[ix], ctx, f"{node.name}_x"), as_tensor(ins[iw], ctx, f"{node.name}_w")
    fill = xzp.at() if xzp is not None else const(0, x.dtype)
    padded = pad_spatial(x, sizes, win, fill, ctx.name(f"{node.name}_pad"), channels_last=channels_last)
    rc = te.reduce_axis((0, cg), "rc") if cg > 1 else None
    rs = [te.reduce_axis((0, k), n) for k, n in zip(kernel, ("rd", "rh", "rw")[3 - nd:])]

    def value(n, co, o):
        ci = _channel(co, rc, M // group, cg, group)
        at = tuple(taps(o[d], rs[d], win, d) for d in range(nd))
        r = rc if rc is not None else 0
        xv = (padded[(n,) + at + (ci,)] if channels_last else padded[(n, ci) + at]).astype(_I32)
        wv = (w[tuple(rs) + (r, co)] if channels_last else w[(co, r) + tuple(rs)]).astype(_I32)
        if not fast:
            xv = xv - xzp.at() if xzp is not None and not xzp.is_zero() else xv
            wv = wv - wzp.at(co) if wzp is not None and not wzp.is_zero() else wv
        return te.sum(xv * wv, axis=([rc] if rc is not None else []) + rs)
    if channels_last:
        shape, col = (xs[0],) + win.out + (M,), nd + 1
        acc = compute(shape, lambda n, *o: value(n, o[-1], o[:-1]), ctx.name(f"{node.name}_acc"),
                      "conv2d_nhwc_integer")
    else:
        shape, col = (xs[0], M) + win.out, 1
        acc = compute(shape, lambda n, co, *o: value(n, co, o), ctx.name(f"{node.name}_acc"), f"conv{nd}d_integer")
    return shape, _epilogue(node, acc, shape, col, xzp, colsum, bias, ctx)


def lower_conv_integer(node, ins, ctx, channels_last: bool = False):
    check_attrs(node, _CONV_ATTRS)
    _check_types(node, 0, 1)
    m = node.in_shapes[1][-1 if channels_last else 0]
    xzp = param(node, ins, 2, "x_zero_point", (node.in_dtypes[0],), None, ctx)
    wzp = param(node, ins, 3, "w_zero_point", (node.in_dtypes[1],), m, ctx, f"the {m} output channels")
    shape, exact = _int_conv(node, ins, 0, 1, xzp, wzp, None, ctx, channels_last)
    return [_finish(node, shape, exact, ctx)]


def lower_qlinear_conv(node, ins, ctx, channels_last: bool = False):
    check_attrs(node, _CONV_ATTRS)
    _check_types(node, 0, 3)
    m, ydt = node.in_shapes[3][-1 if channels_last else 0], node.out_dtypes[0]
    where = f"the {m} output channels"
    x_scale = param(node, ins, 1, "x_scale", ("float32",), None, ctx)
    xzp = param(node, ins, 2, "x_zero_point", (node.in_dtypes[0],), None, ctx)
    w_scale = param(node, ins, 4, "w_scale", ("float32",), m, ctx, where)
    wzp = param(node, ins, 5, "w_zero_point", (node.in_dtypes[3],), m, ctx, where)
    y_scale = param(node, ins, 6, "y_scale", ("float32",), None, ctx)
    yzp = param(node, ins, 7, "y_zero_point", (ydt,), None, ctx)
    check_pair(node, w_scale, wzp, "w")
    bias = ins[8] if len(ins) > 8 else None
    if bias is not None and (node.in_dtypes[8] != _I32 or tuple(node.in_shapes[8]) != (m,)):
        raise node.unsupported(f"the bias must be int32 of shape [{m}], got {node.in_dtypes[8]} "
                               f"{list(node.in_shapes[8])}")
    shape, exact = _int_conv(node, ins, 0, 3, xzp, wzp, bias, ctx, channels_last)
    mult = _multiplier(node, x_scale, w_scale, y_scale, len(shape) - 1 if channels_last else 1, ctx)
    return [_finish(node, shape, exact, ctx, (mult, yzp, ydt))]


def lower_conv_integer_nhwc(node, ins, ctx):
    """The layout pass's ConvIntegerNHWC: ConvInteger on x (N, H, W, C) and w (KH, KW, C/group, M)."""
    return lower_conv_integer(node, ins, ctx, channels_last=True)


def lower_qlinear_conv_nhwc(node, ins, ctx):
    """The layout pass's QLinearConvNHWC: QLinearConv on x (N, H, W, C) and w (KH, KW, C/group, M)."""
    return lower_qlinear_conv(node, ins, ctx, channels_last=True)


def _spec(lower, attrs, note):
    def checked(node, ins, ctx):
        if any(x is None for x in ins[:2]):
            raise node.unsupported("a required input is missing")
        return lower(node, ins, ctx)
    return OpSpec(checked, QTYPES, attrs, note)

_CONV_ATTRS = ("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")
OPS: dict = {
    "MatMulInteger": _spec(lower_matmul_integer, (),
                           "exact int32; zero points per tensor, A's per row, B's per column"),
    "ConvInteger": _spec(lower_conv_integer, _CONV_ATTRS,
                         "exact int32; 1-D/2-D/3-D, groups; w zero point per output channel"),
    "QLinearMatMul": _spec(lower_qlinear_matmul, (), "B's scale and zero point per column; bit-exact (see "
                           "Quantized models)"),
    "QLinearConv": _spec(lower_qlinear_conv, _CONV_ATTRS, "1-D/2-D/3-D, groups, int32 bias; w per output channel; "
                         "bit-exact (see Quantized models)"),
}
QLINEAR_CONV_NHWC = _spec(lower_qlinear_conv_nhwc, _CONV_ATTRS, "the layout pass's channels-last QLinearConv")
CONV_INTEGER_NHWC = _spec(lower_conv_integer_nhwc, _CONV_ATTRS, "the layout pass's channels-last ConvInteger")
