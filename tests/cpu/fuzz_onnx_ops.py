"""The ops of the ONNX fuzzer (fuzz_onnx_graphs.py): one recipe per family of the support table
(ansorc/net/ops/__init__.py). A recipe reads tensor `x` of shape `s`, adds one node (and its constants or second
inputs) to the GraphBuilder and returns the node's outputs. `_bad(c)` is the small chance of an attribute just
outside what the op allows. Not drawn, because another change fixes them (issue 50's list): ConstantOfShape,
EyeLike and Range (folding size limits), Pad reflect with pads larger than the dim. Not drawn, because nothing
could check ansorc's answer: Pad wrap with negative pads (onnxruntime's answer is neither order of crop and
wrap; onnx's reference refuses negative pads), LRN of even size or not 4-D (onnxruntime refuses both; onnx's
reference LRN loops over the batch instead of the channels).
"""
from __future__ import annotations

import numpy as np

UNARY = ("Abs", "Neg", "Relu", "Sigmoid", "Tanh", "Exp", "Sin", "Cos", "Tan", "Atan", "Asin", "Acos", "Floor",
         "Ceil", "Round", "Sign", "Softplus", "Softsign", "Erf", "HardSwish", "Mish", "Reciprocal", "Sqrt",
         "Log", "Asinh", "Sinh", "Cosh", "Identity", "Acosh", "Atanh")
WITH_ALPHA = {"LeakyRelu": ("alpha",), "Elu": ("alpha",), "Celu": ("alpha",), "Selu": ("alpha", "gamma"),
              "HardSigmoid": ("alpha", "beta"), "ThresholdedRelu": ("alpha",), "Shrink": ("lambd", "bias")}
BINARY = ("Add", "Sub", "Mul", "Div", "Max", "Min", "Pow", "Mod", "PRelu")
REDUCE = ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceL1", "ReduceL2", "ReduceLogSumExp",
          "ReduceSumSquare", "ReduceProd", "ReduceLogSum")
LOOSE = {*REDUCE, "Softmax", "LogSoftmax", "MatMul", "Gemm", "Conv", "AveragePool", "LayerNormalization",
         "InstanceNormalization", "BatchNormalization", "GlobalAveragePool", "LpNormalization", "Einsum",
         "MeanVarianceNormalization", "ConvTranspose", "LRN", "GroupNormalization"}


def _bad(c, p: float = 0.08) -> bool:
    return c.coin(p)


def _axis(c, rank: int, allow_end: bool = False) -> int:
    """An axis in [-rank, rank) (or to rank when allow_end); sometimes just past it."""
    hi = rank if allow_end else rank - 1
    if _bad(c):
        return c.choice([hi + 1, -rank - 1])
    return c.randint(-rank, hi)


def _axes(c, rank: int) -> list:
    axes = sorted({c.randint(0, rank - 1) for _ in range(c.randint(1, rank))})
    axes = [a - rank if c.coin(0.3) else a for a in axes]
    if _bad(c):
        axes.append(c.choice([rank, axes[0]]))   # out of range, or repeated
    return axes


# The input mapped into the op's domain first: NaNs from outside it would reach ops whose NaN handling ONNX
# leaves open (ArgMax, Max, ReduceMax: onnxruntime and numpy differ), so a mismatch there would be noise.
DOMAIN = {"Log": "Abs", "Sqrt": "Abs", "Acos": "Tanh", "Asin": "Tanh", "Atanh": "Sin", "Acosh": "Cosh"}


def unary(c, g, x, s):
    op = c.choice(UNARY)
    if op in DOMAIN:
        x = g.node(DOMAIN[op], [x])[0]
        if op == "Atanh":   # sin(x) * 0.9: inside (-1, 1)
            x = g.node("Mul", [x, g.const(0.9, "float32")])[0]
    return g.node(op, [x])


def with_alpha(c, g, x, s):
    op = c.choice(sorted(WITH_ALPHA))
    attrs = {a: c.choice([0.0, 0.1, 0.5, 1.0, 1.7, -0.3]) for a in WITH_ALPHA[op] if c.coin(0.7)}
    return g.node(op, [x], **attrs)


def gelu_clip(c, g, x, s):
    if c.coin(0.5):
        lo, hi = sorted([c.randint(-20, 20) / 10 for _ in range(2)])
        if _bad(c, 0.2):
            lo, hi = hi, lo
        ins = [x, g.const(lo, "float32"), g.const(hi, "float32")][:c.randint(1, 3)]
        return g.node("Clip", ins)
    return g.node("Softplus" if c.coin(0.3) else "HardSwish", [x])


def _broadcast_shape(c, s) -> tuple:
    """A shape that broadcasts against s: trailing dims kept or 1, leading dims dropped; sometimes not."""
    out = [d if c.coin(0.6) else 1 for d in s][c.randint(0, len(s)):] or [1]
    if c.coin(0.15):
        out = [1] * c.randint(1, 2) + out
    if _bad(c) and out:
        out[-1] += 1
    return tuple(out)


def binary(c, g, x, s):
    op = c.choice(BINARY)
    other = g.operand(_broadcast_shape(c, s))
    if op == "Pow":   # a negative base to a fractional power is NaN (see DOMAIN)
        x = g.node("Abs", [x])[0]
    ins = [other, x] if c.coin(0.3) and op not in ("PRelu", "Pow") else [x, other]
    attrs = {"fmod": 1} if op == "Mod" else {}
    return g.node(op, ins, **attrs)


def variadic(c, g, x, s):
    ins = [x] + [g.operand(_broadcast_shape(c, s)) for _ in range(c.randint(0, 2))]
    return g.node(c.choice(["Sum", "Mean", "Max", "Min"]), ins)


def compare_where(c, g, x, s):
    cond = g.node(c.choice(["Greater", "Less", "Equal", "GreaterOrEqual", "LessOrEqual"]),
                  [x, g.weight(_broadcast_shape(c, s))], dtype="bool")[0]
    if c.coin(0.3):
        cond = g.node("Not", [cond], dtype="bool")[0] if c.coin(0.5) else g.node(
            c.choice(["Xor", "And", "Or"]), [cond, g.node("Less", [x, g.weight((1,))], dtype="bool")[0]],
            dtype="bool")[0]
    return g.node("Where", [cond, x, g.operand(_broadcast_shape(c, s))])


def reduce(c, g, x, s):
    op = c.choice(REDUCE)
    attrs = {"keepdims": c.randint(0, 1)} if c.coin(0.7) else {}
    ins = [x]
    if c.coin(0.85):
        axes = _axes(c, len(s))
        if op == "ReduceSum":   # opset 13+: axes as an input
            ins.append(g.const(axes))
        else:
            attrs["axes"] = axes
    if op == "ReduceLogSum" or (op == "ReduceL1" and c.coin(0.5)):   # the log of a negative sum: NaN
        ins[0] = g.node("Abs", [x])[0]
    return g.node(op, ins, **attrs)


def softmax(c, g, x, s):
    return g.node(c.choice(["Softmax", "LogSoftmax", "Hardmax"]), [x], axis=_axis(c, len(s)))


def argmax(c, g, x, s):
    attrs = {"axis": _axis(c, len(s)), "keepdims": c.randint(0, 1), "select_last_index": c.randint(0, 1)}
    return g.node(c.choice(["ArgMax", "ArgMin"]), [x], dtype="int64", **attrs)


def transpose(c, g, x, s):
    perm = list(np.random.default_rng(c.randint(0, 999)).permutation(len(s)))
    if _bad(c) and len(perm) > 1:
        perm[0] = perm[1]
    return g.node("Transpose", [x], perm=[int(p) for p in perm]) if c.coin(0.9) else g.node("Transpose", [x])


def _factor(c, n: int, parts: int) -> list:
    out = []
    for _ in range(parts - 1):
        divs = [d for d in range(1, n + 1) if n % d == 0]
        d = c.choice(divs)
        out.append(d)
        n //= d
    return out + [n]


def reshape(c, g, x, s):
    n = int(np.prod(s))
    shape = _factor(c, n, c.randint(1, 4))
    if c.coin(0.3):
        shape[c.randint(0, len(shape) - 1)] = -1
    if c.coin(0.2) and len(shape) <= len(s) and shape[0] == s[0]:
        shape[0] = 0
    if _bad(c):
        shape[-1] = shape[-1] + 1 if shape[-1] > 0 else -1
        if c.coin(0.5):
            shape[0] = -1
    return g.node("Reshape", [x, g.const(shape)])


def flatten_squeeze(c, g, x, s):
    kind = c.choice(["Flatten", "Squeeze", "Unsqueeze"])
    if kind == "Flatten":
        return g.node("Flatten", [x], axis=_axis(c, len(s), allow_end=True))
    if kind == "Unsqueeze":
        axes = sorted({c.randint(-len(s) - 1, len(s)) for _ in range(c.randint(1, 2))})
        if _bad(c):
            axes.append(len(s) + 2)
        return g.node("Unsqueeze", [x, g.const(axes)])
    ones = [k for k, d in enumerate(s) if d == 1]
    if not ones or _bad(c, 0.15):
        return g.node("Squeeze", [x, g.const([c.randint(0, len(s) - 1)])]) if c.coin(0.5) else g.node(
            "Squeeze", [x])
    return g.node("Squeeze", [x, g.const(ones[:c.randint(1, len(ones))])])


def concat_split(c, g, x, s):
    axis = _axis(c, len(s))
    a = axis % len(s) if -len(s) <= axis < len(s) else 0
    if c.coin(0.5):
        other = list(s)
        other[a] = c.randint(1, 4)
        if _bad(c):
            other[(a + 1) % len(s)] += 1
        return g.node("Concat", [x, g.operand(other)], axis=axis)
    parts = c.randint(1, 3)
    sizes = [c.randint(0, s[a]) for _ in range(parts - 1)]
    sizes.append(s[a] - sum(sizes))
    if _bad(c):
        sizes[-1] += 1
    if sizes[-1] < 0:
        return g.node("Split", [x], n_out=2, axis=axis)
    return g.node("Split", [x, g.const(sizes)], n_out=len(sizes), axis=axis)


def slice_(c, g, x, s):
    axes = sorted({c.randint(0, len(s) - 1) for _ in range(c.randint(1, len(s)))})
    starts, ends, steps = [], [], []
    for a in axes:
        d = s[a]
        step = c.choice([1, 1, 2, 3, -1, -2]) if not _bad(c) else 0
        lo, hi = c.randint(-d - 2, d + 2), c.randint(-d - 2, d + 2)
        starts.append(lo)
        ends.append(hi if c.coin(0.9) else c.choice([2**62, -2**62]))
        steps.append(step)
    ins = [x, g.const(starts), g.const(ends), g.const([a - len(s) if c.coin(0.3) else a for a in axes])]
    return g.node("Slice", ins + [g.const(steps)] if c.coin(0.8) else ins)


def gather(c, g, x, s):
    axis = _axis(c, len(s))
    d = s[axis % len(s)] if -len(s) <= axis < len(s) else s[0]
    shape = tuple(c.randint(1, 4) for _ in range(c.randint(0, 2)))
    idx = np.random.default_rng(c.randint(0, 999)).integers(-d, d, size=shape)
    if _bad(c, 0.1) and idx.size:
        idx.flat[0] = c.choice([d, -d - 1])
    if c.coin(0.3):
        other = list(s)
        other[axis % len(s) if -len(s) <= axis < len(s) else 0] = c.randint(1, 3)
        idx = np.random.default_rng(c.randint(0, 999)).integers(-d, d, size=other)
        return g.node("GatherElements", [x, g.const(idx)], axis=axis)
    return g.node("Gather", [x, g.const(idx)], axis=axis)


def tile_expand(c, g, x, s):
    if c.coin(0.5):
        reps = [c.randint(1, 2) for _ in s]
        if _bad(c):
            reps = reps[:-1] or [0, 1]
        return g.node("Tile", [x, g.const(reps)])
    shape = [d if d != 1 or c.coin(0.5) else c.randint(1, 3) for d in s]
    if c.coin(0.3):
        shape = [c.randint(1, 2)] + shape
    if _bad(c):
        shape[-1] += 1
    return g.node("Expand", [x, g.const(shape)])


def pad(c, g, x, s):
    mode = c.choice(["constant", "constant", "edge", "reflect", "wrap"])
    pads = [c.randint(-1 if mode in ("constant", "edge") else 0, 2) for _ in range(2 * len(s))]
    if mode == "reflect":   # pads >= the dim, or beside a crop: excluded (issue 50, fixed by another change)
        pads = [min(p, s[k % len(s)] - 1) for k, p in enumerate(pads)]
    if _bad(c):
        pads = pads[:-1]
    ins = [x, g.const(pads)]
    if mode == "constant" and c.coin(0.5):
        ins.append(g.const(c.randint(-3, 3) / 2, "float32"))
    return g.node("Pad", ins, mode=mode)
