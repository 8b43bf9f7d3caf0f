"""The user-facing entry points: build (schedule -> Kernel); tune/compile/load are added by later layers."""
from __future__ import annotations

from .codegen.pipeline import as_dag, render
from .codegen.source import Source
from .codegen.target import Target
from .kernel import Kernel
from .measure.builder import build as build_sources


class BuildError(RuntimeError):
    pass


def generate_source(tensors, schedule=None, name: str = "kernel", target=None) -> Source:
    """Lower and render C for a DAG under a schedule (a State, a list of steps, or None for the naive nest), for
    `target` (a Target or a name: "native" (default), "avx512", "avx2", "neon", "generic")."""
    return render(tensors, schedule, name, target)


def build(tensors, schedule=None, target="native", name: str = "kernel", cc: str | None = None,
          flags=None) -> Kernel:
    """Compile tensors (inputs then outputs) under `schedule` into a callable Kernel.

    cc and flags default to the target's (for "native": gcc and DEFAULT_CFLAGS). A target this process cannot
    load (another architecture, or an ISA this CPU lacks) is refused; see ansorc.measure.cross for NEON."""
    tgt = Target.from_name(target)
    if not tgt.runs_here():
        raise BuildError(f"target {tgt.name} ({tgt.isa}, {tgt.arch}) cannot run in this process; "
                         "use ansorc.measure.cross.run_cross to build and run it under an emulator")
    source = generate_source(tensors, schedule, name, tgt)
    [res] = build_sources([source], target_flags=tgt.flags if flags is None else flags, cc=cc or tgt.cc)
    if not res.ok:
        raise BuildError(res.error_msg)
    dag = as_dag(tensors)

    def regenerate(new_name):  # the same program for the same target, under another C name
        return generate_source(dag, schedule, new_name, tgt)
    return Kernel(source, res.lib_path, {"regenerate": regenerate, "dag": dag})
