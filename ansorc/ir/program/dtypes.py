"""The one table of element types: per dtype name, its size in bytes, its C type, its numpy dtype, its kind and
the type its arithmetic runs in.

Codegen, the builder's drivers, the evaluator, the runner and the cost-model features all read it, so that a
dtype cannot mean different things in different places. bool is one byte: `uint8_t` in C, numpy's `bool_`
(also one byte, 0 or 1) in Python.

Narrow types (docs/expression-language.md, "Types"): int8, uint8 and int16 compute in int32, float16 and bfloat16
are storage types that compute in float32 (`compute`). In C both 16-bit floats are `uint16_t` holding the bits;
in numpy float16 is `np.float16` and bfloat16 is `np.uint16` holding the bits (numpy has no bfloat16, and
ml_dtypes, which has one, takes most of a second to import; ir/program/convert.py converts).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DType:
    name: str
    itemsize: int
    c_type: str
    np_dtype: type
    kind: str = "float"          # "float", "int", "uint" or "bool"
    compute: str | None = None   # the dtype its arithmetic runs in, where that is another one

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def int_range(self) -> tuple:
        """(lowest, highest) value of an integer type."""
        bits = 8 * self.itemsize
        return (0, 2**bits - 1) if self.kind == "uint" else (-2**(bits - 1), 2**(bits - 1) - 1)


DTYPE_TABLE = {d.name: d for d in (
    DType("float32", 4, "float", np.float32),
    DType("float64", 8, "double", np.float64),
    DType("int32", 4, "int32_t", np.int32, "int"),
    DType("int64", 8, "int64_t", np.int64, "int"),
    DType("bool", 1, "uint8_t", np.bool_, "bool"),
    DType("int8", 1, "int8_t", np.int8, "int", "int32"),
    DType("uint8", 1, "uint8_t", np.uint8, "uint", "int32"),
    DType("int16", 2, "int16_t", np.int16, "int", "int32"),
    DType("float16", 2, "uint16_t", np.float16, "float", "float32"),
    DType("bfloat16", 2, "uint16_t", np.uint16, "float", "float32"),
)}

NARROW_INTS = tuple(n for n, d in DTYPE_TABLE.items() if d.is_int and d.compute)       # int8 uint8 int16
STORAGE_FLOATS = tuple(n for n, d in DTYPE_TABLE.items() if d.is_float and d.compute)  # float16 bfloat16


def dtype(name: str) -> DType:
    try:
        return DTYPE_TABLE[name]
    except KeyError:
        raise ValueError(f"unknown dtype {name!r}; known: {', '.join(DTYPE_TABLE)}") from None


def itemsize(name: str) -> int:
    return dtype(name).itemsize


def c_type(name: str) -> str:
    return dtype(name).c_type


def np_dtype(name: str) -> type:
    return dtype(name).np_dtype


def compute_dtype(name: str) -> str:
    """The dtype arithmetic on `name` values runs in (int32 for narrow ints, float32 for 16-bit floats)."""
    return dtype(name).compute or name


# name -> value views, for the code that indexes a dict by dtype name
ITEMSIZE = {n: d.itemsize for n, d in DTYPE_TABLE.items()}
C_TYPE = {n: d.c_type for n, d in DTYPE_TABLE.items()}
NP_DTYPE = {n: d.np_dtype for n, d in DTYPE_TABLE.items()}

__all__ = ["DType", "DTYPE_TABLE", "dtype", "itemsize", "c_type", "np_dtype", "compute_dtype", "ITEMSIZE",
           "C_TYPE", "NP_DTYPE", "NARROW_INTS", "STORAGE_FLOATS"]
