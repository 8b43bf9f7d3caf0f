"""Small te networks built by hand (ONNX layouts: NCHW convs, (M, K) x (K, N) matmuls) for the fusion tests."""
from __future__ import annotations

import numpy as np

from ansorc.ir.program import te
from ansorc.net.network import Network


def network(inputs, outputs, weights: dict | None = None, name: str = "m") -> Network:
    return Network(name, tuple(inputs), tuple(outputs), tuple(t.name for t in inputs),
                   tuple(t.name for t in outputs), tuple(t.shape for t in outputs), dict(weights or {}))


def weight(shape, name: str, weights: dict, seed: int = 0):
    t = te.placeholder(shape, "float32", name)
    weights[name] = np.random.default_rng(seed).standard_normal(shape).astype("float32")
    return t


def conv2d(x, w, pad: int, name: str):
    """NCHW conv, stride 1, as ONNX Conv lowers: a padding stage (a select on the bounds) and the reduction."""
    n_, c_, h_, w_ = x.shape
    co, ci, kh, kw = w.shape
    src = x
    if pad:
        src = te.compute((n_, c_, h_ + 2 * pad, w_ + 2 * pad), lambda n, c, h, v: te.if_then_else(
            te.all(h >= pad, h < h_ + pad, v >= pad, v < w_ + pad), x[n, c, h - pad, v - pad], 0.0),
            name=f"{name}_pad")
    rc, rh, rw = te.reduce_axis((0, ci), f"{name}_rc"), te.reduce_axis((0, kh), f"{name}_rh"), \
        te.reduce_axis((0, kw), f"{name}_rw")
    oh, ow = src.shape[2] - kh + 1, src.shape[3] - kw + 1
    return te.compute((n_, co, oh, ow), lambda n, o, h, v: te.sum(src[n, rc, h + rh, v + rw] * w[o, rc, rh, rw],
                                                                  axis=[rc, rh, rw]), name=name)


def bias_add(x, b, name: str):
    """x + b broadcast over NCHW, b of shape (1, C, 1, 1) as ONNX gives it (unit dimensions read at 0)."""
    return te.compute(x.shape, lambda n, c, h, v: x[n, c, h, v] + b[0, c, 0, 0], name=name)


def relu(x, name: str):
    return te.compute(x.shape, lambda *i: te.max(x[i], 0.0), name=name)


def add(a, b, name: str):
    return te.compute(a.shape, lambda *i: a[i] + b[i], name=name)


def matmul(a, b, name: str):
    k = te.reduce_axis((0, a.shape[1]), f"{name}_k")
    return te.compute((a.shape[0], b.shape[1]), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name=name)


def softmax(x, name: str):
    """Row softmax as four te ops: max, exp(x - max), sum, divide."""
    m, n = x.shape
    k1, k2 = te.reduce_axis((0, n), f"{name}_k1"), te.reduce_axis((0, n), f"{name}_k2")
    mx = te.compute((m,), lambda i: te.max(x[i, k1], axis=k1), name=f"{name}_max")
    ex = te.compute((m, n), lambda i, j: te.exp(x[i, j] - mx[i]), name=f"{name}_exp")
    sm = te.compute((m,), lambda i: te.sum(ex[i, k2], axis=k2), name=f"{name}_sum")
    return te.compute((m, n), lambda i, j: ex[i, j] / sm[i], name=name)


def conv_block(x, channels: int, weights: dict, name: str, pad: int = 1):
    """conv (pad + reduce) + bias + relu."""
    w = weight((channels, x.shape[1], 2 * pad + 1, 2 * pad + 1), f"{name}_w", weights)
    b = weight((1, channels, 1, 1), f"{name}_b", weights, seed=1)
    return relu(bias_add(conv2d(x, w, pad, name), b, f"{name}_bias"), f"{name}_relu")


def resnet_block(x, weights: dict, name: str):
    """conv-bias-relu, conv-bias, + x, relu (a basic residual block)."""
    y = conv_block(x, x.shape[1], weights, f"{name}_a")
    w = weight((x.shape[1], x.shape[1], 3, 3), f"{name}_b_w", weights, seed=2)
    b = weight((1, x.shape[1], 1, 1), f"{name}_b_b", weights, seed=3)
    z = bias_add(conv2d(y, w, 1, f"{name}_b"), b, f"{name}_b_bias")
    return relu(add(z, x, f"{name}_add"), f"{name}_out")
