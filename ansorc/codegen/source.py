"""The contract between codegen and measurement: a generated program's text and its signature.

Every generated C source defines two functions:
    int ENTRY(const float* restrict A, ..., float* restrict OUT, ...);   /* inputs then outputs */
    int ENTRY_packed(void** args);                                         /* same, args[i] = pointer i */
Both return 0 on success and non-zero if a workspace allocation failed. Arrays are dense, row-major.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass


@dataclass(frozen=True)
class ArgSpec:
    name: str        # sanitized C identifier
    shape: tuple     # tuple of ints
    dtype: str       # "float32" | "float64" | "int32" | "int64"
    is_output: bool

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n


@dataclass(frozen=True)
class Source:
    code: str        # complete C (or CUDA) translation unit
    entry: str       # the kernel's function name; ENTRY_packed is the packed wrapper
    args: tuple      # ArgSpec, inputs first then outputs, in call order
    lang: str = "c"  # "c" | "cuda"

    @property
    def key(self) -> str:
        """Content hash used to cache builds."""
        return hashlib.sha256((self.lang + "\0" + self.code).encode()).hexdigest()[:24]

    @property
    def inputs(self) -> tuple:
        return tuple(a for a in self.args if not a.is_output)

    @property
    def outputs(self) -> tuple:
        return tuple(a for a in self.args if a.is_output)
