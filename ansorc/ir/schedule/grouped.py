"""CacheRead with a group (steps.CacheRead.group): a matrix operand [..., K, N] copied into a dot-product
instruction's layout [ceil(N / B), ..., ceil(K / G), B, G], so that one instruction reads G consecutive
reduction steps of B consecutive columns as one contiguous run (codegen/dot.py). The copy is zero past K and N:
the instruction reads whole groups, and a zero operand adds nothing, so a reduction that does not divide by G
still reads only the copy's elements."""
from __future__ import annotations

from dataclasses import replace

from ..program.expr import Const, IterVar, Logic, Read, Var, select, transform
from ..program.te import ComputeOp, Tensor
from .state import ScheduleError, State, initial_stage


def replace_reads(state: State, step, cache_op: ComputeOp, index) -> State:
    """The readers of step.tensor read cache_op at index(original indices); cache_op is a new stage before them."""
    cache_t = Tensor(cache_op)
    stages = list(state.stages)
    first = min(state.stage_index(r) for r in step.readers) if step.readers else len(stages)
    for r in step.readers:
        i = state.stage_index(r)
        op = stages[i].op
        if not any(t.name == step.tensor for t in op.inputs):
            raise ScheduleError(f"cache_read of {step.tensor!r}: stage {r!r} does not read it")
        body = transform(op.body, lambda n: Read(cache_op.name, index(n.indices), n.dtype, cache_t)
                         if isinstance(n, Read) and n.name == step.tensor else None)
        inputs = tuple(cache_t if t.name == step.tensor else t for t in op.inputs)
        stages[i] = replace(stages[i], op=replace(op, body=body, inputs=inputs))
    stages.insert(first, initial_stage(cache_op, step.scope))
    return replace(state, stages=tuple(stages))


def grouped_read(step, state: State, src) -> State:
    """CacheRead with a group: [..., K, N] laid out [ceil(N / B), ..., ceil(K / G), B, G], zeros past the ends."""
    shape, b, g = tuple(src.shape), step.block, step.group
    if len(shape) < 2 or b <= 0 or g <= 0:
        raise ScheduleError(f"cache_read of {step.tensor!r} grouped by {g}: needs a block and two dimensions")
    k_n, n_n = shape[-2], shape[-1]
    layout = (-(-n_n // b),) + shape[:-2] + (-(-k_n // g), b, g)
    axes = tuple(IterVar(Var(f"ax{d}"), n, "S") for d, n in enumerate(layout))
    v = [a.var for a in axes]
    k, j = v[-3] * g + v[-1], v[0] * b + v[-2]
    value = Read(step.tensor, tuple(v[1:-3]) + (k, j), src.dtype, Tensor(src))
    conds = ([k < k_n] if k_n % g else []) + ([j < n_n] if n_n % b else [])
    if conds:
        value = select(conds[0] if len(conds) == 1 else Logic("&&", *conds), value, Const(0, src.dtype))
    cache_op = ComputeOp(f"{step.tensor}.{step.scope}", axes, (), value, None, src.dtype, (Tensor(src),))
    return replace_reads(state, step, cache_op,
                          lambda i: (i[-1] // b,) + tuple(i[:-2]) + (i[-2] // g, i[-1] % b, i[-2] % g))


__all__ = ["grouped_read", "replace_reads"]
