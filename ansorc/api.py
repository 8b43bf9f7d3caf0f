"""The user-facing entry points: build (schedule -> Kernel); tune/compile/load are added by later layers."""
from __future__ import annotations

from .codegen.c import codegen_c
from .codegen.source import Source
from .ir.dag import ComputeDAG
from .ir.lower import lower
from .ir.names import c_ident
from .ir.state import State, replay
from .kernel import Kernel
from .measure.builder import DEFAULT_CFLAGS, build as build_sources


class BuildError(RuntimeError):
    pass


def _as_dag(tensors) -> ComputeDAG:
    return tensors if isinstance(tensors, ComputeDAG) else ComputeDAG(tensors)


def generate_source(tensors, schedule=None, name: str = "kernel") -> Source:
    """Lower and render C for a DAG under a schedule (a State, a list of steps, or None for the naive nest)."""
    dag = _as_dag(tensors)
    if schedule is None:
        state = State.initial(dag)
    elif isinstance(schedule, State):
        state = schedule
    else:
        state = replay(dag, schedule)
    return codegen_c(lower(state, c_ident(name)))


def build(tensors, schedule=None, target: str = "native", name: str = "kernel", cc: str = "gcc",
          flags=DEFAULT_CFLAGS) -> Kernel:
    """Compile tensors (inputs then outputs) under `schedule` into a callable Kernel."""
    if target not in ("native",):
        from .codegen import target as _t  # noqa: F401  (explicit ISA targets arrive with the SIMD codegen)
    source = generate_source(tensors, schedule, name)
    [res] = build_sources([source], target_flags=flags, cc=cc)
    if not res.ok:
        raise BuildError(res.error_msg)
    dag = _as_dag(tensors)
    return Kernel(source, res.lib_path, {"regenerate": lambda new_name: generate_source(dag, schedule, new_name),
                                         "dag": dag})
