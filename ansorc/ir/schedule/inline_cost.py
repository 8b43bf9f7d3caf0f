"""What inlining a stage costs: the expression nodes it adds to its readers' bodies.

An expression is a DAG in memory but a tree once lowered and rendered: an inlined producer is copied into every
place its reader reads it. Most element-wise producers are read once per element, so inlining only moves them.
A producer read many times per element (tanh under the range reduction and polynomials of an Asin, which reads
its input thousands of times as a tree) would be computed that many times, and the C would grow with it: one
such chain once made a 2.4 MB translation unit that gcc did not finish. Stages whose inlining would add more
than INLINE_GROWTH nodes stay materialized (computed once per element into their own buffer).
"""
from __future__ import annotations

from ..program.expr import Read, children

INLINE_GROWTH = 1024   # expression nodes an inlining may add to its readers (a copy of the body per extra read)


def _counts(e, name: str, memo: dict) -> tuple:
    """(tree size, reads of `name`) of expression `e`, counted as a tree, memoized on the DAG's nodes (iterative:
    a long chain of ops is a deep expression)."""
    stack = [(e, False)]
    while stack:
        node, ready = stack.pop()
        if id(node) in memo:
            continue
        kids = children(node)
        if not ready:
            stack.append((node, True))
            stack.extend((c, False) for c in kids if id(c) not in memo)
            continue
        size, reads = 1, int(isinstance(node, Read) and node.name == name)
        for c in kids:
            s, r = memo[id(c)]
            size, reads = size + s, reads + r
        memo[id(node)] = (size, reads)
    return memo[id(e)]


def _reads(op, name: str) -> int:
    return _counts(op.body, name, {})[1]


def tree_size(state, name: str) -> int:
    """The tree size of stage `name`'s body with its inlined producers substituted in."""
    op = state.stage(name).op
    size = _counts(op.body, "", {})[0]
    for t in op.inputs:
        if state.has_stage(t.name) and state.stage(t.name).compute_at == "inline":
            size += _reads(op, t.name) * (tree_size(state, t.name) - 1)
    return size


def uses(state, name: str) -> int:
    """How many copies of `name`'s body the non-inlined stages would hold if it were inlined: its reads in each
    reader, times that reader's own uses when the reader is inlined itself."""
    total = 0
    for r in state.readers(name):
        k = _reads(state.stage(r).op, name)
        total += k * (uses(state, r) if state.stage(r).compute_at == "inline" else 1)
    return total


def inline_growth(state, name: str) -> int:
    """Expression nodes that inlining stage `name` adds to the program (0 when each element is read once)."""
    n = uses(state, name)
    return 0 if n <= 1 else (n - 1) * tree_size(state, name)


def inlining_bloats(state, name: str) -> bool:
    """Whether inlining `name` would add more than INLINE_GROWTH nodes: it should stay materialized."""
    return inline_growth(state, name) > INLINE_GROWTH


__all__ = ["INLINE_GROWTH", "tree_size", "uses", "inline_growth", "inlining_bloats"]
