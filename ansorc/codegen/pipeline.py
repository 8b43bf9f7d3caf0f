"""The one compile pipeline: (dag, schedule, target) -> Source. Search, measurement, the API, the CLI and export
all render through `render`; a second target is a second renderer chosen here, not a branch above codegen."""
from __future__ import annotations

from ..ir.dag import ComputeDAG
from ..ir.lower import lower
from ..ir.names import c_ident
from ..ir.state import State, replay
from .c import codegen_c
from .source import Source
from .target import Target


def as_dag(tensors) -> ComputeDAG:
    return tensors if isinstance(tensors, ComputeDAG) else ComputeDAG(tensors)


def as_state(dag: ComputeDAG, schedule=None) -> State:
    """A State, a list of steps, or None (the naive loop nest)."""
    if schedule is None:
        return State.initial(dag)
    if isinstance(schedule, State):
        return schedule
    return replay(dag, schedule)


def render(tensors, schedule=None, name: str = "kernel", target=None) -> Source:
    """Lower and render a DAG (or its tensors) under a schedule for `target` (a Target or a name)."""
    dag = as_dag(tensors)
    state = as_state(dag, schedule)
    return codegen_c(lower(state, c_ident(name)), Target.from_name(target or "native"))


__all__ = ["render", "as_dag", "as_state"]
