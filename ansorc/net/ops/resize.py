"""ONNX Resize (and the older Upsample) in nearest and linear modes lowered to te. Shapes and scales are static,
so each resized axis gets its source indices (and linear weights) computed here once, exactly as onnx's reference
does; the te read uses an affine floor (a*i + b) // c clamped into range when one reproduces the table (integer
and simple rational scales), else the table itself as a small int32 weight."""
from __future__ import annotations

import math

import numpy as np

from ... import te
from ...ir.program.expr import binary, const
from ..network import NetError
from .common import OpSpec
from .util import FLOATS, axes, check_dtypes, compute, const_input, shape_of

_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric")


def _x_ori(ctm: str, scale: float, n_in: int, n_out: int) -> np.ndarray:
    """Source coordinates of the output positions (onnx reference's formulas, float64)."""
    y, width = np.arange(n_out, dtype=np.float64), scale * n_in
    if ctm == "align_corners":
        return np.zeros(n_out) if width == 1 else y * (n_in - 1) / (width - 1)
    if ctm == "asymmetric":
        return y / scale
    if ctm == "pytorch_half_pixel":
        return np.full(n_out, -0.5) if width == 1 else (y + 0.5) / scale - 0.5
    offset = n_in / 2 * (1 - n_out / width) if ctm == "half_pixel_symmetric" else 0.0
    return offset + (y + 0.5) / scale - 0.5


def _nearest(ratio: np.ndarray, mode: str) -> np.ndarray:
    """Whether the upper neighbour is taken (onnx reference's nearest coefficients)."""
    upper = {"round_prefer_floor": ratio > 0.5, "round_prefer_ceil": ratio >= 0.5, "floor": ratio < 0,
             "ceil": ratio >= 0}[mode]
    return np.where(ratio == 1.0, True, upper)


def axis_tables(node, ctm: str, scale: float, n_in: int, n_out: int, nearest_mode: str | None):
    """(lower index, upper index, weight of the upper) per output position, indices before clamping into
    0..n_in-1 (the read clamps them); nearest: (index, None, None)."""
    x = _x_ori(ctm, scale, n_in, n_out)
    base = np.floor(x)
    ratio = np.where(x == base, 1.0, x - base)
    lo = base.astype(np.int64) - (x == base)  # an exact integer takes [x - 1, x] with weight 1 on x
    if nearest_mode is not None:
        if nearest_mode not in ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil"):
            raise node.unsupported(f"nearest_mode={nearest_mode!r}")
        return lo + _nearest(ratio, nearest_mode), None, None
    return lo, lo + 1, ratio


def _affine(raw: np.ndarray):
    """(a, b, c) with raw[i] == (a*i + b) // c for every i (c <= 32), or None."""
    i = np.arange(len(raw), dtype=np.int64)
    for c in range(1, 33):
        slope = (raw[-1] - raw[0]) * c / max(len(raw) - 1, 1)
        for a in sorted({math.floor(slope), math.ceil(slope)}):
            for b in range(raw[0] * c, raw[0] * c + c):  # exactly the b with b // c == raw[0]
                if np.array_equal((a * i + b) // c, raw):
                    return int(a), int(b), c
    return None


def _index(raw: np.ndarray, n_in: int, ctx, hint: str):
    """A function of the output index var giving the (clamped) source index expr, and whether the read needs
    a guard (a table read is not provably in range)."""
    if np.array_equal(raw, np.arange(len(raw))) and len(raw) <= n_in:
        return (lambda i: i), False
    fit = _affine(raw)
    if fit is not None:
        a, b, c = fit

        def affine(i):
            e = i * a if a != 1 else i
            e = e + b if b else e
            e = e // c if c > 1 else e
            return binary("min", binary("max", e, const(0)), const(n_in - 1))
        return affine, False
    t = ctx.weight(np.clip(raw, 0, n_in - 1).astype(np.int32), hint)
    return (lambda i: t[i]), True


def _sizes(node, ins, src):
    """(output shape, per-axis scale) as onnx's reference computes them."""
    opset = node.attrs.get("_opset", 19)
    ax = axes(node, node.attrs.get("axes", range(len(src))), len(src))
    if node.op_type == "Upsample" or opset < 11:
        scales = node.attrs["scales"] if "scales" in node.attrs else const_input(node, ins, 1, "scales")
        sizes = None
    else:
        scales, sizes = const_input(node, ins, 2, "scales"), const_input(node, ins, 3, "sizes")
        if scales is not None and scales.size == 0:
            scales = None
    scale = [1.0] * len(src)
    if sizes is not None and sizes.size:
        out = list(src)
        for a, s in zip(ax, sizes.reshape(-1)):
            out[a], scale[a] = int(s), int(s) / src[a]
        policy = node.attrs.get("keep_aspect_ratio_policy", "stretch")
        if policy != "stretch":
            pick = min if policy == "not_larger" else max
            s = pick(scale[a] for a in ax)
            for a in ax:
                scale[a], out[a] = s, int(math.floor(s * src[a] + 0.5))
        return tuple(out), scale
    if scales is None:
        raise NetError(f"{node.where()}: needs scales or sizes")
    for a, s in zip(ax, np.asarray(scales, np.float32).reshape(-1)):
        scale[a] = float(s)
    return tuple(int(s * n) for s, n in zip(np.asarray(scale, np.float32), src)), scale


def _check(node):
    a = node.attrs
    mode = a.get("mode", "nearest")
    if mode not in ("nearest", "linear", "bilinear"):
        raise node.unsupported(f"mode={mode!r} (supported: nearest, linear)")
    ctm = a.get("coordinate_transformation_mode", "half_pixel" if node.op_type == "Resize" and
                a.get("_opset", 19) >= 11 else "asymmetric")
    if ctm not in _MODES:
        raise node.unsupported(f"coordinate_transformation_mode={ctm!r}")
    if a.get("antialias", 0):
        raise node.unsupported("antialias=1")
    return mode, ctm


def _resize(node, ins, ctx):
    check_dtypes(node, FLOATS, 0, 1)
    mode, ctm = _check(node)
    x, src = ins[0], shape_of(node, 0, ins[0])
    x = ctx.weight(x, node.name) if isinstance(x, np.ndarray) else x
    dst, scale = _sizes(node, ins, src)
    nearest = None if mode != "nearest" else node.attrs.get("nearest_mode", "round_prefer_floor")
    if node.op_type == "Upsample" or node.attrs.get("_opset", 19) < 11:
        if mode == "nearest" and min(scale) < 1:  # onnxruntime rounds up when downsampling here
            raise node.unsupported("nearest downsampling before opset 11")
        nearest = None if mode != "nearest" else "floor"  # asymmetric coordinates, the lower neighbour
    per_axis = []
    for d, (n_in, n_out) in enumerate(zip(src, dst)):
        if math.isclose(scale[d], 1.0) and n_in == n_out:
            per_axis.append(None)
            continue
        lo, hi, w = axis_tables(node, ctm, scale[d], n_in, n_out, nearest)
        per_axis.append((_index(lo, n_in, ctx, node.name), None if hi is None else _index(hi, n_in, ctx, node.name),
                         None if w is None else ctx.weight(w.astype(x.dtype), node.name)))
    return [compute(dst, lambda i: _body(x, src, per_axis, i), ctx, node)]


def _body(x, src, per_axis, i):
    """Sum over the 2^k corners of the linear axes (one corner for nearest) of weight * x[corner]."""
    corners = [((), None)]
    for d, spec in enumerate(per_axis):
        if spec is None:
            corners = [(idx + ((i[d], False),), w) for idx, w in corners]
            continue
        (lo, lo_guard), hi, wt = spec
        if hi is None:
            corners = [(idx + ((lo(i[d]), lo_guard),), w) for idx, w in corners]
            continue
        w1 = wt[i[d]]
        new = []
        for idx, w in corners:
            new.append((idx + ((lo(i[d]), lo_guard),), (1.0 - w1) if w is None else w * (1.0 - w1)))
            new.append((idx + ((hi[0](i[d]), hi[1]),), w1 if w is None else w * w1))
        corners = new
    out = None
    for idx, w in corners:
        v = _guarded(x, src, idx)
        term = v if w is None else w * v
        out = term if out is None else out + term
    return out


def _guarded(x, src, idx):
    read = x[tuple(e for e, _ in idx)]
    guards = [c for (e, g), n in zip(idx, src) if g for c in (e >= 0, e < n)]
    return te.if_then_else(te.all(*guards), read, const(0, x.dtype)) if guards else read


_ATTRS = ("mode", "coordinate_transformation_mode", "nearest_mode", "axes", "keep_aspect_ratio_policy",
          "antialias", "cubic_coeff_a", "exclude_outside", "extrapolation_value", "scales")
OPS: dict = {
    "Resize": OpSpec(_resize, FLOATS, _ATTRS, "nearest and linear; constant scales/sizes; not tf_crop_and_resize,"
                                              " cubic or antialias"),
    "Upsample": OpSpec(_resize, FLOATS, ("mode", "scales"), "nearest and linear"),
}
