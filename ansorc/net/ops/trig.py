"""ONNX trigonometric ops from te arithmetic (te has no sin/cos/atan): range reduction plus polynomials, accurate
to float32 rounding for moderate arguments (|x| up to ~1e4 for Sin/Cos)."""
from __future__ import annotations

import math

from ... import te
from ...ir.program.expr import const
from .common import OpSpec
from .util import FLOATS, check_dtypes, horner, unary

# pi/2 in three parts with few bits each (Cephes' DP1..DP3 doubled): n * part stays exact in float32
_PIO2 = (1.5703125, 4.837512969970703125e-4, 7.54978995489188216e-8)
_SIN = tuple((-1) ** k / math.factorial(2 * k + 1) for k in range(6))   # r - r^3/3! + ... through r^11
_COS = tuple((-1) ** k / math.factorial(2 * k) for k in range(7))       # 1 - r^2/2! + ... through r^12
_ATAN = (-3.33329491539e-1, 1.99777106478e-1, -1.38776856032e-1, 8.05374449538e-2)  # Cephes atanf, |t| <= tan(pi/8)
_ASIN = (1.6666752422e-1, 7.4953002686e-2, 4.5470025998e-2, 2.4181311049e-2, 4.2163199048e-2)  # Cephes asinf


def _reduce(x):
    """(r, q): x = r + n * pi/2 with |r| <= pi/4 and q = n mod 4 (as a float 0..3)."""
    n = te.floor(x * (2 / math.pi) + 0.5)
    r = x - n * _PIO2[0] - n * _PIO2[1] - n * _PIO2[2]
    return r, n - 4.0 * te.floor(n * 0.25)


def _pick(cond, a, b):
    """cond ? a : b for constants a and b: a select of constants, so that a value scaled or shifted by it is read
    once (a select of two expressions of x reads x in both arms, and nested selects multiply its reads)."""
    return te.if_then_else(cond, a, b)


def _sin_cos(x):
    """sin and cos from one range reduction: quadrant q picks s or c (odd q swaps them) and a sign."""
    r, q = _reduce(x)
    z = r * r
    s, c = r * horner(z, _SIN), horner(z, _COS)
    odd = q.equal(const(1, q.dtype)) | q.equal(const(3, q.dtype))
    sin_sign = _pick(q >= 2.0, -1.0, 1.0)                                              # q = 0, 1, 2, 3: s c -s -c
    cos_sign = _pick(q.equal(const(1, q.dtype)) | q.equal(const(2, q.dtype)), -1.0, 1.0)  # c -s -c s
    return sin_sign * te.if_then_else(odd, c, s), cos_sign * te.if_then_else(odd, s, c)


def atan(x):
    """|x| > 1 through pi/2 - atan(1/|x|), then |t| > tan(pi/8) through pi/4 + atan((t-1)/(t+1)); each fix-up
    is a constant select times or plus the polynomial's value, which is read once."""
    a = te.abs(x)
    big = a > 1.0
    t = te.if_then_else(big, 1.0 / a, a)
    mid = t > 0.4142135623730950
    u = te.if_then_else(mid, (t - 1.0) / (t + 1.0), t)
    z = u * u
    v = u + u * z * horner(z, _ATAN) + _pick(mid, math.pi / 4, 0.0)
    v = _pick(big, math.pi / 2, 0.0) + _pick(big, -1.0, 1.0) * v
    return _pick(x < 0, -1.0, 1.0) * v


def _asin_core(x):
    """(hi, r) of Cephes' asinf: |x| <= 0.5: r = asin(x) = x + x z P(z), z = x^2; |x| > 0.5: r = asin(s) with
    s = sqrt(z), z = (1 - |x|) / 2, and asin(|x|) = pi/2 - 2r. |x| > 1 gives NaN, as ONNX wants."""
    a = te.abs(x)
    hi = a > 0.5
    z = te.if_then_else(hi, 0.5 - 0.5 * a, x * x)
    s = te.if_then_else(hi, te.sqrt(z), x)
    return hi, s + s * z * horner(z, _ASIN)


def asin(x):
    hi, r = _asin_core(x)
    neg = x < 0
    return _pick(hi, _pick(neg, -math.pi / 2, math.pi / 2), 0.0) + _pick(hi, _pick(neg, 2.0, -2.0), 1.0) * r


def acos(x):
    """pi/2 - asin(x) in the middle; 2 asin(sqrt((1-x)/2)) near 1 and pi - that near -1, accurate at both ends."""
    hi, r = _asin_core(x)
    neg = x < 0
    return _pick(hi, _pick(neg, math.pi, 0.0), math.pi / 2) + _pick(hi, _pick(neg, -2.0, 2.0), -1.0) * r


_TRIG = {
    "Sin": lambda x: _sin_cos(x)[0],
    "Cos": lambda x: _sin_cos(x)[1],
    "Tan": lambda x: (lambda s, c: s / c)(*_sin_cos(x)),
    "Atan": atan,
    "Asin": asin,
    "Acos": acos,
}


def _spec(fn):
    def lower(node, ins, ctx):
        check_dtypes(node, FLOATS)
        return [unary(node, ins[0], ctx, fn)]
    return OpSpec(lower, FLOATS, (), "range reduction and polynomials (no libm call)")


OPS: dict = {op: _spec(fn) for op, fn in _TRIG.items()}
