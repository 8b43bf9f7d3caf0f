"""The user-facing entry points: build (schedule -> Kernel); tune/compile/load are added by later layers."""
from __future__ import annotations

from .codegen.pipeline import as_dag, as_state, render
from .codegen.source import Source
from .codegen.target import Target
from .errors import AnsorcError
from .kernel import Kernel
from .measure.builder import build as build_sources
from .spec import KernelSpec


class BuildError(AnsorcError, RuntimeError):
    """The kernel could not be compiled (or not for this machine)."""


def generate_source(tensors, schedule=None, name: str = "kernel", target=None) -> Source:
    """Lower and render C for a DAG under a schedule (a State, a list of steps, or None for the naive nest), for
    `target` (a Target or a name: "native" (default), "avx512", "avx2", "neon", "generic")."""
    return render(tensors, schedule, name, target)


def build(tensors, schedule=None, target="native", name: str = "kernel", cc: str | None = None,
          flags=None) -> Kernel:
    """Compile tensors (inputs then outputs) under `schedule` into a callable Kernel.

    cc and flags default to the target's (for "native": gcc and -march=native). A target this process cannot
    load (another architecture, or an ISA this CPU lacks) is refused; see ansorc.measure.cross for NEON."""
    tgt = Target.from_name(target)
    dag = as_dag(tensors)
    return build_spec(KernelSpec.of(dag, as_state(dag, schedule), tgt, flags, cc), name)


def build_spec(spec: KernelSpec, name: str = "kernel") -> Kernel:
    """Compile a KernelSpec into a callable Kernel whose entry point is `name`."""
    tgt = spec.target
    if not tgt.runs_here():
        raise BuildError(f"target {tgt.name} ({tgt.isa}, {tgt.arch}) cannot run in this process; "
                         "use ansorc.measure.cross.run_cross to build and run it under an emulator")
    source = spec.source(name)
    [res] = build_sources([source], target_flags=spec.flags, cc=spec.cc)
    if not res.ok:
        raise BuildError(res.error_msg)
    return Kernel(source, res.lib_path, spec)
