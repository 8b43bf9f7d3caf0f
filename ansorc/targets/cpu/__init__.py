"""The CPU target plug-in: C with AVX-512 / AVX2 / NEON intrinsics and OpenMP, built with gcc or clang.

Its stages are the project's core modules (codegen/c.py, measure/builder.py and runner.py, search/rules.py,
kernel.py, export.py); this object names them for the registry. Imports are late: see targets/base.py.
"""
from __future__ import annotations

from ..base import Pass, TargetPlugin


class CpuPlugin(TargetPlugin):
    kind = "cpu"
    names = ("native", "avx512", "avx2", "neon", "generic")
    networks = True
    constants = True
    cold_weights = True
    in_model_check = True

    def parse(self, name, cc=None):
        from ...codegen.target import CpuTarget
        return CpuTarget.parse(name, cc)

    def lower(self, state, name, options):
        from ...ir.lowering.lower import lower_loops
        return lower_loops(state, name, options)

    def passes(self, target):
        from functools import partial

        from ...codegen.c import CODEGEN_PASSES
        from ...ir.passes.basic import DEFAULT_PASSES
        # target-independent clean-up first, then the vector and register passes of the target's ISA
        return (*(Pass(p.__name__, p) for p in DEFAULT_PASSES),
                *(Pass(p.__name__, partial(p, target=target)) for p in CODEGEN_PASSES))

    def emit(self, func, target):
        from ...codegen.c import emit_c
        return emit_c(func, target)

    def hardware_params(self, target):
        from ...search.task import HardwareParams
        return HardwareParams(num_cores=target.num_cores, vector_bytes=target.vector_bytes,
                              vector_registers=target.vector_registers,
                              max_vectorize_elems=max(16, 4 * target.lanes("float32")))

    def policy(self, target):
        from ...search.policy import CpuPolicy
        return CpuPolicy()

    def default_state(self, task):
        from ...ir.schedule.state import ScheduleError
        from ...search.default_schedule import default_cpu_schedule
        try:
            return default_cpu_schedule(task.dag, task.target, task.hw)
        except (ScheduleError, ValueError, KeyError, NotImplementedError):
            return None

    def local_backend(self, target, options):
        from dataclasses import replace

        from ...measure.backend import LocalBackend
        from ...measure.runner import Runner
        from ...search.tuner import TargetUnavailableError
        if not target.runs_here():
            raise TargetUnavailableError(f"target {target.name!r} cannot be measured on this machine ({target.arch}, "
                                         f"{target.isa}); tune on the target machine")
        runner = Runner(config=replace(options.runner, cc=target.cc))  # the timing runtime too: one OpenMP runtime
        return LocalBackend(runner, target_flags=options.flags or target.flags, cc=target.cc)

    def node_measure(self, target, config, build_timeout):
        from ...measure.ray_nodes import measure_emulated
        return lambda source, task, best, early_cut: measure_emulated(source, target.name, task, config,
                                                                      build_timeout)

    def compile(self, dag, trials, log, target, name, options):
        from ...autotune import compile_cpu
        return compile_cpu(dag, trials, log, target, name, options)

    def network_program(self, dag, target):
        from ...search.default_schedule import default_cpu_schedule
        return default_cpu_schedule(dag, target)

    def build_network(self, net, groups, schedules, target, name, tasks):
        from ...net.api import build_cpu_model
        return build_cpu_model(net, groups, schedules, target, name, tasks)

    def cli_compile(self, args, prog, name):
        from ...cli import compile_cpu_command
        return compile_cpu_command(args, prog, name)


PLUGIN = CpuPlugin()
