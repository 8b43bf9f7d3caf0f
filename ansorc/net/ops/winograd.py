"""Winograd F(m x m, 3 x 3) for channels-last 3x3 convolutions of stride 1 (Lavin & Gray, 2016; as TVM's
conv2d_winograd_nhwc): a tile of m x m outputs costs (m + 2)^2 multiply-adds per channel pair instead of 9 m^2.

Three steps, each a task the search tunes like any other; the transforms run one axis at a time:
  R[a, s, n, th, tw, c] = sum_r Bt[a, r] * pad[n, th*m + r, tw*m + s, c]                    (input transform,
  V[a, b, n, th, tw, c] = sum_s Bt[b, s] * R[a, s, n, th, tw, c]                              rows then columns)
  M[a, b, n, th, tw, k] = sum_c V[a, b, n, th, tw, c] * U[a, b, c, k]                        (batched GEMM)
  Z[a, n, th, w, k]     = sum_b At[w % m, b] * M[a, b, n, th, w // m, k]                     (output transform,
  Y[n, h, w, k]         = sum_a At[h % m, a] * Z[a, n, h // m, w, k]                          columns then rows)
U = G g G^T is computed once, at compile time, from the constant weights; Bt, At are constant tensors too.
One axis at a time costs 2 (m + 2) multiply-adds per transformed element instead of (m + 2)^2: the two-axis sums
made the input transform a tenth of ResNet-50's time (docs/perf-notes.md, "Winograd transforms").
The padded input covers whole tiles (zeros past the image), so no stage reads outside its buffer."""
from __future__ import annotations

import dataclasses
import os

import numpy as np

from ...ir.program import te
from .nn_util import as_tensor, zero
from .window import Window, ceil_div, pad_spatial

MIN_TILES = 32      # rows of each batched GEMM (tiles of the image)
MIN_CHANNELS = 32

# (Bt, G, At) of F(m, 3) from the interpolation points 0, +-1, (+-2,) infinity
MATRICES = {
    2: ([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]],
        [[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]],
        [[1, 1, 1, 0], [0, 1, -1, -1]]),
    4: ([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0], [0, -2, -1, 2, 1, 0],
         [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]],
        [[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6], [1 / 24, 1 / 12, 1 / 6],
         [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]],
        [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]]),
}


def matrices(m: int, dtype=np.float32):
    bt, g, at = MATRICES[m]
    return tuple(np.asarray(x, dtype=np.float64).astype(dtype) for x in (bt, g, at))


def tile_size(win: Window, batch: int, channels: int, outputs: int) -> int | None:
    """m of the Winograd transform this conv computes with, or None for a direct conv.

    Only 3x3 convs of stride 1 and dilation 1 with at least MIN_CHANNELS on both sides qualify. The largest m
    that still gives the GEMM MIN_TILES rows wins: the transformed weights are (m + 2)^2 / 9 times the conv's,
    and a GEMM of few rows is bound by reading them (7x7 maps stay direct). ANSORC_WINOGRAD=0 turns it off."""
    if os.environ.get("ANSORC_WINOGRAD", "1").strip().lower() in ("0", "off", "no", "false"):
        return None
    if win.kernel != (3, 3) or win.strides != (1, 1) or win.dilations != (1, 1):
        return None
    if min(channels, outputs) < MIN_CHANNELS:
        return None
    for m in sorted(MATRICES, reverse=True):
        if batch * ceil_div(win.out[0], m) * ceil_div(win.out[1], m) >= MIN_TILES:
            return m
    return None


def transformed_weights(w: np.ndarray, m: int) -> np.ndarray:
    """U[a, b, c, k] = (G g G^T)[a, b] for the HWIO weight w (3, 3, C, K), in float64 then w's dtype."""
    _, g, _ = matrices(m, np.float64)
    return np.ascontiguousarray(np.einsum("ai,ijck,bj->abck", g, w.astype(np.float64), g).astype(w.dtype))


def conv_winograd_nhwc(node, x, w: np.ndarray, sizes, win: Window, m: int, ctx):
    """The three stages for x (N, H, W, C) and the constant HWIO weight w (3, 3, C, K); the output (N, OH, OW, K)."""
    n_, c_ = x.shape[0], x.shape[-1]
    k_ = w.shape[-1]
    alpha = m + 2
    th_, tw_ = (ceil_div(o, m) for o in win.out)
    bt_np, _, at_np = matrices(m, np.dtype(x.dtype))
    bt = as_tensor(bt_np, ctx, f"{node.name}_wino_bt")
    at = as_tensor(at_np, ctx, f"{node.name}_wino_at")
    u = as_tensor(transformed_weights(w, m), ctx, f"{node.name}_wino_u")
    # the windows of whole tiles: zeros past the image, so the last tile reads inside the padded input
    whole = dataclasses.replace(win, out=(th_ * m, tw_ * m))
    pad = pad_spatial(x, sizes, whole, zero(x.dtype), ctx.name(f"{node.name}_pad"), channels_last=True)
    r, s = te.reduce_axis((0, alpha), "r"), te.reduce_axis((0, alpha), "s")
    rows = te.compute((alpha, alpha, n_, th_, tw_, c_),
                      lambda a, j, n, th, tw, c: te.sum(bt[a, r] * pad[n, th * m + r, tw * m + j, c], axis=r),
                      name=ctx.name(f"{node.name}_wino_rows"), tag="winograd_input")
    v = te.compute((alpha, alpha, n_, th_, tw_, c_),
                   lambda a, b, n, th, tw, c: te.sum(bt[b, s] * rows[a, s, n, th, tw, c], axis=s),
                   name=ctx.name(f"{node.name}_wino_in"), tag="winograd_input")
    rc = te.reduce_axis((0, c_), "rc")
    mm = te.compute((alpha, alpha, n_, th_, tw_, k_),
                    lambda a, b, n, th, tw, k: te.sum(v[a, b, n, th, tw, rc] * u[a, b, rc, k], axis=rc),
                    name=ctx.name(f"{node.name}_wino_gemm"), tag="winograd_gemm")
    ra, rb = te.reduce_axis((0, alpha), "ra"), te.reduce_axis((0, alpha), "rb")
    cols = te.compute((alpha, n_, th_, win.out[1], k_),
                      lambda a, n, th, ww, k: te.sum(at[ww % m, rb] * mm[a, rb, n, th, ww // m, k], axis=rb),
                      name=ctx.name(f"{node.name}_wino_cols"), tag="winograd_output")
    return te.compute((n_,) + tuple(win.out) + (k_,),
                      lambda n, h, ww, k: te.sum(at[h % m, ra] * cols[ra, n, h // m, ww, k], axis=ra),
                      name=ctx.name(node.name), tag="winograd_output")
