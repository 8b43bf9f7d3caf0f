"""A GPU program rendered as C for the CPU, to check its index arithmetic without a GPU.

Each kernel's blocks run one after another; the threads of a block run as an OpenMP team of exactly the block's
size, so shared arrays (declared once per block, outside the parallel region) are shared, local arrays are
private, and a barrier is `#pragma omp barrier`: the emulation keeps CUDA's semantics, including the need for
every barrier, and runs the same lowered program the CUDA renderer prints (after the same GPU passes).
"""
from __future__ import annotations

from .ir_passes import check_kernel, gpu_passes, split_kernels
from ...ir.program.expr import Binary, Var
from ...ir.lowering.stmt import Allocate, Barrier, For, PrimFunc, Stmt, ThreadReduce, walk_stmt
from ...codegen.c import C_TYPE, CRenderer
from .codegen_target import CudaTarget
from ...codegen.source import ArgSpec, Source


# how an emulated program is built: OpenMP teams stand for blocks, -O1 is enough to check index arithmetic
EMULATION_FLAGS = ("-O1", "-fopenmp", "-shared", "-fPIC", "-std=c99")


class EmulationRenderer(CRenderer):
    def __init__(self, func: PrimFunc, blocks: dict):
        super().__init__(func, "generic")
        self.blocks = blocks       # kernel loop var -> GpuKernel

    def stmt(self, s: Stmt, ind: int):
        if isinstance(s, For) and s.kind == "blockIdx.x":
            self.block_loop(s, ind)
        elif isinstance(s, For) and s.kind == "threadIdx.x":
            self.emit("{", ind)
            self.emit(f"const int32_t {s.var} = (int32_t)omp_get_thread_num();", ind + 1)
            self.emit(f"if ({s.var} < {s.extent}) {{", ind + 1)
            self.bounds[s.var] = (0, s.extent - 1)
            self.stmt(s.body, ind + 2)
            del self.bounds[s.var]
            self.emit("}", ind + 1)
            self.emit("}", ind)
        elif isinstance(s, For) and s.kind in ("unroll", "vectorize", "vthread"):
            super().stmt(For(s.var, s.extent, "serial", s.body), ind)
        elif isinstance(s, Barrier):
            self.emit("#pragma omp barrier", ind)
        elif isinstance(s, ThreadReduce):
            self.thread_reduce(s, ind)
        elif isinstance(s, Allocate) and s.buffer.scope == "shared":
            self.buffers[s.buffer.name] = s.buffer
            self.stmt(s.body, ind)
        else:
            super().stmt(s, ind)

    def thread_reduce(self, s: ThreadReduce, ind: int):
        """Every thread's value into a block-wide array; thread 0 combines them in thread order."""
        op = {"sum": "+"}.get(s.combiner, s.combiner)
        comb = self.expr(Binary(op, Var(f"{s.buffer}[0]"), Var(f"ansorc_red_{s.buffer}[ansorc_t]"), s.dtype))
        self.emit(f"ansorc_red_{s.buffer}[omp_get_thread_num()] = {s.buffer}[0];", ind)
        self.emit("#pragma omp barrier", ind)
        self.emit("if (omp_get_thread_num() == 0) {", ind)
        self.emit(f"  for (int ansorc_t = 1; ansorc_t < {s.extent}; ++ansorc_t) {s.buffer}[0] = {comb};", ind)
        self.emit("}", ind)
        self.emit("#pragma omp barrier", ind)

    def block_loop(self, s: For, ind: int):
        k = self.blocks[s.var]
        self.emit(f"for (int32_t {s.var} = 0; {s.var} < {s.extent}; ++{s.var}) {{", ind)
        for b in k.shared:
            self.emit(f"{C_TYPE[b.dtype]} {b.name}[{b.size}];", ind + 1)
        for r in (x for x in walk_stmt(s) if isinstance(x, ThreadReduce)):
            self.emit(f"{C_TYPE[r.dtype]} ansorc_red_{r.buffer}[{r.extent}];", ind + 1)
        self.emit(f"#pragma omp parallel num_threads({k.block})", ind + 1)
        self.emit("{", ind + 1)
        self.bounds[s.var] = (0, s.extent - 1)
        self.stmt(s.body, ind + 2)
        del self.bounds[s.var]
        self.emit("}", ind + 1)
        self.emit("}", ind)

    def render_parts(self) -> list:
        return [("helper", "#include <omp.h>"), *super().render_parts()]


def codegen_gpu_emulation(func: PrimFunc, target: CudaTarget | None = None) -> Source:
    """C source (the usual kernel ABI) that runs the GPU program `func` on the CPU."""
    target = target or CudaTarget.from_name("cuda")
    func = gpu_passes(func)
    kernels, _ = split_kernels(func)
    for k in kernels:
        check_kernel(k, target)
    renderer = EmulationRenderer(func, {k.body.var: k for k in kernels})
    args = tuple(ArgSpec(b.name, tuple(b.shape), b.dtype, i >= func.n_inputs) for i, b in enumerate(func.args))
    return Source.from_parts(renderer.render_parts(), func.name, args, "c", statuses=renderer.statuses())


__all__ = ["codegen_gpu_emulation", "EMULATION_FLAGS"]
