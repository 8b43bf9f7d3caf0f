"""The one table of element types: per dtype name, its size in bytes, its C type and its numpy dtype.

Codegen, the builder's drivers, the evaluator, the runner and the cost-model features all read it, so that a
dtype cannot mean different things in different places. bool is one byte: `uint8_t` in C, numpy's `bool_`
(also one byte, 0 or 1) in Python.
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

    @property
    def is_float(self) -> bool:
        return self.name.startswith("float")


DTYPE_TABLE = {d.name: d for d in (
    DType("float32", 4, "float", np.float32),
    DType("float64", 8, "double", np.float64),
    DType("int32", 4, "int32_t", np.int32),
    DType("int64", 8, "int64_t", np.int64),
    DType("bool", 1, "uint8_t", np.bool_),
)}


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


# name -> value views, for the code that indexes a dict by dtype name
ITEMSIZE = {n: d.itemsize for n, d in DTYPE_TABLE.items()}
C_TYPE = {n: d.c_type for n, d in DTYPE_TABLE.items()}
NP_DTYPE = {n: d.np_dtype for n, d in DTYPE_TABLE.items()}

__all__ = ["DType", "DTYPE_TABLE", "dtype", "itemsize", "c_type", "np_dtype", "ITEMSIZE", "C_TYPE", "NP_DTYPE"]
