"""The lowered program: a tree of loops, allocations, guarded stores. The only contract between
the search and codegen."""
from __future__ import annotations

from dataclasses import dataclass

from ..program.expr import Expr


@dataclass(frozen=True)
class Buffer:
    name: str       # C identifier
    shape: tuple
    dtype: str
    scope: str      # "arg" (kernel argument) | "global" (workspace) | "local" (inside a loop body) | "prepared"
                    # (computed from constant inputs, kept between calls: ir/lowering/prepared.py)
    row_pad: int = 0    # elements stored after each innermost row, never read or written (ir/lowering/layout.py)

    @property
    def storage(self) -> tuple:
        """The shape as laid out in memory: `shape` with each innermost row `row_pad` elements longer. Flat
        indices are taken over this shape; bounds over `shape`."""
        if not self.row_pad:
            return tuple(self.shape)
        return (*self.shape[:-1], self.shape[-1] + self.row_pad)

    @property
    def size(self) -> int:
        """Elements allocated (the storage's)."""
        n = 1
        for s in self.storage:
            n *= s
        return n


class Stmt:
    pass


# Loop kinds bound to the GPU's thread hierarchy: the loop is not a loop but the block/thread index (vthread:
# a virtual thread, run as a serial loop inside each thread).
THREAD_KINDS = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z", "vthread")


@dataclass(frozen=True)
class For(Stmt):
    var: str
    extent: int
    kind: str         # serial | parallel | vectorize | unroll | one of THREAD_KINDS
    body: Stmt
    auto_unroll: int = 0   # auto_unroll_max_step pragma of the stage whose outermost loop this is


@dataclass(frozen=True)
class Seq(Stmt):
    stmts: tuple


@dataclass(frozen=True)
class Store(Stmt):
    buffer: str
    indices: tuple
    value: Expr


@dataclass(frozen=True)
class IfThenElse(Stmt):
    cond: Expr
    then: Stmt
    skip: bool = False   # only skips work that changes nothing (ir/passes/skip.py): the accesses inside are in range
    prepare: bool = False   # a prepared stage's nest, run when its kept copy is stale (ir/lowering/prepared.py)
    version: bool = False   # one of two versions of the same work, the other under the negated condition: every
    #                         access inside is made by both, but for loads the other one masks (ir/passes/masks.py)


@dataclass(frozen=True)
class Allocate(Stmt):
    buffer: Buffer
    body: Stmt


@dataclass(frozen=True)
class Barrier(Stmt):
    """All threads of a GPU block wait here (__syncthreads): around the writes of a shared-memory stage."""


@dataclass(frozen=True)
class ThreadReduce(Stmt):
    """Cross-thread reduction: every thread of the block holds a partial value in buffer[0]; afterwards thread 0
    holds their combination. All threads of the block reach it (like a barrier); `extent` threads take part."""
    buffer: str
    combiner: str     # sum | max | min
    dtype: str
    extent: int


@dataclass(frozen=True)
class PrimFunc:
    name: str
    args: tuple        # Buffer (scope "arg"), inputs then outputs
    n_inputs: int
    body: Stmt
    stream: tuple = ()   # names of output buffers whose vector stores bypass the caches (pragma store_stream)
    constants: tuple = ()   # names of the input buffers declared constant (ComputeDAG.constants)
    prepared: tuple = ()    # (buffer, stale flag) of each prepared stage (ir/lowering/prepared.py), in computing order
    ranges: tuple = ()      # parallel loops dealt out in ranges unless skips make them uneven (parallel_ranges)
    prefetch: tuple = ()    # (loop, distance): its input vector loads prefetch `distance` iterations ahead


def seq(*stmts) -> Stmt:
    flat = []
    for s in stmts:
        if s is None:
            continue
        flat.extend(s.stmts if isinstance(s, Seq) else [s])
    return flat[0] if len(flat) == 1 else Seq(tuple(flat))


def stmt_children(s: Stmt) -> tuple:
    if isinstance(s, (For, Allocate)):
        return (s.body,)
    if isinstance(s, IfThenElse):
        return (s.then,)
    if isinstance(s, Seq):
        return s.stmts
    return ()


def store_executions(s: Stmt, vector_once: bool = False) -> int:
    """Store executions in s (the "steps" that auto_unroll_max_step and skip guards count); with vector_once a
    vector loop counts once, as the one instruction per lane group it becomes."""
    if isinstance(s, For):
        return (1 if vector_once and s.kind == "vectorize" else s.extent) * store_executions(s.body, vector_once)
    if isinstance(s, Store):
        return 1
    return sum(store_executions(c, vector_once) for c in stmt_children(s))


def walk_stmt(s: Stmt):
    """Pre-order. Iterative: nested generators would cost O(depth) per node, and a chain of n tensors nests its
    buffer scopes n deep."""
    stack = [s]
    while stack:
        s = stack.pop()
        yield s
        stack.extend(reversed(stmt_children(s)))


def format_stmt(s: Stmt, indent: int = 0) -> str:
    pad = "  " * indent
    if isinstance(s, For):
        extra = f" auto_unroll={s.auto_unroll}" if s.auto_unroll else ""
        return f"{pad}{s.kind} {s.var} in [0, {s.extent}){extra}:\n" + format_stmt(s.body, indent + 1)
    if isinstance(s, Seq):
        return "\n".join(format_stmt(c, indent) for c in s.stmts)
    if isinstance(s, Store):
        return f"{pad}{s.buffer}[{', '.join(map(repr, s.indices))}] = {s.value!r}"
    if isinstance(s, IfThenElse):
        return f"{pad}if {s.cond!r}:\n" + format_stmt(s.then, indent + 1)
    if isinstance(s, Allocate):
        b = s.buffer
        rows = f" rows+{b.row_pad}" if b.row_pad else ""
        return f"{pad}allocate {b.name}{list(b.shape)}{rows} {b.dtype} {b.scope}\n" + format_stmt(s.body, indent)
    if isinstance(s, Barrier):
        return f"{pad}barrier"
    if isinstance(s, ThreadReduce):
        return f"{pad}{s.buffer}[0] = {s.combiner} over {s.extent} threads"
    return f"{pad}{s!r}"
