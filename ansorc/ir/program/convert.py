"""The numpy side of conversions between element types: what a Cast, a saturating cast and a narrow store mean.

The evaluator (the reference every kernel is checked against), the simplifier's constant folding and the
Python API use these; codegen/lowp.py writes the same rules in C. docs/expression-language.md, "Types":
- to float16 / bfloat16: first to float32 (round to nearest even), then round to nearest even; bfloat16 by
  integer bit operations. A NaN stays a NaN (bfloat16: the quiet NaN 0x7fc0 with the input's sign).
- float to int8 / uint8 / int16: truncate toward zero to int32, then wrap; defined for |x| < 2**31 (NaN and
  larger values: unspecified, as in C). int to a narrow int: wrap (two's complement).
- saturate (to int8, uint8, int16 or int32): a float rounds half to even (np.rint, C's rint) and clamps to the
  type's range, NaN gives 0; an integer clamps.
- Everything between the older types (float32, float64, int32, int64, bool) is numpy's astype, as it always was.

Values are held "wide" while computing: float64 for every float type, int64 for every integer type, bool.
"""
from __future__ import annotations

import numpy as np

from .dtypes import DTYPE_TABLE, NARROW_INTS, NP_DTYPE, STORAGE_FLOATS

SATURATE_TARGETS = NARROW_INTS + ("int32",)


def wide_type(dtype: str):
    """The numpy type the reference computes a `dtype` value in."""
    d = DTYPE_TABLE[dtype]
    return np.float64 if d.is_float else np.bool_ if dtype == "bool" else np.int64


# ----------------------------------------------------------------------------- bfloat16 and float16

def to_bfloat16(x) -> np.ndarray:
    """bfloat16 bits (uint16) of `x`: to float32, then round to nearest even; NaN -> 0x7fc0 with its sign."""
    with np.errstate(over="ignore", invalid="ignore"):
        u = np.atleast_1d(np.asarray(x, dtype=np.float32)).view(np.uint32)
        r = (u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    nan = (u & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    q = ((u >> np.uint32(16)) & np.uint32(0x8000)) | np.uint32(0x7FC0)
    out = np.where(nan, q, r).astype(np.uint16)
    return out.reshape(np.shape(x))


def from_bfloat16(bits) -> np.ndarray:
    """The float32 values of bfloat16 bits (a uint16 array, or an ml_dtypes bfloat16 array)."""
    a = np.asarray(bits)
    if a.dtype != np.uint16:
        a = a.view(np.uint16) if _is_bf16_array(a) else a.astype(np.uint16)
    return (a.astype(np.uint32) << np.uint32(16)).view(np.float32)


def to_float16(x) -> np.ndarray:
    """float16 of `x` through float32 (two roundings to nearest even, as the kernels do)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(x, dtype=np.float32).astype(np.float16)


def _is_bf16_array(a: np.ndarray) -> bool:
    return a.dtype.name == "bfloat16" and a.dtype.itemsize == 2


# ----------------------------------------------------------------------------- arrays in, values out

def storage(a, dtype: str) -> np.ndarray:
    """`a` as an array of `dtype`'s numpy type (the kernels' arguments). bfloat16 takes uint16 bits as they are,
    an ml_dtypes bfloat16 array as its bits, anything else as numbers to round."""
    a = np.asarray(a)
    if dtype == "bfloat16":
        if a.dtype == np.uint16:
            return a
        return a.view(np.uint16) if _is_bf16_array(a) else to_bfloat16(a)
    if dtype == "float16" and a.dtype != np.float16:
        return to_float16(a)
    return a.astype(NP_DTYPE[dtype], copy=False)


def widen(a: np.ndarray, dtype: str) -> np.ndarray:
    """The wide values of an array held in `dtype`'s numpy type."""
    if dtype == "bfloat16":
        return from_bfloat16(a).astype(np.float64)
    return np.asarray(a).astype(wide_type(dtype))


def narrow(values, dtype: str) -> np.ndarray:
    """Wide values stored as `dtype` (a cast's rounding or wrapping)."""
    if dtype == "bfloat16":
        return to_bfloat16(values)
    if dtype == "float16":
        return to_float16(values)
    v = np.asarray(values)
    if dtype in NARROW_INTS and v.dtype.kind == "f":   # truncate to int32 first, as the C does
        v = np.trunc(v).astype(np.int64)
    return v.astype(NP_DTYPE[dtype])


def cast(values, dtype: str) -> np.ndarray:
    """A Cast to `dtype`: the wide values it gives."""
    return widen(narrow(values, dtype), dtype)


def saturate(values, dtype: str) -> np.ndarray:
    """A saturating cast to an integer `dtype`: round half to even, clamp to the range, NaN -> 0."""
    if dtype not in SATURATE_TARGETS:
        raise ValueError(f"saturate_cast targets {', '.join(SATURATE_TARGETS)}, not {dtype}")
    lo, hi = DTYPE_TABLE[dtype].int_range
    v = np.asarray(values)
    if v.dtype.kind == "f":
        v = np.where(np.isnan(v), 0.0, np.clip(np.rint(v), lo, hi)).astype(np.int64)
    return np.clip(v.astype(np.int64), lo, hi)


def scalar(value, dtype: str, saturating: bool = False):
    """A constant's value after a cast (or a saturating cast) to `dtype`, as a Python number."""
    wide = np.asarray(value, dtype=np.float64 if isinstance(value, float) else np.int64)
    out = saturate(wide, dtype) if saturating else cast(wide, dtype)
    return out.item()


__all__ = ["wide_type", "to_bfloat16", "from_bfloat16", "to_float16", "storage", "widen", "narrow", "cast",
           "saturate", "scalar", "SATURATE_TARGETS", "STORAGE_FLOATS"]
