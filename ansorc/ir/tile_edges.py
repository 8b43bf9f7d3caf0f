"""Taps that reach past a register tile's edge: copies of a small tap loop, each with the tile rows it feeds.

A 7 x 7 conv computes each output row in one register tile of 7 columns, and a 3-wide tap loop `rw` outside it
reads `pad[w + rw]`: for rw = 0 the tile's first column reads the zero padding, for rw = 2 its last. The skip
guards of ir/skip.py cannot drop those steps, as the condition changes inside the unrolled tile. Here the tap loop
is written out once per value, and in each copy the tile loop runs only over the columns whose steps can add
something, written out too (so ir/pin.py keeps the weights vectors in registers): rw = 0 and 2 get a 6-column
tile. Beside the skipped FLOPs (2 of 21 per row), a 6 x 2-vector tile fits AVX2's 16 registers where 7 x 2 does
not (a weights vector is then read from memory by every FMA). The 300-trial best programs, side by side: C2D, CBR
and GRP 7x7x512 -14% to -15% time, DIL 7x7x512 (dilation 2, 5-column tiles, 4 for the outer taps) -14%.

Applies to a condition on exactly two loops: the tile loop `t`, inside every reduction loop and not vectorized,
and a serial reduction loop `r` of at most MAX_COPIES steps outside it, with no stage computed inside `r`.
"""
from __future__ import annotations

from dataclasses import dataclass

from .expr import Binary, Const, Var, free_vars, substitute

ENABLED = True      # off only to measure what writing the taps out gains (side by side)
MAX_COPIES = 7      # the most values of the tap loop written out (a 7 x 7 kernel's taps)
MAX_TILE = 64       # the most steps of the tile loop tested one by one


@dataclass(frozen=True)
class TileEdges:
    tap: int            # position of the tap loop r among the stage's loops
    tile: int           # position of the tile loop t
    ranges: tuple       # per value of r: (lo, hi) of t whose steps can add something, or None for none


def tile_edges(conditions: list, loops: list, iters, first_reduce: int, simplify) -> TileEdges | None:
    """The tap and tile loops of `conditions` (the conjuncts outside of which a reduction step adds nothing) among
    a stage's loops (`loops`: (variable, extent), outermost first; `iters`: its iterators), else None."""
    if not ENABLED:
        return None
    kinds = [it.kind if it.annotation in ("", "unroll") else "-" for it in iters]
    position = {v: i for i, (v, _) in enumerate(loops)}
    last_reduce = max((i for i, k in enumerate(kinds) if k == "R"), default=-1)
    pairs: dict = {}
    for c in conditions:
        vs = free_vars(c)
        if len(vs) != 2 or not vs <= position.keys():
            continue
        r, t = sorted(vs, key=position.get)
        pairs.setdefault((r, t), []).append(c)
    for (r, t), conds in pairs.items():
        pr, pt = position[r], position[t]
        (_, r_ext), (_, t_ext) = loops[pr], loops[pt]
        if kinds[pr] != "R" or pr < first_reduce or pt <= last_reduce or kinds[pt] != "S" or \
                r_ext > MAX_COPIES or t_ext > MAX_TILE:
            continue
        ranges = tuple(_live(conds, r, k, t, t_ext, simplify) for k in range(r_ext))
        if any(x is False for x in ranges) or all(x == (0, t_ext) for x in ranges):
            continue
        return TileEdges(pr, pt, ranges)
    return None


def _live(conds: list, r: str, k: int, t: str, extent: int, simplify):
    """(lo, hi): the values of t where every condition holds with r = k, None where none does, False where they
    are not one interval or do not fold to constants."""
    live = []
    for v in range(extent):
        values = [simplify(substitute(c, {r: Const(k, "int32"), t: Const(v, "int32")})) for c in conds]
        if not all(isinstance(x, Const) for x in values):
            return False
        if all(x.value for x in values):
            live.append(v)
    if not live:
        return None
    lo, hi = live[0], live[-1] + 1
    return (lo, hi) if hi - lo == len(live) else False


def shifted(var: str, lo: int):
    """An expression map that runs loop `var` from lo: var -> var + lo."""
    if not lo:
        return lambda e, b: e
    return lambda e, b: substitute(e, {var: Binary("+", Var(var), Const(lo, "int32"), "int32")})


def fixed(var: str, value: int):
    """An expression map that fixes loop `var` at value."""
    return lambda e, b: substitute(e, {var: Const(value, "int32")})


__all__ = ["MAX_COPIES", "TileEdges", "fixed", "shifted", "tile_edges"]
