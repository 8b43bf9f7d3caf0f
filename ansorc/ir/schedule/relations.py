"""From a stage's split/fuse relations to extents and to the values of its op's axes.

Extents are inferred top-down from the root axes (whose extents may be a compute_at region smaller than the
op's shape); values are built bottom-up from the leaf loop variables. A split whose factors do not divide
its parent's extent produces a guard `parent < extent`, or for a pure stage its last tile shifted back inside.
"""
from __future__ import annotations

from ..program.expr import Binary, Compare, Const, Expr
from .state import ScheduleError, SplitRel, Stage


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def split_extents(parent: int | None, lengths: tuple) -> tuple:
    """Extents of a split's children: inner factors clamped to what the parent needs, outer = the rest."""
    if parent is None or any(x is None for x in lengths):
        return (None,) + tuple(lengths)
    inner = []
    rest = parent
    for ln in reversed(lengths):
        e = max(1, min(ln, rest))
        inner.append(e)
        rest = _ceil_div(rest, e)
    return (rest,) + tuple(reversed(inner))


def infer_extents(stage: Stage, root: dict | None = None) -> dict:
    """Extent of every iterator name (root axes, intermediates, leaves)."""
    op = stage.op
    ext = {a.name: a.extent for a in op.axes + op.reduce_axes}
    if root:
        ext.update(root)
    for rel in stage.relations:
        if isinstance(rel, SplitRel):
            for c, e in zip(rel.children, split_extents(ext[rel.parent], rel.lengths)):
                ext[c] = e
        else:
            prod = 1
            for p in rel.parents:
                prod = None if prod is None or ext[p] is None else prod * ext[p]
            ext[rel.child] = prod
    return ext


def axis_values(stage: Stage, leaf_vars: dict, ext: dict, parts: dict | None = None,
                shift_inward: bool = False) -> tuple[dict, list]:
    """({axis or iterator name: Expr over leaf vars}, guards) for the stage's relations.

    parts: {fused leaf iterator: {parent iterator: Var}}: those parents take the given variables instead of
    `fused // inner % extent` (each parent as its own variable keeps index expressions affine for analysis).
    shift_inward: a split whose tiles overrun its parent moves its last tile back inside instead of guarding it
    (`min(outer * span, extent - span) + inner`), so that tile recomputes some of the one before it. Only for a
    stage whose every point is a pure function of its inputs: the repeated points get the same values again."""
    parts = parts or {}
    val: dict[str, Expr] = {it.name: leaf_vars[it.name] for it in stage.iters}
    guards: list[Expr] = []
    for rel in reversed(stage.relations):
        if isinstance(rel, SplitRel):
            expr, stride = None, 1
            for c in reversed(rel.children[1:]):
                term = val[c] if stride == 1 else Binary("*", val[c], Const(stride, "int32"), "int32")
                expr = term if expr is None else Binary("+", term, expr, "int32")
                stride *= ext[c]
            span, parent_ext = stride, ext[rel.parent]
            outer = val[rel.children[0]] if span == 1 else \
                Binary("*", val[rel.children[0]], Const(span, "int32"), "int32")
            stride *= ext[rel.children[0]]
            shift = shift_inward and stride > parent_ext >= span
            if shift:
                outer = Binary("min", outer, Const(parent_ext - span, "int32"), "int32")
            val[rel.parent] = outer if expr is None else Binary("+", outer, expr, "int32")
            if stride > parent_ext and not shift:
                guards.append(Compare("<", val[rel.parent], Const(parent_ext, "int32")))
        elif rel.child in parts:
            val.update(parts[rel.child])
        else:
            f = val[rel.child]
            inner = 1
            for p in reversed(rel.parents):
                e = f if inner == 1 else Binary("//", f, Const(inner, "int32"), "int32")
                if p != rel.parents[0]:
                    e = Binary("%", e, Const(ext[p], "int32"), "int32")
                val[p] = e
                inner *= ext[p]
    return val, guards


def check_decided(stage: Stage) -> None:
    for rel in stage.relations:
        if isinstance(rel, SplitRel) and any(x is None for x in rel.lengths):
            raise ScheduleError(f"stage {stage.name!r}: split of {rel.parent!r} has undecided lengths {rel.lengths}")


__all__ = ["split_extents", "infer_extents", "axis_values", "check_decided"]
