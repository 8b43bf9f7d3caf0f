"""Lowering of a cross-thread reduction: a stage whose reduce loop is bound to threadIdx.x.

Each thread folds its share of the reduction (the serial reduce loops) into a one-element local buffer, the
threads of the block combine their values (ThreadReduce: warp shuffles and shared memory in CUDA), and thread 0
stores the result. The stage's loops are: spatial ones (bound to blockIdx.x), the thread-bound reduce loop,
then serial reduce loops; nothing may be computed at them.
"""
from __future__ import annotations

from ..program.expr import Binary, Compare, Const, Read, Var, free_vars, substitute
from ..program.simplify import simplify
from ..schedule.state import ScheduleError
from .lower import _guarded
from .stmt import Allocate, Buffer, For, Store, ThreadReduce, seq
from ..program.te import _identity

_COMBINE = {"sum": "+", "max": "max", "min": "min"}


def emit_cross_thread(low, name: str):
    st = low.stages[name]
    op = st.op
    info = low.stage_info(name)
    pos = next(i for i, it in enumerate(st.iters) if it.kind == "R" and it.annotation == "threadIdx.x")
    if any(it.kind == "R" for it in st.iters[:pos]) or any(it.kind == "S" for it in st.iters[pos:]):
        raise ScheduleError(f"cross-thread reduction of {name!r}: its spatial loops must all come before the "
                            "thread-bound reduce loop")
    if any(low.state.attached_at(name, it.name) for it in st.iters):
        raise ScheduleError(f"cross-thread reduction of {name!r}: no stage may be computed inside it")
    acc = Buffer(low.names.get(("buf", name, "red"), f"{name}_red"), (1,), op.dtype, "local")
    zero = (Const(0, "int32"),)
    c = low.concrete
    value = simplify(low.rewrite_reads(substitute(low.body[name], info.axis_abs)), low.bounds, low.memo)
    guards = [c(g) for g in info.guards if not (isinstance(g, Const) and g.value)]
    spatial_guards = [g for g in guards if not (free_vars(g) & info.reduce_vars)]
    update = Store(acc.name, zero, Binary(_COMBINE[op.combiner], Read(acc.name, zero, op.dtype), c(value), op.dtype))
    body = _guarded(update, guards)
    for it in reversed(st.iters[pos + 1:]):
        body = For(info.loop_vars[it.name].name, info.ext[it.name], "serial", body)
    thread = info.loop_vars[st.iters[pos].name]
    first = Compare("==", Var(thread.name), Const(0, "int32"))
    write = Store(info.buffer.name, tuple(c(info.axis_rel[a.name]) for a in op.axes), Read(acc.name, zero, op.dtype))
    inner = Allocate(acc, seq(Store(acc.name, zero, _identity(op.combiner, op.dtype)), body,
                              ThreadReduce(acc.name, op.combiner, op.dtype, info.ext[st.iters[pos].name]),
                              _guarded(write, [first, *spatial_guards])))
    out = For(thread.name, info.ext[st.iters[pos].name], "threadIdx.x", inner)
    pragma = dict(st.pragmas).get("auto_unroll_max_step") or 0
    for k in range(pos - 1, -1, -1):
        it = st.iters[k]
        out = For(info.loop_vars[it.name].name, info.ext[it.name], it.annotation or "serial", out,
                  pragma if k == 0 else 0)
    return out
