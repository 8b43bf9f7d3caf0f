"""C for the narrow element types: conversions, saturating casts and constants (ir/program/convert.py is the
numpy side of the same rules; docs/expression-language.md, "Types").

In C a float16 or bfloat16 value is the `uint16_t` holding its bits: a read yields the bits, `ansorc_*_to_f32`
converts them up (exactly) wherever a Cast asks, `ansorc_f32_to_*` rounds a float down to nearest even. bfloat16 is
integer bit operations (gcc and clang alike); float16 is `_Float16` where the compiler has it (gcc 12 and clang
15 on x86-64 and AArch64: F16C / FP16 conversions), else the same rounding in bit operations
(`-DANSORC_NO_FLOAT16` forces those; the tests compare both). int8, uint8 and int16 are their C types: C's
integer promotion computes them in int, and a store wraps. The helpers come only with programs that use them, so
the C of every other program stays as it was.
"""
from __future__ import annotations

from ..ir.program.convert import to_bfloat16, to_float16
from ..ir.program.dtypes import C_TYPE, DTYPE_TABLE, NARROW_INTS, STORAGE_FLOATS

_SHORT = {"float16": "f16", "bfloat16": "bf16"}

PRELUDE = r"""#ifndef ANSORC_LOWP
#define ANSORC_LOWP
typedef union { float f; uint32_t u; } ansorc_f32_bits;
static inline float ansorc_bf16_to_f32(uint16_t h) { ansorc_f32_bits v; v.u = (uint32_t)h << 16; return v.f; }
static inline uint16_t ansorc_f32_to_bf16(float f) { ansorc_f32_bits v; v.f = f; if ((v.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)(((v.u >> 16) & 0x8000u) | 0x7fc0u); return (uint16_t)((v.u + 0x7fffu + ((v.u >> 16) & 1u)) >> 16); }
#if defined(__FLT16_MAX__) && !defined(ANSORC_NO_FLOAT16)
typedef union { _Float16 h; uint16_t u; } ansorc_f16_bits;
static inline float ansorc_f16_to_f32(uint16_t h) { ansorc_f16_bits v; v.u = h; return (float)v.h; }
static inline uint16_t ansorc_f32_to_f16(float f) { ansorc_f16_bits v; v.h = (_Float16)f; return v.u; }
#else
static inline float ansorc_f16_to_f32(uint16_t h) { uint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu; ansorc_f32_bits v; if (e == 0x1fu) v.u = s | 0x7f800000u | (m << 13); else if (e) v.u = s | ((e + 112u) << 23) | (m << 13); else { v.f = (float)m * 5.9604644775390625e-8f; v.u |= s; } return v.f; }
static inline uint16_t ansorc_f32_to_f16(float f) { ansorc_f32_bits v; v.f = f; uint32_t s = (v.u >> 16) & 0x8000u, a = v.u & 0x7fffffffu; if (a > 0x7f800000u) return (uint16_t)(s | 0x7e00u | ((a >> 13) & 0x3ffu)); if (a >= 0x477ff000u) return (uint16_t)(s | 0x7c00u); if (a >= 0x38800000u) { uint32_t r = a - 0x38000000u; return (uint16_t)(s | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13)); } if (a < 0x33000000u) return (uint16_t)s; uint32_t m = (a & 0x7fffffu) | 0x800000u, sh = 126u - (a >> 23), r = m >> sh, rem = m & ((1u << sh) - 1u), half = 1u << (sh - 1u); r += (rem > half || (rem == half && (r & 1u))) ? 1u : 0u; return (uint16_t)(s | r); }
#endif
static inline int64_t ansorc_sat_f64(double x, int64_t lo, int64_t hi) { return x != x ? 0 : x <= (double)lo ? lo : x >= (double)hi ? hi : (int64_t)rint(x); }
static inline int64_t ansorc_sat_i64(int64_t x, int64_t lo, int64_t hi) { return x < lo ? lo : x > hi ? hi : x; }
static inline int32_t ansorc_sat_f32(float x, int32_t lo, int32_t hi) { float y = x != x ? 0.0f : x < (float)lo ? (float)lo : x > (float)hi ? (float)hi : x; return (int32_t)__builtin_rintf(y); }
static inline int32_t ansorc_sat_i32(int32_t x, int32_t lo, int32_t hi) { return x < lo ? lo : x > hi ? hi : x; }
#endif
"""


def uses_prelude(body: str) -> bool:
    return any(f"ansorc_{k}" in body for k in ("bf16_", "f16_", "f32_to_", "sat_"))


def constant(value: float, dtype: str) -> str:
    """A float16 / bfloat16 constant: its bits."""
    bits = to_bfloat16(value) if dtype == "bfloat16" else to_float16(value).view("uint16")
    return f"0x{int(bits):04x}"


def to_float32(src: str, text: str) -> str:
    """A value of a 16-bit float type, converted up."""
    return f"ansorc_{_SHORT[src]}_to_f32({text})"


def cast(src: str, dst: str, text: str) -> str | None:
    """C for a Cast from src to dst involving a narrow type, or None where plain C's is right."""
    up = src in STORAGE_FLOATS
    if up:
        text, src = to_float32(src, text), "float32"
    if dst in STORAGE_FLOATS:
        return f"ansorc_f32_to_{_SHORT[dst]}({text if src == 'float32' else f'((float)({text}))'})"
    if dst in NARROW_INTS and DTYPE_TABLE[src].is_float:   # truncate to int32, then wrap
        return f"(({C_TYPE[dst]})(int32_t)({text}))"
    if not up:
        return None
    return text if dst == "float32" else f"(({C_TYPE[dst]})({text}))"


def saturate(src: str, dst: str, text: str) -> str:
    """C for te.saturate_cast: round half to even and clamp (floats; NaN -> 0), clamp (integers)."""
    lo, hi = DTYPE_TABLE[dst].int_range
    if src in STORAGE_FLOATS:
        text, src = to_float32(src, text), "float32"
    # float32 to a range float32 holds exactly, and int32-or-narrower to an int32 range: the 32-bit helpers, which
    # gcc vectorizes (a select, then rint); the same results as the 64-bit ones, which it does not vectorize
    fits = -2**31 <= lo and hi < 2**31
    if DTYPE_TABLE[src].is_float:
        narrow = src == "float32" and -2**24 <= lo and hi <= 2**24
        fn = "ansorc_sat_f32" if narrow else "ansorc_sat_f64"
    else:
        fn = "ansorc_sat_i32" if DTYPE_TABLE[src].itemsize <= 4 and fits else "ansorc_sat_i64"
    suffix = "LL" if fn.endswith("64") else ""
    return f"(({C_TYPE[dst]})({fn}({text}, {lo}{suffix}, {hi}{suffix})))"


__all__ = ["PRELUDE", "uses_prelude", "constant", "cast", "saturate", "to_float32"]
