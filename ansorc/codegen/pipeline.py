"""The one compile pipeline: (dag, schedule, target) -> Source. Search, measurement, the API, the CLI and export
all render through `render`; a second target is a second renderer chosen here, not a branch above codegen."""
from __future__ import annotations

from ..ir.dag import ComputeDAG
from ..ir.deep import run_deep
from ..ir.lower import lower
from ..ir.lower_options import DEFAULT_LOWER, LowerOptions
from ..ir.names import c_ident
from ..ir.state import State, replay
from .c import codegen_c
from .cuda import codegen_cuda
from .cuda_target import CudaTarget, is_cuda
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


def resolve_target(target=None):
    """A Target or CudaTarget from a name ("native", "avx512", ..., "cuda", "cuda:sm_80") or a target."""
    if isinstance(target, (Target, CudaTarget)):
        return target
    if is_cuda(target):
        return CudaTarget.from_name(target)
    return Target.from_name(target or "native")


# One renderer per target kind: CPU targets render C with intrinsics, CUDA targets a .cu translation unit.
RENDERERS = {"cpu": codegen_c, "cuda": codegen_cuda}


def render(tensors, schedule=None, name: str = "kernel", target=None,
           options: LowerOptions = DEFAULT_LOWER) -> Source:
    """Lower and render a DAG (or its tensors) under a schedule for `target` (a Target or a name); `options`: the
    lowering's choices (all on by default; one off renders the program without it, to measure what it gains)."""
    dag = as_dag(tensors)
    state = as_state(dag, schedule)
    tgt = resolve_target(target)
    kind = getattr(tgt, "kind", "cpu")
    # CPU programs take the default pass list here; a GPU renderer runs its own (ir/gpu_passes.py)
    def go():
        return RENDERERS[kind](lower(state, c_ident(name), kind == "cpu", options), tgt)
    return run_deep(len(state.stages), go)  # the statements nest about one level per stage


__all__ = ["render", "resolve_target", "as_dag", "as_state"]
