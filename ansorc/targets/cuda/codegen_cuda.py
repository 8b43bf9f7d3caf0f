"""CUDA renderer: a lowered GPU program -> one .cu translation unit (Source with lang "cuda").

The program is cut into kernels (ir/gpu_passes.split_kernels), one per root stage. Each becomes an
`extern "C" __global__` function taking every buffer (inputs, outputs, workspaces); loops bound to blockIdx.x
and threadIdx.x become the built-in indices, vthread loops stay serial loops inside each thread, shared stages
are `__shared__` arrays declared once per kernel, and barriers are `__syncthreads()`. A host launcher ENTRY(...,
cudaStream_t) allocates workspaces and launches the kernels in order, for exported libraries; the measurement
runner launches the kernels itself from `Source.launches`. Expressions render exactly as in C (c.py).
"""
from __future__ import annotations

from .ir_passes import check_kernel, gpu_passes, split_kernels
from ...ir.program.expr import Binary, CheckedIndex, Var
from ...ir.lowering.stmt import Allocate, Barrier, For, PrimFunc, Stmt, ThreadReduce
from ...ir.program.te import _identity
from ...codegen import lowp
from ...codegen.c import C_TYPE, PRELUDE, CRenderer
from .codegen_target import CudaTarget
from ...codegen.source import ArgSpec, Launch, Source, Workspace

# The C prelude's helpers as device functions (from its first #include on; the host-only allocator dropped).
CUDA_PRELUDE = "\n".join(line.replace("static inline", "static __device__ __forceinline__")
                         for line in PRELUDE[PRELUDE.index("#include <stdint.h>"):].splitlines()
                         if "ansorc_alloc" not in line)
# only in programs with a checked index (ir/expr.CheckedIndex): a kernel returns no status, so it only clamps
CLAMP_PRELUDE = ("static __device__ __forceinline__ int32_t ansorc_clamp_index(int64_t v, int32_t n) "
                 "{ return v < 0 ? 0 : v >= n ? n - 1 : (int32_t)v; }")


class CudaRenderer(CRenderer):
    """Renders one kernel's loop nest; statements other than loops, barriers and buffers render as C."""

    def __init__(self, func: PrimFunc, block: int):
        super().__init__(func, "generic")
        self.block = block

    def checked_index(self, e: CheckedIndex) -> str:
        # a kernel has no status to return: an out-of-range index is clamped (memory safe) but not reported
        return f"ansorc_clamp_index({self.expr(e.value)}, {e.extent})"

    def stmt(self, s: Stmt, ind: int):
        if isinstance(s, For) and s.kind == "blockIdx.x":
            self.bind(s, "blockIdx.x", ind)
        elif isinstance(s, For) and s.kind == "threadIdx.x":
            if s.extent < self.block:
                self.emit(f"if (threadIdx.x < {s.extent}) {{", ind)
                self.bind(s, "threadIdx.x", ind + 1)
                self.emit("}", ind)
            else:
                self.bind(s, "threadIdx.x", ind)
        elif isinstance(s, For) and s.kind in ("unroll", "vectorize"):
            self.emit("#pragma unroll", ind)
            self.loop(s, ind)
        elif isinstance(s, For):
            self.loop(s, ind)
        elif isinstance(s, Barrier):
            self.emit("__syncthreads();", ind)
        elif isinstance(s, ThreadReduce):
            self.thread_reduce(s, ind)
        elif isinstance(s, Allocate):
            self.buffers[s.buffer.name] = s.buffer
            if s.buffer.scope == "local":
                self.emit(f"{C_TYPE[s.buffer.dtype]} {s.buffer.name}[{s.buffer.size}];", ind)
            elif s.buffer.scope != "shared":   # shared arrays are declared at the top of the kernel
                raise NotImplementedError(f"{s.buffer.scope} buffer {s.buffer.name} inside a kernel")
            self.stmt(s.body, ind)
        else:
            super().stmt(s, ind)

    def thread_reduce(self, s: ThreadReduce, ind: int):
        """Warp shuffles, then (more than one warp) the warps' results through shared memory and a second round
        in warp 0; thread 0 ends with the block's result in buffer[0]."""
        ctype = C_TYPE[s.dtype]
        op = {"sum": "+"}.get(s.combiner, s.combiner)
        comb = self.expr(Binary(op, Var("ansorc_v"), Var("ansorc_o"), s.dtype))
        ident = self.expr(_identity(s.combiner, s.dtype))
        shuffle = ["for (int ansorc_d = 16; ansorc_d > 0; ansorc_d >>= 1) {",
                   f"  {ctype} ansorc_o = __shfl_down_sync(0xffffffffu, ansorc_v, ansorc_d);",
                   f"  ansorc_v = {comb};", "}"]
        self.emit("{", ind)
        self.emit(f"{ctype} ansorc_v = {s.buffer}[0];", ind + 1)
        for line in shuffle:
            self.emit(line, ind + 1)
        if s.extent > 32:
            self.emit(f"__shared__ {ctype} ansorc_warps[32];", ind + 1)
            self.emit("if ((threadIdx.x & 31) == 0) ansorc_warps[threadIdx.x >> 5] = ansorc_v;", ind + 1)
            self.emit("__syncthreads();", ind + 1)
            self.emit(f"ansorc_v = threadIdx.x < {s.extent // 32} ? ansorc_warps[threadIdx.x] : {ident};", ind + 1)
            self.emit("if (threadIdx.x < 32) {", ind + 1)
            for line in shuffle:
                self.emit(line, ind + 2)
            self.emit("}", ind + 1)
            self.emit("__syncthreads();", ind + 1)
        self.emit(f"{s.buffer}[0] = ansorc_v;", ind + 1)
        self.emit("}", ind)

    def bind(self, s: For, index: str, ind: int):
        self.emit("{", ind)
        self.emit(f"const int32_t {s.var} = (int32_t){index};", ind + 1)
        self.bounds[s.var] = (0, s.extent - 1)
        self.stmt(s.body, ind + 1)
        del self.bounds[s.var]
        self.emit("}", ind)

    def loop(self, s: For, ind: int):
        self.emit(f"for (int32_t {s.var} = 0; {s.var} < {s.extent}; ++{s.var}) {{", ind)
        self.bounds[s.var] = (0, s.extent - 1)
        self.stmt(s.body, ind + 1)
        del self.bounds[s.var]
        self.emit("}", ind)


def _params(func: PrimFunc, workspaces: list) -> str:
    out = []
    for k, b in enumerate(func.args):
        const = "const " if k < func.n_inputs else ""
        out.append(f"{const}{C_TYPE[b.dtype]}* __restrict__ {b.name}")
    out += [f"{C_TYPE[b.dtype]}* __restrict__ {b.name}" for b in workspaces]
    return ", ".join(out)


def _render_kernel(func: PrimFunc, k, workspaces: list) -> list:
    r = CudaRenderer(func, k.block)
    for b in workspaces:
        r.buffers[b.name] = b
    lines = [f'extern "C" __global__ void __launch_bounds__({k.block}) {k.name}({_params(func, workspaces)}) {{']
    for b in k.shared:
        r.buffers[b.name] = b
        lines.append(f"  __shared__ __align__(16) {C_TYPE[b.dtype]} {b.name}[{b.size}];")
    r.stmt(k.body, 1)
    return lines + r.lines + ["}", ""]


def _host_launcher(func: PrimFunc, kernels: list, workspaces: list) -> list:
    params = [f"{'const ' if i < func.n_inputs else ''}{C_TYPE[b.dtype]}* {b.name}" for i, b in enumerate(func.args)]
    names = ", ".join([b.name for b in func.args] + [b.name for b in workspaces])
    # the stream as void*: the C header then needs no CUDA header (a cudaStream_t is a pointer)
    lines = [f'extern "C" int {func.name}({", ".join(params + ["void* stream_arg"])}) {{',
             "  cudaStream_t stream = (cudaStream_t)stream_arg;"]
    for b in workspaces:
        lines.append(f"  {C_TYPE[b.dtype]}* {b.name} = NULL;")
        lines.append(f"  if (cudaMallocAsync((void**)&{b.name}, {b.size}ull * sizeof({C_TYPE[b.dtype]}), stream) "
                     f"!= cudaSuccess) return 1;")
    for k in kernels:
        lines.append(f"  {k.name}<<<{k.grid}, {k.block}, 0, stream>>>({names});")
    for b in workspaces:
        lines.append(f"  cudaFreeAsync({b.name}, stream);")
    lines += ["  return (int)cudaGetLastError();", "}", ""]
    return lines


def codegen_cuda(func: PrimFunc, target: CudaTarget | None = None) -> Source:
    """Render CUDA for a lowered GPU program; ScheduleError when it breaks a device limit."""
    return emit_cuda(gpu_passes(func), target or CudaTarget.from_name("cuda"))


def emit_cuda(func: PrimFunc, target: CudaTarget) -> Source:
    """The .cu translation unit of a program whose GPU passes have all run (the CUDA pipeline's last stage)."""
    if func.prepared:
        raise NotImplementedError(f"{func.name}: constant inputs (prepared stages) are not supported on CUDA yet")
    kernels, workspaces = split_kernels(func)
    for k in kernels:
        check_kernel(k, target)
    bodies = ["\n".join(_render_kernel(func, k, workspaces)) for k in kernels]
    if any(lowp.uses_prelude(b) for b in bodies):   # its helpers are host C (no __device__)
        raise NotImplementedError(f"{func.name}: float16, bfloat16 and saturating casts are not supported on CUDA yet")
    helpers = [CLAMP_PRELUDE] if any("ansorc_clamp_index(" in b for b in bodies) else []
    parts = (("prelude", CUDA_PRELUDE), *(("helper", h) for h in helpers), *(("kernel", b) for b in bodies),
             ("launcher", "\n".join(_host_launcher(func, kernels, workspaces))))
    args = tuple(ArgSpec(b.name, tuple(b.shape), b.dtype, i >= func.n_inputs) for i, b in enumerate(func.args))
    n = len(args) + len(workspaces)
    launches = tuple(Launch(k.name, (k.grid, 1, 1), (k.block, 1, 1), tuple(range(n))) for k in kernels)
    ws = tuple(Workspace(b.name, b.dtype, b.size) for b in workspaces)
    return Source.from_parts(parts, func.name, args, "cuda", launches=launches, workspaces=ws)


__all__ = ["codegen_cuda", "emit_cuda", "CudaRenderer"]
