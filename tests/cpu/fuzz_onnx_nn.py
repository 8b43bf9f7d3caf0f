"""The ONNX fuzzer's recipes for the nn ops of the support table (matrix products, convolution, pooling,
normalizations, layout, casts) and RECIPES, every recipe by name; fuzz_onnx_ops.py has the rest."""
from __future__ import annotations

from tests.cpu import fuzz_onnx_ops as E
from tests.cpu.fuzz_onnx_ops import _axis, _bad


def matmul(c, g, x, s):
    n = c.randint(1, 6)
    if c.coin(0.5) or len(s) != 2:
        k = s[-1] if not _bad(c) else s[-1] + 1
        w = [k, n] if c.coin(0.7) or len(s) == 1 else [*s[:-2][-1:], k, n]
        return g.node("MatMul", [x, g.operand(w)])
    ta, tb = c.randint(0, 1), c.randint(0, 1)
    m, k = (s[1], s[0]) if ta else s
    ins = [x, g.weight([n, k] if tb else [k, n])]
    if c.coin(0.6):
        ins.append(g.weight(c.choice([[n], [1], [m, n], [m, 1]])))
    attrs = {"transA": ta, "transB": tb, "alpha": c.choice([1.0, 0.5]), "beta": c.choice([1.0, 2.0])}
    return g.node("Gemm", ins, **attrs)


def _spatial(c, g, x, s):
    """x as N, C, spatial...: reshaped to rank 3 or 4 when it is not."""
    if len(s) in (3, 4):
        return x, s
    n = 1
    for d in s:
        n *= d
    shape = [1, 1, n] if len(s) < 3 else [s[0], s[1], s[2], n // (s[0] * s[1] * s[2])]
    return g.node("Reshape", [x, g.const(shape)])[0], tuple(shape)


def _window(c, sp):
    ks = [c.randint(1, min(3, d + 1)) for d in sp]
    attrs = {"kernel_shape": ks}
    if c.coin(0.5):
        attrs["strides"] = [c.randint(1, 2) for _ in sp]
    if c.coin(0.5):
        attrs["pads"] = [c.randint(0, k - 1 if not _bad(c) else k) for k in ks * 2]
    elif c.coin(0.2):
        attrs["auto_pad"] = c.choice(["SAME_UPPER", "SAME_LOWER", "VALID"])
    if c.coin(0.3):
        attrs["dilations"] = [c.randint(1, 2) for _ in sp]
    return attrs


def conv(c, g, x, s):
    x, s = _spatial(c, g, x, s)
    ch, sp = s[1], s[2:]
    group = c.choice([d for d in range(1, ch + 1) if ch % d == 0]) if c.coin(0.4) else 1
    if _bad(c):
        group = ch + 1
    m = group * c.randint(1, 3)
    attrs = _window(c, sp)
    ins = [x, g.weight([m, ch // group, *attrs["kernel_shape"]])]
    if c.coin(0.5):
        ins.append(g.weight([m]))
    if c.coin(0.2):
        return g.node("ConvTranspose", [x, g.weight([ch, m // group, *attrs["kernel_shape"]])], group=group,
                      **{k: v for k, v in attrs.items() if k != "auto_pad"})
    return g.node("Conv", ins, group=group, **attrs)


def pool(c, g, x, s):
    x, s = _spatial(c, g, x, s)
    op = c.choice(["MaxPool", "AveragePool", "LpPool", "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"])
    if op.startswith("Global"):
        return g.node(op, [x])
    attrs = _window(c, s[2:])
    if op != "LpPool" and c.coin(0.3):
        attrs["ceil_mode"] = 1
    if op == "AveragePool" and c.coin(0.5):
        attrs["count_include_pad"] = 1
    if op == "MaxPool" and "dilations" not in attrs and c.coin(0.3):
        return g.node(op, [x], n_out=2, **attrs)[:1]
    return g.node(op, [x], **attrs)


def norm(c, g, x, s):
    op = c.choice(["LayerNormalization", "BatchNormalization", "InstanceNormalization", "LpNormalization",
                   "MeanVarianceNormalization", "LRN"])
    if op == "LayerNormalization":
        axis = _axis(c, len(s))
        a = axis % len(s) if -len(s) <= axis < len(s) else 0
        ins = [x, g.weight(s[a:])] + ([g.weight(s[a:])] if c.coin(0.5) else [])
        return g.node(op, ins, axis=axis, epsilon=c.choice([1e-5, 1e-3]))
    if op == "LpNormalization":
        return g.node(op, [x], axis=_axis(c, len(s)), p=c.choice([1, 2, 2, 3]))
    x, s = _spatial(c, g, x, s) if len(s) < 3 else (x, s)
    if op == "MeanVarianceNormalization":
        return g.node(op, [x], axes=E._axes(c, len(s)))
    ch = s[1]
    if op == "LRN" and len(s) == 4:   # odd sizes on 4-D inputs: the only ones a reference computes
        return g.node(op, [x], size=c.choice([1, 3, 5]), alpha=1e-3, beta=0.75)
    if op == "LRN":
        return g.node("InstanceNormalization", [x, g.weight([ch]), g.weight([ch])], epsilon=1e-3)
    if op == "InstanceNormalization":
        return g.node(op, [x, g.weight([ch]), g.weight([ch])], epsilon=1e-5)
    var = g.const(abs(g.rand([ch])) + 0.5, "float32")
    return g.node(op, [x, g.weight([ch]), g.weight([ch]), g.weight([ch]), var], epsilon=1e-5)


def layout(c, g, x, s):
    op = c.choice(["DepthToSpace", "SpaceToDepth", "Trilu", "Cast", "Einsum"])
    if op == "Trilu":
        ins = [x] + ([g.const(c.randint(-3, 3))] if c.coin(0.5) else [])
        return g.node(op, ins, upper=c.randint(0, 1)) if len(s) >= 2 else g.node(op, ins)
    if op == "Cast":
        to = c.choice([1, 7, 6, 9, 11])   # float32, int64, int32, bool, float64
        name = {1: "float32", 7: "int64", 6: "int32", 9: "bool", 11: "float64"}[to]
        return g.node(op, [x], dtype=name, to=to)
    if op == "Einsum":
        letters = "abcd"[:len(s)]
        out = "".join(ch for ch in letters if c.coin(0.6))
        eq = f"{letters}->{out}" if c.coin(0.7) else f"{letters},{letters}->{out}"
        ins = [x] if "," not in eq else [x, g.weight(s)]
        return g.node(op, ins, equation=eq)
    x, s = _spatial(c, g, x, s)
    b = c.choice([1, 2, 2, 3])
    if op == "DepthToSpace":
        return g.node(op, [x], blocksize=b, mode=c.choice(["DCR", "CRD"]))
    return g.node(op, [x], blocksize=b)


RECIPES = {"unary": E.unary, "with_alpha": E.with_alpha, "clip": E.gelu_clip, "binary": E.binary,
           "variadic": E.variadic, "where": E.compare_where, "reduce": E.reduce, "softmax": E.softmax,
           "argmax": E.argmax, "transpose": E.transpose, "reshape": E.reshape, "squeeze": E.flatten_squeeze,
           "concat": E.concat_split, "slice": E.slice_, "gather": E.gather, "tile": E.tile_expand, "pad": E.pad,
           "matmul": matmul, "conv": conv, "pool": pool, "norm": norm, "layout": layout}
