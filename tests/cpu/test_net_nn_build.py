"""Lowered ONNX nn operators compile (naive schedule) and match the numpy evaluator: a Conv + bias + Softmax
graph, and pools (a -inf border, per-position average counts) feeding a Gemm."""
import numpy as np

from ansorc.ir.program import te
from ansorc.net.ops.common import LowerContext, Node
from ansorc.net.ops import table

from .helpers import check_kernel

OPS = table("nn", "attention", "conv", "einsum", "pool", "norm", "norm_more", "reduce", "recurrent")


def _node(op, attrs, in_shapes, out_shape, opset=13):
    return Node(op, f"{op}_0", {**attrs, "_opset": opset}, tuple(in_shapes), ("float32",) * len(in_shapes),
                (out_shape,), ("float32",), "m")


def _weights(ctx, out):
    seen, stack, found = set(), [out], []
    while stack:
        t = stack.pop()
        if t.name not in seen:
            seen.add(t.name)
            found += [t] if t.name in ctx.weights else []
            stack.extend(t.op.inputs)
    return sorted(found, key=lambda t: t.name)


def test_conv_bias_softmax_builds_and_matches_evaluator():
    rng = np.random.default_rng(0)
    ctx = LowerContext()
    x = te.placeholder((1, 3, 10, 9), name="x")
    conv = _node("Conv", {"pads": [1, 1, 1, 1], "strides": [2, 1]}, [(1, 3, 10, 9), (4, 3, 3, 3), (4,)],
                 (1, 4, 5, 9))
    (y,) = OPS["Conv"].lower(conv, [x, rng.standard_normal((4, 3, 3, 3)).astype(np.float32),
                                    rng.standard_normal(4).astype(np.float32)], ctx)
    (z,) = OPS["Softmax"].lower(_node("Softmax", {"axis": 1}, [(1, 4, 5, 9)], (1, 4, 5, 9)), [y], ctx)
    check_kernel([x] + _weights(ctx, z) + [z], None, rtol=1e-4, atol=1e-5, name="conv_softmax")


def test_pools_and_gemm_build_and_match_evaluator():
    ctx = LowerContext()
    x = te.placeholder((1, 2, 7, 7), name="x")
    attrs = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1}
    (m,) = OPS["MaxPool"].lower(_node("MaxPool", attrs, [(1, 2, 7, 7)], (1, 2, 4, 4)), [x], ctx)
    (a,) = OPS["AveragePool"].lower(_node("AveragePool", attrs, [(1, 2, 4, 4)], (1, 2, 2, 2)), [m], ctx)
    flat = te.compute((1, 8), lambda i, j: a[0, j // 4, j // 2 % 2, j % 2], name="flat")
    gemm = _node("Gemm", {"transB": 1, "alpha": 0.5}, [(1, 8), (3, 8), (3,)], (1, 3))
    (g,) = OPS["Gemm"].lower(gemm, [flat, np.ones((3, 8), np.float32), np.arange(3, dtype=np.float32)], ctx)
    check_kernel([x] + _weights(ctx, g) + [g], None, rtol=1e-4, atol=1e-5, name="pools_gemm")


def test_batched_matmul_layer_norm_reduce_and_argmax_build_and_match_evaluator():
    ctx = LowerContext()
    a, b = te.placeholder((2, 1, 3, 4), name="a"), te.placeholder((3, 4, 5), name="b")
    (m,) = OPS["MatMul"].lower(_node("MatMul", {}, [(2, 1, 3, 4), (3, 4, 5)], (2, 3, 3, 5)), [a, b], ctx)
    ln = _node("LayerNormalization", {"axis": -1}, [(2, 3, 3, 5), (5,), (5,)], (2, 3, 3, 5), opset=17)
    (y,) = OPS["LayerNormalization"].lower(ln, [m, np.linspace(0.5, 1.5, 5, dtype=np.float32),
                                                np.zeros(5, np.float32)], ctx)
    red = _node("ReduceMean", {"axes": [1, 3], "keepdims": 0}, [(2, 3, 3, 5)], (2, 3), opset=13)
    (s,) = OPS["ReduceMean"].lower(red, [y], ctx)
    arg = Node("ArgMax", "arg", {"axis": 1, "_opset": 13}, ((2, 3),), ("float32",), ((2, 1),), ("int64",), "m")
    (i,) = OPS["ArgMax"].lower(arg, [s], ctx)
    check_kernel([a, b] + _weights(ctx, y) + [s, i], None, rtol=1e-4, atol=1e-5, name="mm_ln_argmax")


def test_causal_grouped_query_attention_with_float_mask_builds_and_matches_evaluator():
    """-inf causal biases, the fully-masked-row guard and grouped-query heads survive C codegen."""
    ctx = LowerContext()
    q, k, v = (te.placeholder(s, name=n) for s, n in (((1, 4, 3, 8), "q"), ((1, 2, 5, 8), "k"), ((1, 2, 5, 8), "v")))
    node = Node("Attention", "att", {"is_causal": 1, "_opset": 23}, ((1, 4, 3, 8), (1, 2, 5, 8), (1, 2, 5, 8), (3, 5)),
                ("float32",) * 4, ((1, 4, 3, 8),), ("float32",), "m")
    (y,) = OPS["Attention"].lower(node, [q, k, v, np.zeros((3, 5), np.float32)], ctx)
    check_kernel([q, k, v] + _weights(ctx, y) + [y], None, rtol=1e-4, atol=1e-5, name="attention")
