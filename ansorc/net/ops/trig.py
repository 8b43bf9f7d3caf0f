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


def _reduce(x):
    """(r, q): x = r + n * pi/2 with |r| <= pi/4 and q = n mod 4 (as a float 0..3)."""
    n = te.floor(x * (2 / math.pi) + 0.5)
    r = x - n * _PIO2[0] - n * _PIO2[1] - n * _PIO2[2]
    return r, n - 4.0 * te.floor(n * 0.25)


def _quadrant(q, *arms):
    out = arms[3]
    for k in (2, 1, 0):
        out = te.if_then_else(q.equal(const(k, q.dtype)), arms[k], out)
    return out


def _sin_cos(x):
    r, q = _reduce(x)
    z = r * r
    s, c = r * horner(z, _SIN), horner(z, _COS)
    return (_quadrant(q, s, c, -s, -c), _quadrant(q, c, -s, -c, s))


def atan(x):
    """|x| > 1 through pi/2 - atan(1/|x|), then |t| > tan(pi/8) through pi/4 + atan((t-1)/(t+1))."""
    a = te.abs(x)
    big = a > 1.0
    t = te.if_then_else(big, 1.0 / a, a)
    mid = t > 0.4142135623730950
    u = te.if_then_else(mid, (t - 1.0) / (t + 1.0), t)
    z = u * u
    v = u + u * z * horner(z, _ATAN)
    v = te.if_then_else(mid, v + math.pi / 4, v)
    v = te.if_then_else(big, math.pi / 2 - v, v)
    return te.if_then_else(x < 0, -v, v)


_TRIG = {
    "Sin": lambda x: _sin_cos(x)[0],
    "Cos": lambda x: _sin_cos(x)[1],
    "Tan": lambda x: _sin_cos(x)[0] / _sin_cos(x)[1],
    "Atan": atan,
    "Asin": lambda x: atan(x / te.sqrt(1.0 - x * x)),
    "Acos": lambda x: 2.0 * atan(te.sqrt((1.0 - x) / (1.0 + x))),  # accurate near 1, where pi/2 - asin is not
}


def _spec(fn):
    def lower(node, ins, ctx):
        check_dtypes(node, FLOATS)
        return [unary(node, ins[0], ctx, fn)]
    return OpSpec(lower, FLOATS, (), "range reduction and polynomials (no libm call)")


OPS: dict = {op: _spec(fn) for op, fn in _TRIG.items()}
