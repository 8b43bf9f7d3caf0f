"""Taps that reach past a register tile's edge: copies of a small tap loop, each with the tile rows it feeds.

A 7 x 7 conv computes each output row in one register tile of 7 columns, and a 3-wide tap loop `rw` outside it
reads `pad[w + rw]`: for rw = 0 the tile's first column reads the zero padding, for rw = 2 its last. The skip
guards of passes/skip.py cannot drop those steps, as the condition changes inside the unrolled tile. Here the tap loop
is written out once per value, and in each copy the tile loop runs only over the columns whose steps can add
something, written out too (so ir/passes/pin.py keeps the weights vectors in registers): rw = 0 and 2 get a 6-column
tile. Beside the skipped FLOPs (2 of 21 per row), a 6 x 2-vector tile fits AVX2's 16 registers where 7 x 2 does
not (a weights vector is then read from memory by every FMA). It pays on the 300-trial best programs of the
7x7x512 convs (DIL's dilation 2: 5-column tiles, 4 for the outer taps) and of C2D 14x14x256 (two 7-column tiles a
row, a version each); figures in docs/perf-notes.md, "Code generation".

Applies to conditions on the tile loop `t`, inside every reduction loop, not vectorized, with only vector loops
inside it; a serial reduction loop `r` outside it; and possibly spatial loops outside the reduction (a row of 14
in two tiles of 7: the tile's outer loop w.0), with no stage computed inside `r`. The copies then come in
versions, one per value of those outer loops, each under a test of them; MAX_COPIES bounds taps x versions.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from ..program.expr import Binary, Compare, Const, Var, free_vars, substitute
from .basic import map_stmt_exprs
from .skip import all_of
from ..lowering.stmt import IfThenElse, Stmt, seq

MAX_COPIES = 7      # the most copies of the tap loop's body (taps x versions: a 7 x 7 kernel's taps)
MAX_TILE = 16       # the most columns of a tile (a register tile's rows)
MAX_VERSIONS = 4    # the most value combinations of the outer loops a condition also reads


@dataclass(frozen=True)
class TileEdges:
    tap: int            # position of the tap loop r among the stage's loops
    tile: int           # position of the tile loop t
    # ((outer loop values ((var, value), ...), per value of r: (lo, hi) of t whose steps can add something, or
    # None for none), ...): one version per combination of the outer loops' values
    versions: tuple


def tile_edges(conditions: list, loops: list, iters, first_reduce: int, simplify,
               bounds: dict | None = None) -> TileEdges | None:
    """The tap and tile loops of `conditions` (the conjuncts outside of which a reduction step adds nothing) among
    a stage's loops (`loops`: (variable, extent), outermost first; `iters`: its iterators; `bounds`: {variable:
    (0, last)} of every loop, those of the stages it is computed inside among them), else None."""
    kinds = [it.kind if it.annotation in ("", "unroll") else "-" for it in iters]
    position = {v: i for i, (v, _) in enumerate(loops)}     # a loop of an enclosing stage counts as -1
    extent = dict(loops)
    for c in conditions:     # the enclosing loops the conditions read, not every loop lowered so far
        extent.update({v: bounds[v][1] + 1 for v in free_vars(c) if v not in extent and v in (bounds or {})})
    last_reduce = max((i for i, k in enumerate(kinds) if k == "R"), default=-1)
    groups: dict = {}
    for c in conditions:
        vs = sorted(free_vars(c), key=lambda v: position.get(v, -1))
        if len(vs) < 2 or not set(vs) <= extent.keys() or any(position.get(v, -1) >= first_reduce for v in vs[:-2]):
            continue
        groups.setdefault((vs[-2], vs[-1]), []).append(c)
    for (r, t), conds in groups.items():
        pr, pt = position.get(r, -1), position.get(t, -1)
        if pr < first_reduce or pt <= last_reduce or kinds[pr] != "R" or kinds[pt] != "S":
            continue
        outer = sorted({v for c in conds for v in free_vars(c)} - {r, t}, key=lambda v: position.get(v, -1))
        versions_n = math.prod(extent[v] for v in outer)
        if extent[r] * versions_n > MAX_COPIES or versions_n > MAX_VERSIONS or extent[t] > MAX_TILE or \
                any(kinds[i] != "-" and loops[i][1] > 1 for i in range(pt + 1, len(kinds))):
            continue    # too many copies, or a tile whose columns are more than vectors (code size)
        versions = []
        for values in itertools.product(*[range(extent[v]) for v in outer]):
            at = tuple(zip(outer, values))
            versions.append((at, tuple(_live(conds, {**dict(at), r: k}, t, extent[t], simplify)
                                       for k in range(extent[r]))))
        ranges = [x for _, rs in versions for x in rs]
        if any(x is False for x in ranges) or all(x == (0, extent[t]) for x in ranges):
            continue
        return TileEdges(pr, pt, tuple(versions))
    return None


def _live(conds: list, at: dict, t: str, extent: int, simplify):
    """(lo, hi): the values of t where every condition holds with the loops of `at` at those values, None where
    none does, False where they are not one interval or do not fold to constants."""
    live = []
    fixed_at = {v: Const(k, "int32") for v, k in at.items()}
    for v in range(extent):
        values = [simplify(substitute(c, {**fixed_at, t: Const(v, "int32")})) for c in conds]
        if not all(isinstance(x, Const) for x in values):
            return False
        if all(x.value for x in values):
            live.append(v)
    if not live:
        return None
    lo, hi = live[0], live[-1] + 1
    return (lo, hi) if hi - lo == len(live) else False


def written_out(edges: TileEdges, tap: str, body_of) -> Stmt:
    """The tap loop `tap` replaced by its copies: per version, under a test of its outer loops' values, the body
    body_of(range) of each tap value that feeds any column (range: those columns), with the values fixed."""
    parts = []
    for at, ranges in edges.versions:
        copies = seq(*[map_stmt_exprs(body_of(rng), _fixed({tap: k, **dict(at)}), {})
                       for k, rng in enumerate(ranges) if rng is not None])
        if at:
            copies = IfThenElse(all_of([Compare("==", Var(v), Const(k, "int32")) for v, k in at]), copies)
        parts.append(copies)
    return seq(*parts)


def shifted(var: str, lo: int):
    """An expression map that runs loop `var` from lo: var -> var + lo."""
    if not lo:
        return lambda e, b: e
    return lambda e, b: substitute(e, {var: Binary("+", Var(var), Const(lo, "int32"), "int32")})


def _fixed(values: dict):
    """An expression map that fixes loops at values."""
    mapping = {v: Const(k, "int32") for v, k in values.items()}
    return lambda e, b: substitute(e, mapping)


__all__ = ["MAX_COPIES", "MAX_VERSIONS", "TileEdges", "shifted", "tile_edges", "written_out"]
