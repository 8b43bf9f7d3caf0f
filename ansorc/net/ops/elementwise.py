"""ONNX operators lowered to te: element-wise and broadcasting arithmetic, comparisons, logic, Cast, Where,
variadic Sum/Mean/Min/Max; activations live in activation.py.
Interface: common.py.
"""
from __future__ import annotations

import math

import numpy as np

from ... import te
from ...ir.program.expr import binary, compare, const, logic
from .common import OpSpec
from .shape import reshape_to
from .util import ALL, FLOATS, NUMERIC, ONNX_DTYPES, axis, check_dtypes, elementwise, scalar_const, shape_of, unary

_LEGACY = ("broadcast", "axis", "consumed_inputs")  # opsets < 7 (consumed_inputs has no effect)


def _trunc_div(a, b):
    """ONNX integer Div truncates toward zero; the IR's `//` floors: step the floored quotient back up when
    the division was inexact and the signs differ."""
    q = a // b
    return te.if_then_else(logic("&&", (q * b).not_equal(a), compare("!=", a < 0, b < 0)), q + 1, q)


def _div(a, b):
    return a / b if a.dtype in FLOATS else _trunc_div(a, b)


def _legacy_broadcast(node, ins, ctx):
    """Opsets < 7: with broadcast=1, B's dims line up with A's from `axis` (default: the trailing dims)."""
    a, b = shape_of(node, 0, ins[0]), shape_of(node, 1, ins[1])
    if node.attrs.get("_opset", 7) >= 7 or not node.attrs.get("broadcast", 0) or "axis" not in node.attrs:
        return ins[:2], [a, b]
    start = axis(node, node.attrs["axis"], len(a))
    aligned = b + (1,) * (len(a) - start - len(b))
    return [ins[0], reshape_to(node, ins[1], b, aligned, ctx)], [a, aligned]


def _binary(fn, dtypes=NUMERIC, note=""):
    def lower(node, ins, ctx):
        check_dtypes(node, dtypes)
        xs, shapes = _legacy_broadcast(node, ins, ctx)
        return [elementwise(node, xs, ctx, fn, shapes=shapes)]
    return OpSpec(lower, dtypes, _LEGACY, note)


def _variadic(fn, dtypes=NUMERIC, mean=False):
    def lower(node, ins, ctx):
        check_dtypes(node, dtypes)
        xs = [x for x in ins if x is not None]
        if not xs:
            raise node.unsupported("needs at least one input")

        def body(*es):
            out = es[0]
            for e in es[1:]:
                out = fn(out, e)
            return out / float(len(es)) if mean else out
        return [elementwise(node, xs, ctx, body)]
    return OpSpec(lower, dtypes, ("consumed_inputs",))


def _pow(node, ins, ctx):
    check_dtypes(node, NUMERIC)
    x, y = ins[0], ins[1]
    xdt = node.in_dtypes[0]
    if isinstance(y, np.ndarray) and y.size == 1 and xdt in FLOATS:
        p = float(y.reshape(-1)[0])
        special = {1.0: lambda a: a, 2.0: lambda a: a * a, 3.0: lambda a: a * a * a, 0.5: te.sqrt,
                   -1.0: lambda a: 1.0 / a}
        if p in special:  # the common LayerNorm / variance exponents: exact and cheaper than pow
            return [elementwise(node, [x, y], ctx, lambda a, _: special[p](a))]  # y still shapes the result
    work = xdt if xdt in FLOATS else "float64"
    return [elementwise(node, [x, y], ctx, lambda a, b: te.pow(a.astype(work), b.astype(work)).astype(xdt))]


def _int_fmod(a, b):
    r = a % b  # floor modulo takes the divisor's sign; fmod takes the dividend's
    return te.if_then_else(logic("&&", r.not_equal(0), compare("!=", r < 0, a < 0)), r - b, r)


def _float_fmod(a, b):
    q = a / b
    return a - b * te.if_then_else(q < 0, te.ceil(q), te.floor(q))


def _float_floor_mod(a, b):
    """Python's float %: the divisor's sign; x % +-inf is x when the signs agree (or x is 0), else the inf."""
    inf = const(float("inf"), a.dtype)
    keep = logic("||", a.equal(0), compare("==", a > 0, b > 0))
    return te.if_then_else(te.abs(b).equal(inf), te.if_then_else(keep, a, b), a - b * te.floor(a / b))


def _mod(node, ins, ctx):
    check_dtypes(node, NUMERIC)
    fmod = int(node.attrs.get("fmod", 0))
    isfloat = node.in_dtypes[0] in FLOATS
    if isfloat:
        fn = _float_fmod if fmod else _float_floor_mod
    else:
        fn = _int_fmod if fmod else (lambda a, b: a % b)
    return [elementwise(node, ins[:2], ctx, fn)]


def _where(node, ins, ctx):
    check_dtypes(node, ("bool",), 0, 1)
    check_dtypes(node, ALL, 1)
    return [elementwise(node, ins[:3], ctx, te.if_then_else)]


def _to_dtype(e, to: str):
    if to == "bool":  # C's (uint8_t)0.5 is 0 where ONNX (and numpy) say true: compare instead
        return e if e.dtype == "bool" else e.not_equal(const(0, e.dtype))
    return e.astype(to)


def _cast(node, ins, ctx):
    check_dtypes(node, ALL)
    to = ONNX_DTYPES.get(int(node.attrs.get("to", 0)))
    if to is None:
        raise node.unsupported(f"Cast to ONNX dtype {node.attrs.get('to')} (supported: {', '.join(ALL)})")
    return [unary(node, ins[0], ctx, lambda e: _to_dtype(e, to))]


def _cast_like(node, ins, ctx):
    check_dtypes(node, ALL)
    to = node.in_dtypes[1]
    return [unary(node, ins[0], ctx, lambda e: _to_dtype(e, to))]


def _identity(node, ins, ctx):
    return [ins[0]]


def _dropout(node, ins, ctx):
    """Inference: the identity. The mask output is all true then (a constant)."""
    check_dtypes(node, FLOATS, 0, 1)
    training = ins[2] if len(ins) > 2 else None
    if training is not None and not isinstance(training, np.ndarray):
        raise node.unsupported("training_mode must be a constant")
    ratio = ins[1] if len(ins) > 1 else None
    zero_ratio = isinstance(ratio, np.ndarray) and float(ratio.reshape(-1)[0]) == 0.0
    if training is not None and bool(training.reshape(-1)[0]) and not zero_ratio:
        raise node.unsupported("training_mode=true (random dropout) is not supported")
    if int(node.attrs.get("is_test", 1)) == 0 and node.attrs.get("_opset", 13) < 7:
        raise node.unsupported("is_test=0 (training) is not supported")
    outs = [ins[0]]
    if len(node.out_shapes) > 1:
        outs.append(np.ones(shape_of(node, 0, ins[0]), dtype=np.bool_))
    return outs


def _not(node, ins, ctx):
    check_dtypes(node, ("bool",))
    return [unary(node, ins[0], ctx, lambda e: logic("!", e))]


def _logic(op):
    return _binary(lambda a, b: compare("!=", a, b) if op == "^" else logic(op, a, b), ("bool",))


def _clip_bound(node, ins, i, name, default):
    """Clip's min or max: attribute (opset < 11), constant or tensor input, or the dtype's extreme."""
    if node.attrs.get("_opset", 11) < 11:
        v = float(node.attrs.get(name, default))
        return (None if math.isinf(v) else v), None  # an infinite bound clips nothing
    x = ins[i] if i < len(ins) else None
    if x is None:
        return None, None
    if isinstance(x, np.ndarray):
        return scalar_const(x), None
    return None, x


def _clip(node, ins, ctx):
    check_dtypes(node, NUMERIC)
    lo, lo_t = _clip_bound(node, ins, 1, "min", float("-inf"))
    hi, hi_t = _clip_bound(node, ins, 2, "max", float("inf"))

    def body(x, *ts):
        ts = list(ts)
        low = ts.pop(0) if lo_t is not None else lo
        high = ts.pop(0) if hi_t is not None else hi
        if low is not None:
            x = binary("max", x, low)
        if high is not None:
            x = binary("min", x, high)
        return x
    extra = [(t, shape_of(node, i, t)) for i, t in ((1, lo_t), (2, hi_t)) if t is not None]
    return [elementwise(node, [ins[0]] + [t for t, _ in extra], ctx, body,
                        shapes=[shape_of(node, 0, ins[0])] + [s for _, s in extra])]


OPS: dict = {
    "Add": _binary(lambda a, b: a + b),
    "Sub": _binary(lambda a, b: a - b),
    "Mul": _binary(lambda a, b: a * b),
    "Div": _binary(_div, note="integer Div truncates toward zero"),
    "Pow": OpSpec(_pow, NUMERIC, (), "integer Pow through float64; not the opset < 7 broadcast attributes"),
    "Mod": OpSpec(_mod, NUMERIC, ("fmod",)),
    "Sum": _variadic(lambda a, b: a + b, FLOATS),
    "Mean": _variadic(lambda a, b: a + b, FLOATS, mean=True),
    "Max": _variadic(lambda a, b: binary("max", a, b)),
    "Min": _variadic(lambda a, b: binary("min", a, b)),
    "Equal": _binary(lambda a, b: a.equal(b), ALL),
    "Less": _binary(lambda a, b: a < b),
    "LessOrEqual": _binary(lambda a, b: a <= b),
    "Greater": _binary(lambda a, b: a > b),
    "GreaterOrEqual": _binary(lambda a, b: a >= b),
    "And": _logic("&&"),
    "Or": _logic("||"),
    "Xor": _logic("^"),
    "Not": OpSpec(_not, ("bool",)),
    "Where": OpSpec(_where, ("bool",)),
    "Cast": OpSpec(_cast, ALL, ("to", "saturate", "round_mode"), "to float32, float64, int32, int64, bool"),
    "CastLike": OpSpec(_cast_like, ALL, ("saturate", "round_mode")),
    "Identity": OpSpec(_identity, ALL),
    "Dropout": OpSpec(_dropout, FLOATS, ("ratio", "seed", "is_test", "consumed_inputs"),
                      "inference only: the identity"),
    "Clip": OpSpec(_clip, NUMERIC, ("min", "max", "consumed_inputs"), "min/max as attributes (opset < 11) or inputs"),
}
