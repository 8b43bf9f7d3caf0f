"""The CUDA target plug-in: one .cu translation unit per program, built with nvcc, timed on an NVIDIA GPU in a
worker process (measure_worker.py), emulated on the CPU where there is none (codegen_emulate.py).

The folder holds every CUDA stage; each module's layer is the first word of its file name (codegen_, ir_,
measure_, search_), kernel.py, export.py and cli.py are top-level. Imports here are late: see targets/base.py.
"""
from __future__ import annotations

from ..base import Pass, TargetPlugin


class CudaPlugin(TargetPlugin):
    kind = "cuda"
    names = ("cuda",)   # and "cuda:sm_XX" for an architecture
    networks = True

    def parse(self, name, cc=None):
        from .codegen_target import CudaTarget
        return CudaTarget.parse(name, cc)

    def lower(self, state, name, options):
        from ...ir.lowering.lower import lower_loops
        return lower_loops(state, name, options, peel=False)   # a thread's tile is not peeled

    def passes(self, target):
        from .ir_passes import GPU_PASSES
        return tuple(Pass(p.__name__, p) for p in GPU_PASSES)

    def emit(self, func, target):
        from .codegen_cuda import emit_cuda
        return emit_cuda(func, target)

    def hardware_params(self, target):
        from ...search.task import HardwareParams
        # cores are SMs; 16-byte loads; registers per thread
        return HardwareParams(num_cores=target.num_cores, vector_bytes=target.vector_bytes,
                              vector_registers=target.max_registers_per_thread, cache_line_bytes=128)

    def policy(self, target):
        from .search_policy import GpuPolicy
        return GpuPolicy(target)

    def default_state(self, task):
        return None   # the first round samples the space; compile() builds default_gpu_schedule when untuned

    def local_backend(self, target, options):
        from .search_backend import cuda_backend
        return cuda_backend(target, options)

    def node_measure(self, target, config, build_timeout):
        from .measure_runner import CudaBackend, CudaRunner, CudaRunnerConfig
        backend = []   # made on first use: CUDA is initialised in the runner's worker only

        def measure(source, task, best, early_cut):
            if not backend:
                cfg = CudaRunnerConfig(rtol=config.rtol, atol=config.atol)
                backend.append(CudaBackend(CudaRunner(cfg), target.arch, build_timeout))
            return backend[0].run(backend[0].build([source]), task, best_seconds=best, early_cut=early_cut)[0]
        measure.close = lambda: backend and backend[0].close()
        return measure

    def compile(self, dag, trials, log, target, name, options):
        from .kernel import compile_cuda
        return compile_cuda(dag, trials, log, target, name, options)

    def network_program(self, dag, target):
        from ...search.task import SearchTask
        from .search_policy import default_gpu_schedule
        return default_gpu_schedule(SearchTask(dag, target))

    def build_network(self, net, groups, schedules, target, name, tasks):
        import tempfile

        from .net_library import plan_network
        from .net_model import CudaModel, build_cuda_network
        plan = plan_network(net, groups, schedules, target, name)
        scratch = tempfile.mkdtemp(prefix=f"ansorc_{plan.name}_")
        files, sig = build_cuda_network(plan, net, target.arch, scratch)
        return CudaModel(files, sig, tasks, owned_dir=scratch)

    def cli_compile(self, args, prog, name):
        from .cli import compile_cuda_command
        return compile_cuda_command(args, prog, name)


PLUGIN = CudaPlugin()
