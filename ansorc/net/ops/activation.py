"""ONNX unary math and activations lowered to te. te has no erf, so Erf and
Gelu are built from exp, selects and polynomials here: no IR change needed."""
from __future__ import annotations

import math

from ... import te
from ...ir.program.expr import binary, const
from .common import OpSpec
from .util import FLOATS, NUMERIC, check_dtypes, elementwise, horner, unary

_SELU_ALPHA = 1.67326319217681884765625
_SELU_GAMMA = 1.05070102214813232421875
# erf(x) = 2/sqrt(pi) * sum (-1)^n x^(2n+1) / (n! (2n+1)): for |x| < 0.5 six terms leave < 1e-7 relative error
_TAYLOR = tuple(2 / math.sqrt(math.pi) * (-1) ** n / (math.factorial(n) * (2 * n + 1)) for n in range(6))
# Numerical Recipes' erfc(z) = t exp(-z^2 + P(t)), t = 1 / (1 + z / 2): relative error < 1.2e-7 for z >= 0
_ERFC = (-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807, -1.13520398, 1.48851587,
         -0.82215223, 0.17087277)


def erf(x):
    """erf from te math: a Taylor series near 0 (where an absolute error bound would be a large relative one),
    Numerical Recipes' erfc elsewhere; |error| <= 1.2e-7 * |erf(x)| roughly, below float32 rounding."""
    z = te.abs(x)
    near = x * horner(x * x, _TAYLOR)
    t = 1.0 / (z * 0.5 + 1.0)
    far = 1.0 - t * te.exp(horner(t, _ERFC) - z * z)
    return te.if_then_else(z < 0.5, near, te.if_then_else(x < 0, -far, far))


def _gelu(x, approximate: str):
    if approximate == "tanh":
        inner = math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x)
        return 0.5 * x * (1.0 + te.tanh(inner))
    return 0.5 * x * (1.0 + erf(x * (1 / math.sqrt(2))))


def _softplus(x):
    """log(1 + exp(x)) without overflow: max(x, 0) + log(1 + exp(-|x|)), the tiny-tail term kept accurate."""
    v = te.exp(-te.abs(x))
    tail = te.if_then_else(v < 1e-4, v * (1.0 - 0.5 * v), te.log(1.0 + v))
    return binary("max", x, const(0, x.dtype)) + tail


def _clamp01(e):
    return binary("min", binary("max", e, const(0, e.dtype)), const(1, e.dtype))


def _sign(x):
    one, zero = const(1, x.dtype), const(0, x.dtype)
    return te.if_then_else(x > zero, one, te.if_then_else(x < zero, -one, zero))


def _round(x):
    """Round half to even (ONNX Round) from floor: ties go to the even neighbour."""
    r = te.floor(x)
    d = x - r
    even = (r - 2.0 * te.floor(r * 0.5)).equal(const(0, x.dtype))
    return te.if_then_else(d > 0.5, r + 1.0, te.if_then_else(d < 0.5, r, te.if_then_else(even, r, r + 1.0)))


def _shrink(x, a):
    lambd, bias = a.get("lambd", 0.5), a.get("bias", 0.0)
    zero = const(0, x.dtype)
    return te.if_then_else(x < -lambd, x + bias, te.if_then_else(x > lambd, x - bias, zero))


def _is_inf(x, a):
    inf = const(float("inf"), x.dtype)
    pos, neg = x.equal(inf), x.equal(-inf)
    if a.get("detect_positive", 1) and a.get("detect_negative", 1):
        return te.any(pos, neg)
    return pos if a.get("detect_positive", 1) else neg if a.get("detect_negative", 1) else const(False, "bool")


def _odd(x, f):
    """f(|x|) with x's sign: for functions odd around 0 whose formula cancels for negative x."""
    return te.if_then_else(x < 0, -f(-x), f(x))


_HYPERBOLIC = {
    "Sinh": lambda x: (te.exp(x) - te.exp(-x)) * 0.5,
    "Cosh": lambda x: (te.exp(x) + te.exp(-x)) * 0.5,
    "Asinh": lambda x: _odd(x, lambda v: te.log(v + te.sqrt(v * v + 1.0))),
    "Acosh": lambda x: te.log(x + te.sqrt(x * x - 1.0)),
    "Atanh": lambda x: 0.5 * te.log((1.0 + x) / (1.0 - x)),
}


def _map(fn, dtypes=FLOATS, attrs=(), note=""):
    """An op of one input: out = fn(x, attrs)."""
    def lower(node, ins, ctx):
        check_dtypes(node, dtypes)
        return [unary(node, ins[0], ctx, lambda x: fn(x, node.attrs))]
    return OpSpec(lower, dtypes, attrs + ("consumed_inputs",), note)  # an opset-1 attribute without effect


_CELU = _map(lambda x, a: binary("max", x, const(0, x.dtype)) + binary(
    "min", const(0, x.dtype), a.get("alpha", 1.0) * (te.exp(x * (1.0 / a.get("alpha", 1.0))) - 1.0)))


def _celu(node, ins, ctx):
    if float(node.attrs.get("alpha", 1.0)) == 0.0:   # Celu divides x by alpha
        raise node.unsupported("alpha=0 (Celu divides by alpha)")
    return _CELU.lower(node, ins, ctx)


def _prelu(node, ins, ctx):
    check_dtypes(node, NUMERIC)
    return [elementwise(node, ins[:2], ctx, lambda x, s: te.if_then_else(x < 0, x * s, x))]


def _gelu_op(node, ins, ctx):
    check_dtypes(node, FLOATS)
    approx = node.attrs.get("approximate", "none")
    approx = approx.decode() if isinstance(approx, bytes) else approx
    if approx not in ("none", "tanh"):
        raise node.unsupported(f"approximate={approx!r} (supported: none, tanh)")
    return [unary(node, ins[0], ctx, lambda x: _gelu(x, approx))]


OPS: dict = {
    "Neg": _map(lambda x, a: -x, NUMERIC),
    "Abs": _map(lambda x, a: te.abs(x), NUMERIC),
    "Sign": _map(lambda x, a: _sign(x), NUMERIC),
    "Reciprocal": _map(lambda x, a: 1.0 / x),
    "Sqrt": _map(lambda x, a: te.sqrt(x)),
    "Exp": _map(lambda x, a: te.exp(x)),
    "Log": _map(lambda x, a: te.log(x)),
    "Floor": _map(lambda x, a: te.floor(x)),
    "Ceil": _map(lambda x, a: te.ceil(x)),
    "Round": _map(lambda x, a: _round(x), note="half to even"),
    # int8 (opset 14): max computes in int32, as C promotes, so it is narrowed back (exactly: 0 <= result < 128)
    "Relu": _map(lambda x, a: binary("max", x, const(0, x.dtype)).astype(x.dtype), NUMERIC + ("int8",)),
    "LeakyRelu": _map(lambda x, a: te.if_then_else(x < 0, x * a.get("alpha", 0.01), x), attrs=("alpha",)),
    "PRelu": OpSpec(_prelu, NUMERIC, ("consumed_inputs",), "slope broadcast to the input"),
    "Elu": _map(lambda x, a: te.if_then_else(x < 0, a.get("alpha", 1.0) * (te.exp(x) - 1.0), x),
                attrs=("alpha",)),
    "Selu": _map(lambda x, a: te.if_then_else(x > 0, a.get("gamma", _SELU_GAMMA) * x, a.get("gamma", _SELU_GAMMA)
                                              * a.get("alpha", _SELU_ALPHA) * (te.exp(x) - 1.0)),
                 attrs=("alpha", "gamma")),
    "Celu": OpSpec(_celu, FLOATS, ("alpha", "consumed_inputs")),
    "ThresholdedRelu": _map(lambda x, a: te.if_then_else(x > a.get("alpha", 1.0), x, const(0, x.dtype)),
                            attrs=("alpha",)),
    "HardSigmoid": _map(lambda x, a: _clamp01(x * a.get("alpha", 0.2) + a.get("beta", 0.5)),
                        attrs=("alpha", "beta")),
    "HardSwish": _map(lambda x, a: x * _clamp01(x * (1 / 6) + 0.5)),
    "Sigmoid": _map(lambda x, a: te.sigmoid(x)),
    "Tanh": _map(lambda x, a: te.tanh(x)),
    "Softplus": _map(lambda x, a: _softplus(x)),
    "Softsign": _map(lambda x, a: x / (te.abs(x) + 1.0)),
    "Mish": _map(lambda x, a: x * te.tanh(_softplus(x))),
    "Erf": _map(lambda x, a: erf(x)),
    "Shrink": _map(_shrink, NUMERIC, ("lambd", "bias")),
    "Swish": _map(lambda x, a: x * te.sigmoid(x * a.get("alpha", 1.0)), attrs=("alpha",)),
    "IsNaN": _map(lambda x, a: x.not_equal(x), note="x != x (kernels are built without -ffast-math)"),
    "IsInf": _map(_is_inf, attrs=("detect_positive", "detect_negative")),
    **{op: _map(lambda x, a, f=f: f(x), note="from exp, log and sqrt") for op, f in _HYPERBOLIC.items()},
    "Gelu": OpSpec(_gelu_op, FLOATS, ("approximate",), "exact (via a built-in erf) or tanh"),
}
