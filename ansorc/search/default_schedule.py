"""The schedule of an untuned task (trials=0): deterministic, always valid, reasonably fast.

Strictly inlinable stages are inlined (outputs stay). Each remaining root stage: the innermost spatial loop is
vectorized (whole when short, else split by a vector-sized factor) when its reads are contiguous or invariant
along it, the reduction loops go between the outer spatial loops and that vector loop (so a reduction updates
a vector of outputs per step, as a matmul's inner product becomes FMAs on rows), and the outer spatial loops
are fused into one parallel loop of enough iterations for the cores. Reductions stay serial.
"""
from __future__ import annotations

from ..ir.dag import ComputeDAG, is_strictly_inlinable
from ..ir.expr import Read, Var, walk
from ..ir.state import State
from ..ir.steps import Annotate, ComputeInline, Fuse, Pragma, Reorder, Split
from .task import HardwareParams, hardware_params

PARALLEL_PER_CORE = 16   # parallel iterations wanted per core (as the parallelize init rule)
UNROLL_STEPS = 16        # auto_unroll_max_step of reductions: small kernel windows (3x3) unroll


def default_cpu_schedule(dag, target="native", hw: HardwareParams | None = None) -> State:
    """A complete State of `dag` for a CPU target (a name or Target); `hw` overrides the target's parameters."""
    dag = dag if isinstance(dag, ComputeDAG) else ComputeDAG(dag)
    hw = hw or hardware_params(target)
    state = State.initial(dag)
    for st in dag.compute_ops:
        if not dag.is_output(st.name) and is_strictly_inlinable(st) and dag.consumers(st.name):
            state = state.apply(ComputeInline(st.name))
    for st in list(state.stages):
        if st.compute_at == "root":
            state = _schedule_root(state, st.name, hw)
    return state


def _contiguous_along(op, var: str) -> bool:
    """Every read that depends on `var` has it in its last subscript (and nowhere else): a vector of consecutive
    outputs reads consecutive (or strided by a small step) elements, not a gather across rows."""
    for r in (n for n in walk(op.body) if isinstance(n, Read)):
        uses = [any(isinstance(v, Var) and v.name == var for v in walk(i)) for i in r.indices]
        if any(uses[:-1]):
            return False
    return True


def _vector_factor(extent: int, hw: HardwareParams, dtype: str) -> int | None:
    """Lanes of the vector loop: the whole extent when short, else the largest divisor between one vector and
    the vectorize limit, else one vector (a guarded tail); None when the loop is too short to gain."""
    lanes = hw.lanes(dtype)
    if extent < min(4, lanes):
        return None
    if extent <= hw.max_vectorize_elems:
        return extent
    fits = [f for f in range(lanes, hw.max_vectorize_elems + 1) if extent % f == 0]
    return max(fits) if fits else lanes


def _schedule_root(state: State, name: str, hw: HardwareParams) -> State:
    st = state.stage(name)
    spatial = [it for it in st.iters if it.kind == "S"]
    reduce = [it.name for it in st.iters if it.kind == "R"]
    inner, outer = [], [it.name for it in spatial]
    last = spatial[-1] if spatial else None
    factor = _vector_factor(last.extent, hw, st.op.dtype) if last is not None else None
    if factor and _contiguous_along(st.op, last.name):
        outer = outer[:-1]
        if factor < last.extent:
            state = state.apply(Split(name, last.name, (factor,)))
            outer, inner = outer + [f"{last.name}.0"], [f"{last.name}.1"]
        else:
            inner = [last.name]
    order = outer + reduce + inner
    if order != [it.name for it in state.stage(name).iters]:
        state = state.apply(Reorder(name, tuple(order)))
    state = _parallel(state, name, outer, hw)
    if inner:
        state = state.apply(Annotate(name, inner[0], "vectorize"))
    if reduce:
        state = state.apply(Pragma(name, state.stage(name).iters[0].name, "auto_unroll_max_step", UNROLL_STEPS))
    return state


def _parallel(state: State, name: str, outer: list, hw: HardwareParams) -> State:
    """Fuse the leading outer loops until there are enough iterations for the cores, and parallelize them."""
    st = state.stage(name)
    take, prod = [], 1
    for n in outer:
        take.append(n)
        prod *= st.iter(n).extent
        if prod >= PARALLEL_PER_CORE * hw.num_cores:
            break
    if prod <= 1:
        return state
    if len(take) > 1:
        state = state.apply(Fuse(name, tuple(take)))
    return state.apply(Annotate(name, "@".join(take), "parallel"))


__all__ = ["default_cpu_schedule"]
