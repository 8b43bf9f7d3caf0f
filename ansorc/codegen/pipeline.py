"""The one compile pipeline: (dag, schedule, target) -> Source. Search, measurement, the API, the CLI and export
all render through `render`; each target kind's plug-in (ansorc/targets/) holds its passes and renderer."""
from __future__ import annotations

from ..ir.dag import ComputeDAG
from ..ir.deep import run_deep
from ..ir.lower_options import DEFAULT_LOWER, LowerOptions
from ..ir.names import c_ident
from ..ir.state import State, replay
from ..targets import Target, parse, plugin
from .source import Source


def as_dag(tensors) -> ComputeDAG:
    return tensors if isinstance(tensors, ComputeDAG) else ComputeDAG(tensors)


def as_state(dag: ComputeDAG, schedule=None) -> State:
    """A State, a list of steps, or None (the naive loop nest)."""
    if schedule is None:
        return State.initial(dag)
    if isinstance(schedule, State):
        return schedule
    return replay(dag, schedule)


def resolve_target(target=None) -> Target:
    """A Target from a name ("native", "avx512", ..., "cuda", "cuda:sm_80") or a Target (ansorc.targets.parse)."""
    return parse(target)


def render(tensors, schedule=None, name: str = "kernel", target=None,
           options: LowerOptions = DEFAULT_LOWER) -> Source:
    """Lower and render a DAG (or its tensors) under a schedule for `target` (a Target or a name) with the target
    plug-in's passes and renderer; `options`: the lowering's choices (all on by default; one off renders the
    program without it, to measure what it gains)."""
    dag = as_dag(tensors)
    state = as_state(dag, schedule)
    tgt = parse(target)
    kind = plugin(tgt)
    # run_deep: the statements nest about one level per stage
    return run_deep(len(state.stages), lambda: kind.render(state, c_ident(name), tgt, options))


__all__ = ["render", "resolve_target", "as_dag", "as_state"]
