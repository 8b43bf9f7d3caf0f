"""Hand-built Networks for the library tests (until the importer and fusion land): te graphs with weights as
placeholders, each te compute op its own Group, in topological order."""
from __future__ import annotations

import numpy as np

from ansorc import te
from ansorc.ir.program.dag import ComputeDAG
from ansorc.ir.program.te import ComputeOp
from ansorc.net.network import Group, Network, tensors_by_name


def one_group_per_op(net: Network) -> list:
    """Every te compute op its own group, in a topological order of the whole graph."""
    everything = tensors_by_name(net.outputs)
    dag = ComputeDAG([*net.inputs, *[everything[n] for n in sorted(net.weights)], *dict.fromkeys(net.outputs)])
    ops = [op for op in dag.ops if isinstance(op, ComputeOp)]
    readers = {op.name: [o.name for o in ops if any(i.name == op.name for i in o.inputs)] for op in ops}
    outs = {t.name for t in net.outputs}
    return [Group(f"g{k}_{op.name}", (op.name,), tuple(dict.fromkeys(i.name for i in op.inputs)), (op.name,),
                  "opaque") for k, op in enumerate(ops) if readers[op.name] or op.name in outs]


def conv_mlp_softmax(seed: int = 0, n: int = 2, c: int = 3, hw: int = 8, co: int = 4, classes: int = 5) -> Network:
    """conv 3x3 pad 1 (pad stage + reduction) + bias + relu -> flatten -> matmul + bias -> softmax (4 stages)."""
    rng = np.random.default_rng(seed)
    x = te.placeholder((n, c, hw, hw), "float32", name="x")
    w = te.placeholder((co, c, 3, 3), "float32", name="w_conv")
    b = te.placeholder((co,), "float32", name="b_conv")
    fc = te.placeholder((co * hw * hw, classes), "float32", name="w_fc")
    fb = te.placeholder((classes,), "float32", name="b_fc")
    pad = te.compute((n, c, hw + 2, hw + 2), lambda i, j, h, v: te.if_then_else(
        te.all(h >= 1, h <= hw, v >= 1, v <= hw), x[i, j, h - 1, v - 1], 0.0), name="pad")
    rc, rh, rw = te.reduce_axis((0, c), "rc"), te.reduce_axis((0, 3), "rh"), te.reduce_axis((0, 3), "rw")
    conv = te.compute((n, co, hw, hw), lambda i, o, h, v: te.sum(pad[i, rc, h + rh, v + rw] * w[o, rc, rh, rw],
                                                                  axis=[rc, rh, rw]), name="conv")
    relu = te.compute((n, co, hw, hw), lambda i, o, h, v: te.max(conv[i, o, h, v] + b[o], 0.0), name="relu")
    flat = te.compute((n, co * hw * hw), lambda i, k: relu[i, k // (hw * hw), k // hw % hw, k % hw], name="flat")
    rk = te.reduce_axis((0, co * hw * hw), "rk")
    dense = te.compute((n, classes), lambda i, j: te.sum(flat[i, rk] * fc[rk, j], axis=[rk]), name="dense")
    logits = te.compute((n, classes), lambda i, j: dense[i, j] + fb[j], name="logits")
    rj = te.reduce_axis((0, classes), "rj")
    mx = te.compute((n,), lambda i: te.max(logits[i, rj], axis=[rj]), name="mx")
    ex = te.compute((n, classes), lambda i, j: te.exp(logits[i, j] - mx[i]), name="ex")
    rs = te.reduce_axis((0, classes), "rs")
    sm = te.compute((n,), lambda i: te.sum(ex[i, rs], axis=[rs]), name="sm")
    prob = te.compute((n, classes), lambda i, j: ex[i, j] / sm[i], name="prob")
    weights = {"w_conv": rng.standard_normal((co, c, 3, 3)).astype(np.float32) * 0.3,
               "b_conv": rng.standard_normal(co).astype(np.float32) * 0.1,
               "w_fc": rng.standard_normal((co * hw * hw, classes)).astype(np.float32) * 0.1,
               "b_fc": rng.standard_normal(classes).astype(np.float32) * 0.1}
    return Network("convnet", (x,), (prob, relu), ("input:0",), ("prob", "features"),
                   ((n, classes), (n, co, hw, hw)), weights)


def _fma(p, s, name):
    return te.compute(p.shape, lambda i: p[i] * s[i] + 1.0, name=name)


def _clip(p, name):
    return te.compute(p.shape, lambda i: te.max(p[i], 0.5), name=name)


def chain(length: int = 6, size: int = 4096) -> Network:
    """x -> f1 -> f2 -> ... -> out, element-wise, alternating ops; two intermediates are alive at a time."""
    x = te.placeholder((size,), "float32", name="x")
    s = te.placeholder((size,), "float32", name="scale")
    t = x
    for k in range(length):
        t = _fma(t, s, f"f{k}") if k % 2 == 0 else _clip(t, f"f{k}")
    w = {"scale": np.linspace(-1.0, 1.0, size, dtype=np.float32)}
    return Network("chain", (x,), (t,), ("x",), ("y",), ((size,),), w)


def _dense_relu(t, w, k: int):
    r = te.reduce_axis((0, w.shape[0]), f"r{k}")
    mm = te.compute((t.shape[0], w.shape[1]), lambda i, j: te.sum(t[i, r] * w[r, j], axis=[r]), name=f"mm{k}")
    return te.compute(mm.shape, lambda i, j: te.max(mm[i, j], 0.0), name=f"relu{k}")


def two_dense(rows: int = 32, width: int = 512, seed: int = 0) -> Network:
    """x -> relu(x @ w1) -> relu(. @ w2): two groups of one workload with different weights, each a matmul whose
    default program keeps a blocked copy of its weights (a prepared stage)."""
    rng = np.random.default_rng(seed)
    x = te.placeholder((rows, width), "float32", name="x")
    t = x
    for k in (1, 2):
        t = _dense_relu(t, te.placeholder((width, width), "float32", name=f"w{k}"), k)
    weights = {f"w{k}": (rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32) for k in (1, 2)}
    return Network("dense2", (x,), (t,), ("x",), ("y",), ((rows, width),), weights)


def convnet_fused_groups(net: Network) -> list:
    """conv_mlp_softmax cut as fusion would: conv+bias+relu, flatten+dense+bias, the four softmax stages."""
    return [Group("g0_conv", ("pad", "conv", "relu"), ("x", "w_conv", "b_conv"), ("relu",), "complex"),
            Group("g1_dense", ("flat", "dense", "logits"), ("relu", "w_fc", "b_fc"), ("logits",), "complex"),
            Group("g2_softmax", ("mx", "ex", "sm", "prob"), ("logits",), ("prob",), "reduction")]


def row_reductions(rows: int = 4, cols: int = 16) -> tuple:
    """(network, groups, vectorize) : two different row sums whose reduce axes a schedule vectorizes, so that
    both kernels call the same horizontal-sum helper."""
    x = te.placeholder((rows, cols), "float32", name="x")
    k1 = te.reduce_axis((0, cols), "k1")
    s1 = te.compute((rows,), lambda i: te.sum(x[i, k1], axis=[k1]), name="s1")
    y = te.compute((rows, cols), lambda i, j: x[i, j] * s1[i], name="y")
    k2 = te.reduce_axis((0, cols), "k2")
    s2 = te.compute((rows,), lambda i: te.sum(y[i, k2] * y[i, k2], axis=[k2]), name="s2")
    net = Network("rows", (x,), (s2,), ("x",), ("s2",), ((rows,),), {})
    groups = [Group("g0", ("s1",), ("x",), ("s1",)), Group("g1", ("y",), ("x", "s1"), ("y",)),
              Group("g2", ("s2",), ("y",), ("s2",))]
    return net, groups, {"g0": ("s1", "k1"), "g2": ("s2", "k2")}


def mixed_dtypes(size: int = 37) -> Network:
    """int64 and float64 inputs, a float64 weight, a bool output, and one output listed twice."""
    a = te.placeholder((size,), "int64", name="a")
    b = te.placeholder((1,), "float64", name="b")          # a rank-0 ONNX input, held as (1,)
    w = te.placeholder((size,), "float64", name="w")
    f = te.compute((size,), lambda i: a[i].astype("float64") * w[i] + b[0], name="f")
    mask = te.compute((size,), lambda i: f[i] > 0.0, name="mask")
    weights = {"w": np.linspace(-1, 1, size)}
    return Network("mixed", (a, b), (f, mask, f), ("a", "b"), ("f", "mask", "f_again"),
                   ((size,), (size,), (size,)), weights)


def two_embeddings(batch: int = 2, seq: int = 5, vocab: int = 10, hidden: int = 8) -> Network:
    """Two lookups summed (token and position embeddings: ONNX Gather + Add); the ids are data, so their indices
    are checked. Both lookups are one workload: one kernel serves both groups."""
    ids = te.placeholder((batch, seq), "int64", name="ids")
    pos = te.placeholder((batch, seq), "int64", name="pos")
    t1 = te.placeholder((vocab, hidden), "float32", name="table1")
    t2 = te.placeholder((vocab, hidden), "float32", name="table2")
    g1 = te.compute((batch, seq, hidden), lambda b, s, h: t1[te.checked_index(ids[b, s], vocab), h], name="g1")
    g2 = te.compute((batch, seq, hidden), lambda b, s, h: t2[te.checked_index(pos[b, s], vocab), h], name="g2")
    out = te.compute((batch, seq, hidden), lambda b, s, h: g1[b, s, h] + g2[b, s, h], name="out")
    rng = np.random.default_rng(9)
    weights = {"table1": rng.standard_normal((vocab, hidden)).astype(np.float32),
               "table2": rng.standard_normal((vocab, hidden)).astype(np.float32)}
    return Network("embed", (ids, pos), (out,), ("input_ids", "position_ids"), ("hidden",), ((batch, seq, hidden),),
                   weights)
