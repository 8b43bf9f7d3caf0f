"""partition_selects: a serial loop whose body picks one of several buffers by a select on its index is cut into
pieces over which every pick is fixed, and each piece reads its buffer directly.

A Concat along an axis is a chain of selects, `c < 128 ? A[c] : c < 160 ? B[c - 128] : ...` (net/ops/shape.py).
Left as it is, every element walks the chain, and a vectorized loop evaluates every arm lane by lane: DenseNet's
concat + BatchNorm + ReLU before each 1x1 conv ran at 1-5 GFLOP/s, 16 ms of its 60 on Zen 3, where onnxruntime's
Concat and BatchNorm took 10. The loop over the concat axis's tiles (a split of it, the vector lanes inside) is
cut where a condition's truth changes: in each piece the simplifier, given the piece's range, folds the conditions,
and the chain becomes one read. Where an input's boundary falls inside a tile that piece keeps its selects.

Only serial loops whose body chooses between buffer reads (a select with a read in both arms: not padding, whose
else arm is a constant) by conditions on the loop's variable alone, and only while the pieces are few and their
copies small. A choice on another loop (a recurrent layer's outputs stacked by time step, the step loop run in
parallel) would stay in every piece: the bidirectional GRU ran 10% slower with its direction loop cut in two.
"""
from __future__ import annotations

from dataclasses import replace

from ..program.expr import Const, Read, Select, Var, binary, const, free_vars, walk
from ..program.expr import substitute as substitute_expr
from ..program.simplify import simplify
from ..lowering.stmt import Allocate, For, IfThenElse, PrimFunc, Seq, Stmt, Store, seq, walk_stmt

MAX_EXTENT = 256      # loops probed point by point
MAX_PIECES = 64
MAX_NODES = 20_000    # expression nodes in all the pieces' bodies (the C they become)


def partition_selects(func: PrimFunc) -> PrimFunc:
    # one walk decides for most programs (no choice between buffers): they come back as they were
    if not any(_is_choice(x) for e in _exprs(func.body) for x in walk(e)):
        return func
    return replace(func, body=_visit(func.body, {}))


def _visit(s: Stmt, bounds: dict) -> Stmt:
    if isinstance(s, For):
        if s.kind == "serial":
            pieces = _partition(s, bounds)
            if pieces is not None:
                return seq(*[_visit(p, bounds) for p in pieces])
        return replace(s, body=_visit(s.body, {**bounds, s.var: (0, s.extent - 1)}))
    if isinstance(s, Seq):
        return seq(*[_visit(c, bounds) for c in s.stmts])
    if isinstance(s, IfThenElse):
        return replace(s, then=_visit(s.then, bounds))
    if isinstance(s, Allocate):
        return Allocate(s.buffer, _visit(s.body, bounds))
    return s


def _exprs(s: Stmt):
    for st in walk_stmt(s):
        if isinstance(st, Store):
            yield from st.indices
            yield st.value
        elif isinstance(st, IfThenElse):
            yield st.cond


def _reads(e) -> bool:
    return any(isinstance(x, Read) for x in walk(e))


def _is_choice(x) -> bool:
    """A select between two buffer reads (padding's else arm is a constant)."""
    return isinstance(x, Select) and _reads(x.t) and _reads(x.f)


def _choices(f: For) -> list | None:
    """Conditions of the body's selects that choose between two buffer reads, when all of them depend on f's
    variable (else None: a choice on another loop would stay in every piece, each a copy of it)."""
    out = []
    for e in _exprs(f.body):
        for x in walk(e):
            if _is_choice(x):
                if f.var not in free_vars(x.cond):
                    return None
                out.append(x.cond)
    return out


def _inner_bounds(f: For, bounds: dict) -> dict:
    inner = dict(bounds)
    for st in walk_stmt(f.body):
        if isinstance(st, For):
            inner[st.var] = (0, st.extent - 1)
    return inner


def _partition(f: For, bounds: dict) -> list | None:
    """The pieces of f (loops of the same variable over consecutive ranges, the body shifted), or None."""
    from .basic import _nodes, map_stmt_exprs   # basic lists this pass among its defaults
    if f.extent > MAX_EXTENT or f.extent < 2 or any(isinstance(s, Allocate) for s in walk_stmt(f.body)):
        return None
    conds = list(dict.fromkeys(_choices(f) or ()))
    if not conds:
        return None
    inner = _inner_bounds(f, bounds)
    var = Var(f.var, "int32")

    def signature(k: int) -> tuple:
        folded = (simplify(substitute_expr(c, {f.var: const(k, "int32")}), inner) for c in conds)
        return tuple(c.value if isinstance(c, Const) else None for c in folded)
    sigs = [signature(k) for k in range(f.extent)]
    starts = [k for k in range(f.extent) if k == 0 or sigs[k] != sigs[k - 1]]
    if not 2 <= len(starts) <= MAX_PIECES or all(v is None for s in sigs for v in s):
        return None
    if len(starts) * _nodes(f.body) > MAX_NODES:
        return None
    ends = starts[1:] + [f.extent]
    pieces = []
    for lo, hi in zip(starts, ends):
        shifted = binary("+", var, const(lo, "int32")) if lo else var
        scope = {**bounds, f.var: (0, hi - lo - 1)}
        body = map_stmt_exprs(f.body, lambda e, b: simplify(substitute_expr(e, {f.var: shifted}), b), scope)
        if body is not None:
            pieces.append(replace(f, extent=hi - lo, body=body))
    return pieces


__all__ = ["partition_selects"]
