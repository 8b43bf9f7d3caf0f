"""How a workspace lies in memory: with the row_pad pragma, each innermost row one cache line longer.

A row-major workspace whose outer strides are multiples of 2 KB puts the same element of neighbouring rows in
the same few sets of an 8-way 32 KB L1 (its sets repeat every 4 KB): a 3-D convolution's register tile reading 4
depth planes of its padded 256-channel input, 81 x 4 KB apart, keeps them and its weights' lines in a few sets,
and they evict each other. One cache line after each innermost row spreads them over the sets (TVM's
storage_align). Whether it pays depends on the program (C3D 14x14x256's best gains; C1D 32x512's best, whose rows
are read as a handful of long broadcast streams, loses: docs/architecture.md, "Workspace layout"), so the search
decides: annotation sets the pragma at random on a root stage whose rows alias (`aliasing_rows`), a mutation
switches it, measurement picks. Rows keep their 64-byte alignment; the padding is never read or written. Rows
shorter than 1 KB do not qualify: a line after each would cost over 6% of the memory (a blocked matmul panel's
64-byte rows would double)."""
from __future__ import annotations

import math

from ..program.dtypes import ITEMSIZE

ALIAS_BYTES = 2048   # an outer stride that is a multiple of this maps its rows to at most 2 groups of sets
LINE_BYTES = 64
MIN_ROW_BYTES = 1024


def aliasing_rows(shape: tuple, dtype: str) -> bool:
    """Whether a workspace of this shape qualifies for row_pad: rows of at least MIN_ROW_BYTES, and some outer
    dimension (extent > 1) striding by a multiple of ALIAS_BYTES."""
    item = ITEMSIZE[dtype]
    if len(shape) < 2 or LINE_BYTES % item or shape[-1] * item < MIN_ROW_BYTES:
        return False
    return any(shape[d] > 1 and math.prod(shape[d + 1:]) * item % ALIAS_BYTES == 0 for d in range(len(shape) - 1))


def row_pad(dtype: str) -> int:
    """Elements stored after each innermost row of a workspace with the row_pad pragma: one cache line."""
    item = ITEMSIZE[dtype]
    return LINE_BYTES // item if LINE_BYTES % item == 0 else 0


__all__ = ["aliasing_rows", "row_pad", "ALIAS_BYTES", "LINE_BYTES", "MIN_ROW_BYTES"]
