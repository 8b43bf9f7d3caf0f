"""LowerOptions: the lowering's choices that are on by default, passed in as a value (not module switches), so
that a benchmark can render one program with and without a choice side by side in one process."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LowerOptions:
    shift_inward: bool = True   # a pure stage's overrunning last tile moves back inside instead of being guarded
    peel: bool = True           # ... and is computed by a narrower copy where that pays (ir/lowering/peel.py)
    pad_rows: bool = True       # the row_pad pragma pads a buffer's rows (ir/lowering/layout.py)
    skip: bool = True           # reduction steps that add nothing (padding taps) are skipped (ir/passes/skip.py)
    tile_edges: bool = True     # a tile's edge taps are written out instead of tested per step (passes/tile_edges.py)


DEFAULT_LOWER = LowerOptions()

__all__ = ["LowerOptions", "DEFAULT_LOWER"]
