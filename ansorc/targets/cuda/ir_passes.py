"""Passes for GPU programs, and the split of a lowered GPU program into kernels.

A GPU program is lowered like any other (lower.py); its root stages' outer loops are bound to blockIdx,
vthread and threadIdx. Here: auto-unroll becomes `#pragma unroll` marks (nvcc unrolls; replicating the body in
the IR would only make nvcc slower), then the program is cut into one kernel per root stage, and each kernel is
checked against the device limits (an invalid program is dropped before it is built, as Ansor does).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ...ir.program.expr import Const, Read, Var, free_vars, transform
from ...ir.program.expr import substitute as substitute_expr
from ...ir.passes.basic import map_stmt_exprs, run_passes, simplify_stmt, verify_structure
from ...ir.schedule.state import ScheduleError
from ...ir.lowering.stmt import (Allocate, Barrier, Buffer, For, IfThenElse, PrimFunc, Seq, Stmt, Store, ThreadReduce,
                                 seq, walk_stmt)

MAX_LOCAL_ELEMS = 1024   # per-thread local arrays beyond this spill to local memory: not worth building
# A loop that indexes a per-thread array is unrolled up to this many statement executions even without an
# unroll pragma: registers need constant indices, and one variable index sends the whole array to local memory.
LOCAL_UNROLL_STEPS = 256
THREAD = ("threadIdx.x",)
THREAD_LOOPS = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z")


@dataclass(frozen=True)
class GpuKernel:
    name: str
    body: Stmt                 # the stage's loop nest, outermost loop bound to blockIdx.x
    grid: int
    block: int
    shared: tuple              # Buffer, scope shared: declared once at the top of the kernel
    local_elems: int           # elements of per-thread local arrays


def _thread_steps(s: Stmt) -> int:
    """Store executions of s in one thread: loops bound to block and thread indices count once."""
    if isinstance(s, For):
        return (1 if s.kind in THREAD_LOOPS else s.extent) * _thread_steps(s.body)
    if isinstance(s, Seq):
        return sum(_thread_steps(c) for c in s.stmts)
    if isinstance(s, (IfThenElse, Allocate)):
        return _thread_steps(s.then if isinstance(s, IfThenElse) else s.body)
    return 1 if isinstance(s, Store) else 0


def _local_names(func: PrimFunc) -> set:
    return {s.buffer.name for s in walk_stmt(func.body) if isinstance(s, Allocate) and s.buffer.scope == "local"}


def _touches(s: Stmt, names: set) -> bool:
    for x in walk_stmt(s):
        if isinstance(x, Store) and (x.buffer in names or any(r.name in names for r in _reads(x.value))):
            return True
    return False


def _reads(e):
    from ...ir.program.expr import walk
    return [n for n in walk(e) if isinstance(n, Read)]


def mark_unroll(func: PrimFunc) -> PrimFunc:
    """Serial loops within their stage's auto_unroll_max_step (in one thread's store executions) become 'unroll'
    loops, and so do small loops over a per-thread array (LOCAL_UNROLL_STEPS)."""
    local = _local_names(func)

    def visit(s: Stmt, max_step: int) -> Stmt:
        if isinstance(s, For):
            ms = s.auto_unroll or max_step
            f = replace(s, body=visit(s.body, ms), auto_unroll=0)
            steps = _thread_steps(f)
            if f.kind == "serial" and ((ms and steps <= ms) or (steps <= LOCAL_UNROLL_STEPS and _touches(f, local))):
                return replace(f, kind="unroll")
            return f
        if isinstance(s, Seq):
            return Seq(tuple(visit(c, max_step) for c in s.stmts))
        if isinstance(s, IfThenElse):
            return replace(s, then=visit(s.then, max_step))
        if isinstance(s, Allocate):
            return Allocate(s.buffer, visit(s.body, max_step))
        return s
    return replace(func, body=visit(func.body, 0))


def drop_unit_loops(func: PrimFunc) -> PrimFunc:
    """Serial loops of extent 1 (tile levels that a thread-level attach point leaves empty) disappear."""
    def visit(s: Stmt) -> Stmt:
        if isinstance(s, For):
            body = visit(s.body)
            if s.extent == 1 and s.kind in ("serial", "unroll", "vectorize"):
                zero = {s.var: Const(0, "int32")}
                return map_stmt_exprs(body, lambda e, b: substitute_expr(e, zero), {})
            return replace(s, body=body)
        if isinstance(s, Seq):
            return seq(*[visit(c) for c in s.stmts])
        if isinstance(s, IfThenElse):
            return replace(s, then=visit(s.then))
        if isinstance(s, Allocate):
            return Allocate(s.buffer, visit(s.body))
        return s
    return replace(func, body=visit(func.body))


def _uses(s: Stmt, var: str) -> bool:
    for x in walk_stmt(s):
        if isinstance(x, Store) and (any(var in free_vars(i) for i in x.indices) or var in free_vars(x.value)):
            return True
        if isinstance(x, IfThenElse) and var in free_vars(x.cond):
            return True
    return False


def _has_barrier(s: Stmt) -> bool:
    return any(isinstance(x, (Barrier, ThreadReduce)) for x in walk_stmt(s))


def _expand_buffer(s: Stmt, buf: Buffer, var: str, n: int) -> tuple:
    """Give a per-thread buffer one copy per virtual thread: a leading dimension indexed by `var`."""
    big = replace(buf, shape=(n, *buf.shape))
    v = Var(var)

    def fix_reads(e):
        return transform(e, lambda r: Read(r.name, (v, *r.indices), r.dtype)
                         if isinstance(r, Read) and r.name == buf.name else None)

    def visit(x: Stmt) -> Stmt:
        if isinstance(x, Store):
            idx = (v, *x.indices) if x.buffer == buf.name else x.indices
            return Store(x.buffer, tuple(fix_reads(i) for i in idx), fix_reads(x.value))
        if isinstance(x, For):
            return replace(x, body=visit(x.body))
        if isinstance(x, Seq):
            return seq(*[visit(c) for c in x.stmts])
        if isinstance(x, IfThenElse):
            return replace(x, cond=fix_reads(x.cond), then=visit(x.then))
        if isinstance(x, Allocate):
            return Allocate(x.buffer, visit(x.body))
        return x
    return big, visit(s)


def _push_vthread(s: Stmt, var: str, n: int) -> Stmt:
    """The vthread loop moved down to every statement that uses it (as TVM's virtual-thread injection does):
    work shared by the virtual threads (a shared-memory fetch) runs once per thread, and the innermost
    unrolled copies let the compiler reuse each operand loaded from shared memory across virtual threads."""
    if not _uses(s, var):
        return s
    if isinstance(s, (Store, IfThenElse)):
        if _has_barrier(s):
            raise ScheduleError("a barrier under a condition that depends on a virtual thread")
        return For(var, n, "unroll", s)
    if isinstance(s, For):
        return replace(s, body=_push_vthread(s.body, var, n))
    if isinstance(s, Seq):
        return seq(*[_push_vthread(c, var, n) for c in s.stmts])
    if isinstance(s, Allocate) and s.buffer.scope == "local":
        buf, body = _expand_buffer(s.body, s.buffer, var, n)
        return Allocate(buf, _push_vthread(body, var, n))
    if isinstance(s, Allocate):
        return Allocate(s.buffer, _push_vthread(s.body, var, n))
    return For(var, n, "unroll", s)


def inject_virtual_threads(func: PrimFunc) -> PrimFunc:
    def visit(s: Stmt) -> Stmt:
        if isinstance(s, For) and s.kind == "vthread":
            return _push_vthread(visit(s.body), s.var, s.extent)
        if isinstance(s, For):
            return replace(s, body=visit(s.body))
        if isinstance(s, Seq):
            return seq(*[visit(c) for c in s.stmts])
        if isinstance(s, Allocate):
            return Allocate(s.buffer, visit(s.body))
        if isinstance(s, IfThenElse):
            return replace(s, then=visit(s.then))
        return s
    return replace(func, body=visit(func.body))


def gpu_passes(func: PrimFunc) -> PrimFunc:
    """The pass list of a GPU program, on `lower(state, name, passes=False)`'s output."""
    return run_passes(func, GPU_PASSES)


# verify_structure always; with ANSORC_VERIFY=1 every check of ir/passes/verify.py after every pass
GPU_PASSES = (verify_structure, mark_unroll, drop_unit_loops, inject_virtual_threads, simplify_stmt)


def split_kernels(func: PrimFunc) -> tuple[list, list]:
    """(kernels, workspaces): one GpuKernel per root loop nest; global intermediates become workspaces."""
    body, workspaces = func.body, []
    while isinstance(body, Allocate):
        if body.buffer.scope != "global":
            raise ScheduleError(f"buffer {body.buffer.name!r} ({body.buffer.scope}) outside every kernel")
        workspaces.append(body.buffer)
        body = body.body
    nests = body.stmts if isinstance(body, Seq) else (body,)
    kernels = [_kernel(f"{func.name}_k{i}", s) for i, s in enumerate(nests)]
    return kernels, workspaces


def _kernel(name: str, nest: Stmt) -> GpuKernel:
    if not (isinstance(nest, For) and nest.kind == "blockIdx.x"):
        raise ScheduleError(f"kernel {name}: its outermost loop is not bound to blockIdx.x")
    threads = [s.extent for s in walk_stmt(nest.body) if isinstance(s, For) and s.kind in THREAD]
    if not threads:
        raise ScheduleError(f"kernel {name}: no loop is bound to threadIdx.x")
    shared = tuple(s.buffer for s in walk_stmt(nest) if isinstance(s, Allocate) and s.buffer.scope == "shared")
    local = sum(s.buffer.size for s in walk_stmt(nest) if isinstance(s, Allocate) and s.buffer.scope == "local")
    return GpuKernel(name, nest, nest.extent, max(threads), shared, local)


def check_kernel(k: GpuKernel, target) -> None:
    """Raise ScheduleError when the kernel breaks a device limit or a rule of CUDA's execution model."""
    if k.block > target.max_threads_per_block:
        raise ScheduleError(f"kernel {k.name}: {k.block} threads per block > {target.max_threads_per_block}")
    smem = shared_bytes(k.shared)
    if smem > target.max_shared_bytes:
        raise ScheduleError(f"kernel {k.name}: {smem} bytes of shared memory > {target.max_shared_bytes}")
    if k.local_elems > MAX_LOCAL_ELEMS:
        raise ScheduleError(f"kernel {k.name}: {k.local_elems} local elements per thread > {MAX_LOCAL_ELEMS}")
    _check_nest(k, k.body.body, in_thread=False, uniform=True)


def _check_nest(k: GpuKernel, s: Stmt, in_thread: bool, uniform: bool) -> None:
    if isinstance(s, For):
        if s.kind.startswith("blockIdx"):
            raise ScheduleError(f"kernel {k.name}: nested blockIdx loop {s.var}")
        if s.kind == "vthread" and s.extent > 8:
            raise ScheduleError(f"kernel {k.name}: vthread extent {s.extent} > 8")
        if s.kind in THREAD:
            uniform = uniform and s.extent == k.block
            in_thread = True
        _check_nest(k, s.body, in_thread, uniform)
    elif isinstance(s, Seq):
        for c in s.stmts:
            _check_nest(k, c, in_thread, uniform)
    elif isinstance(s, IfThenElse):
        _check_nest(k, s.then, in_thread, False)
    elif isinstance(s, Allocate):
        _check_nest(k, s.body, in_thread, uniform)
    elif isinstance(s, (Barrier, ThreadReduce)) and not uniform:
        raise ScheduleError(f"kernel {k.name}: a barrier that not every thread of the block reaches")
    elif isinstance(s, ThreadReduce) and (s.extent != k.block or k.block % 32):
        raise ScheduleError(f"kernel {k.name}: a cross-thread reduction over {s.extent} of {k.block} threads "
                            "(it needs the whole block, in whole warps)")
    elif isinstance(s, Store) and not in_thread:
        raise ScheduleError(f"kernel {k.name}: store to {s.buffer} outside every threadIdx loop")


def shared_bytes(buffers) -> int:
    return sum(b.size * (8 if b.dtype in ("float64", "int64") else 4) for b in buffers)


__all__ = ["GpuKernel", "gpu_passes", "split_kernels", "check_kernel", "mark_unroll", "Buffer"]
