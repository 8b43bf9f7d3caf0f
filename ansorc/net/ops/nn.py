"""ONNX neural-network operators lowered to te: Gemm and MatMul (here), Conv and ConvTranspose (conv), pooling
(pool), normalization and softmax (norm), reductions and ArgMax/ArgMin (reduce).
Interface: common.py. OPS merges the tables of those modules."""
from __future__ import annotations

import numpy as np

from ...ir.program import te
from .nn_util import FLOATS, as_tensor, broadcast_index, broadcast_shape, compute, reader, spec, te_shape


def _operand(node, x, trans: bool, ctx, hint):
    """A Gemm operand as a te tensor and whether it is still transposed (constants are transposed here, so the
    product reads A[i, k] * B[k, j] as workloads.matmul)."""
    if isinstance(x, np.ndarray) and trans:
        return ctx.weight(np.ascontiguousarray(x.T), hint), False
    return as_tensor(x, ctx, hint), trans


def lower_gemm(node, ins, ctx):
    """Y = alpha * A' B' + beta * C: the product in workloads.matmul's form, then one epilogue compute (none when
    alpha is 1 and there is no C; constant factors are folded into constant operands)."""
    sa, sb = (tuple(s) for s in node.in_shapes[:2])
    if len(sa) != 2 or len(sb) != 2:
        raise node.unsupported(f"inputs of shapes {list(sa)} and {list(sb)} should both be 2-D")
    ta, tb = bool(node.attrs.get("transA", 0)), bool(node.attrs.get("transB", 0))
    alpha, beta = float(node.attrs.get("alpha", 1.0)), float(node.attrs.get("beta", 1.0))
    (M, K), (K2, N) = (sa[::-1] if ta else sa), (sb[::-1] if tb else sb)
    if K != K2:
        raise node.unsupported(f"inner dimensions differ: A {list(sa)} (transA={int(ta)}), B {list(sb)} "
                               f"(transB={int(tb)})")
    b_in = ins[1]
    if isinstance(b_in, np.ndarray) and alpha != 1.0:
        b_in, alpha = (b_in * alpha).astype(b_in.dtype), 1.0
    a, ta = _operand(node, ins[0], ta, ctx, f"{node.name}_A")
    b, tb = _operand(node, b_in, tb, ctx, f"{node.name}_B")
    c_in = ins[2] if len(ins) > 2 and beta != 0.0 else None
    k = te.reduce_axis((0, K), "k")
    last = c_in is None and alpha == 1.0
    mm = te.compute((M, N), lambda i, j: te.sum((a[k, i] if ta else a[i, k]) * (b[j, k] if tb else b[k, j]), axis=k),
                    name=ctx.name(node.name if last else f"{node.name}_mm"), tag="dense")
    return [mm if last else _gemm_epilogue(node, mm, alpha, c_in, beta, ctx)]


def _gemm_epilogue(node, mm, alpha: float, c_in, beta: float, ctx):
    shape = mm.shape
    if c_in is None:
        return te.compute(shape, lambda i, j: mm[i, j] * alpha, name=ctx.name(node.name), tag="gemm_scale")
    sc = tuple(node.in_shapes[2])
    if broadcast_shape(node, shape, sc) != shape:
        raise node.unsupported(f"C of shape {list(sc)} does not broadcast to {shape}")
    if isinstance(c_in, np.ndarray) and beta != 1.0:
        c_in, beta = (c_in * beta).astype(c_in.dtype), 1.0
    c = reader(as_tensor(c_in, ctx, f"{node.name}_C"), sc)

    def body(i, j):
        prod, add = mm[i, j], c(broadcast_index((i, j), sc))
        return (prod if alpha == 1.0 else prod * alpha) + (add if beta == 1.0 else add * beta)
    return te.compute(shape, body, name=ctx.name(node.name), tag="gemm_bias")


def lower_matmul(node, ins, ctx):
    """numpy's matmul: 1-D operands gain (and lose) a unit dimension, batch dimensions broadcast."""
    sa, sb = (tuple(s) for s in node.in_shapes[:2])
    if not sa or not sb:
        raise node.unsupported("a scalar operand is not allowed")
    K = sa[-1]
    if K != (sb[-2] if len(sb) >= 2 else sb[0]):
        raise node.unsupported(f"inner dimensions of {list(sa)} and {list(sb)} differ")
    batch = broadcast_shape(node, sa[:-2], sb[:-2])
    out = batch + sa[-2:-1] * (len(sa) >= 2) + sb[-1:] * (len(sb) >= 2)
    a, b = as_tensor(ins[0], ctx, f"{node.name}_A"), as_tensor(ins[1], ctx, f"{node.name}_B")
    k = te.reduce_axis((0, K), "k")
    nb = len(batch)

    def body(*idx):
        bi, rest = idx[:nb], idx[nb:]
        ai = broadcast_index(bi, sa[:-2]) + ((rest[0],) if len(sa) >= 2 else ()) + (k.var,)
        bj = broadcast_index(bi, sb[:-2]) + (k.var,) + ((rest[-1],) if len(sb) >= 2 else ())
        return te.sum(a[ai] * b[bj], axis=k)
    return [compute(te_shape(out), body, ctx.name(node.name), "matmul")]


OPS: dict = {  # ONNX op type -> common.OpSpec
    "Gemm": spec(lower_gemm, attrs=("alpha", "beta", "transA", "transB"), note="C broadcast, optional", required=2),
    "MatMul": spec(lower_matmul, FLOATS + ("int32", "int64"), note="1-D and batched N-D with broadcasting",
                   required=2),
}
