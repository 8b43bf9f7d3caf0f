"""prefetch_loads: inside a loop with the prefetch pragma (PrimFunc.prefetch holds (loop variable, distance)),
every contiguous vector load of a kernel input whose address moves with that loop is preceded by a prefetch of
the address the same load reads `distance` iterations later, clamped into the buffer (a vector pass: it runs
after vectorize_loops, on VLoads).

Why: a chain of row-wise stages (a softmax: the row's max, its exps, their sum, the scaled row) reads each row
from memory in its first pass and then computes from L1. The hardware prefetchers follow demand misses, so memory
idles while the row's exps run and the next row's first pass waits for it. Prefetching the next row from inside
the loads of this one overlaps the two (softmax 2048 x 2048: docs/perf-notes.md, "Code generation"). Where the
prefetches go matters: the same lines fetched in one burst at the top of each row changed nothing (the burst fills
the miss buffers and waits on them), spread over the row's loads they drain while it computes. A hint that the
measurement keeps or drops: the search sets the pragma at random (search/annotate.py), only on kernels without data
reuse.
"""
from __future__ import annotations

from dataclasses import replace

from ..program.expr import Binary, Const, Var, free_vars, substitute
from ..program.simplify import bound
from ..lowering.stmt import For, IfThenElse, PrimFunc, Stmt, seq
from .vector import VLoad, VPrefetch, stmt_kids, top_exprs, vwalk, with_kids


def prefetch_loads(func: PrimFunc) -> PrimFunc:
    if not func.prefetch:
        return func
    inputs = {b.name: b for b in func.args[:func.n_inputs]}
    ahead = dict(func.prefetch)

    def visit(s: Stmt, active: dict, bounds: dict) -> Stmt:
        if isinstance(s, For):
            bounds = {**bounds, s.var: (0, s.extent - 1)}
            if s.var in ahead:
                active = {**active, s.var: ahead[s.var]}
        kids = stmt_kids(s)
        if kids:
            s = with_kids(s, tuple(visit(k, active, bounds) for k in kids))
        if not active or isinstance(s, IfThenElse):
            return s
        hints = _hints(s, active, inputs, bounds)
        return seq(*hints, s) if hints else s

    return replace(func, body=visit(func.body, {}, {}))


def _hints(s: Stmt, active: dict, inputs: dict, bounds: dict) -> list:
    """The prefetches for the input loads that statement s itself evaluates, one per distinct address, clamped
    into the buffer where the loop bounds do not prove it (a padded read's index can fall below 0)."""
    out, seen = [], set()
    for e in top_exprs(s):
        for ld in vwalk(e):
            if not isinstance(ld, VLoad) or ld.lanes < 2 or ld.buffer not in inputs:
                continue
            used = free_vars(ld.index)
            moving = {v: k for v, k in active.items() if v in used}
            if not moving or (ld.buffer, ld.index) in seen:
                continue
            seen.add((ld.buffer, ld.index))
            dtype = ld.index.dtype
            later = substitute(ld.index, {v: Binary("+", Var(v), Const(k, "int32"), "int32")
                                          for v, k in moving.items()})
            last = inputs[ld.buffer].size - 1
            lo, hi = bound(later, bounds) or (None, None)
            if hi is None or hi > last:
                later = Binary("min", later, Const(last, dtype), dtype)
            if lo is None or lo < 0:
                later = Binary("max", later, Const(0, dtype), dtype)
            out.append(VPrefetch(ld.buffer, later))
    return out


__all__ = ["prefetch_loads"]
