"""The contract between codegen and measurement: a generated program's text and its signature.

Every generated C source defines two functions:
    int ENTRY(const float* restrict A, ..., float* restrict OUT, ...);   /* inputs then outputs */
    int ENTRY_packed(void** args);                                         /* same, args[i] = pointer i */
Both return 0 on success and non-zero if a workspace allocation failed. Arrays are dense, row-major.
A kernel with constant inputs (ComputeDAG.constants) that computes something from them alone keeps it between
calls, made again when a constant input's address or sampled words change, and also defines
    void ENTRY_constants_changed(void);   /* a constant input's values changed in place: make the copies again */

A CUDA source (lang "cuda") holds one or more `extern "C" __global__` kernels, described by `launches`, plus
an `extern "C"` host launcher ENTRY(inputs..., outputs..., cudaStream_t stream) for exported libraries. The
measurement runner ignores the launcher: it loads the cubin and replays `launches` itself, with device buffers
for args and workspaces.
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
class Launch:
    """One CUDA kernel launch of a program: which __global__ function, its grid and block, its arguments."""
    kernel: str          # the __global__ function's name in Source.code
    grid: tuple          # (x, y, z) blocks
    block: tuple         # (x, y, z) threads per block
    args: tuple          # indices into Source.args + Source.workspaces (args first), in parameter order
    shared_bytes: int = 0   # dynamic shared memory; static __shared__ arrays are not counted here


@dataclass(frozen=True)
class Workspace:
    """A global intermediate buffer of a CUDA program (a root stage that is neither input nor output)."""
    name: str
    dtype: str
    size: int            # elements


def join_parts(parts) -> str:
    """The code of (kind, text) parts."""
    return "\n".join(text for _, text in parts)


@dataclass(frozen=True)
class Source:
    code: str        # complete C (or CUDA) translation unit
    entry: str       # the kernel's function name; ENTRY_packed is the packed wrapper (C); the host launcher (CUDA)
    args: tuple      # ArgSpec, inputs first then outputs, in call order
    lang: str = "c"  # "c" | "cuda"
    launches: tuple = ()     # CUDA: Launch, in order; every launch runs on one stream
    workspaces: tuple = ()   # CUDA: Workspace, allocated by the caller (runner) or the host launcher
    prepared: bool = False   # C: keeps copies made from constant inputs; defines void ENTRY_constants_changed(void)
    # the text of `code` as data, in order: (kind, text) pairs whose newline-join is `code`. C: codegen.c's
    # render_parts; CUDA: "prelude", "helper", one "kernel" per launch (in launch order), "launcher". A network
    # library assembles kernels from them without parsing the code.
    parts: tuple = ()
    statuses: tuple = ()     # (code, meaning) of each status the entry may return beyond codegen.c's STATUS_ALLOC

    @classmethod
    def from_parts(cls, parts, entry: str, args: tuple, lang: str = "c", **fields) -> "Source":
        """A Source whose code is its parts joined by newlines (the invariant `parts` promises)."""
        parts = tuple(parts)
        return cls(join_parts(parts), entry, args, lang, parts=parts, **fields)

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
