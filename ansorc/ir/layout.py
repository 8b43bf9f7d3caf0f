"""How a workspace lies in memory: its innermost rows padded by a cache line where its rows alias in L1.

A row-major workspace whose outer strides are multiples of 2 KB puts the same element of neighbouring rows in
the same few sets of an 8-way 32 KB L1 (its sets repeat every 4 KB): a convolution reading 9 columns of a padded
512-channel input 2 KB apart, or 4 depth planes 81 x 4 KB apart, keeps its rows and its weights' lines in a
quarter of the sets, and they evict each other. One cache line after each innermost row spreads them over the sets
(TVM's storage_align, applied here by rule rather than searched). Rows keep their 64-byte alignment; the padding is
never read or written. Rows shorter than 1 KB stay as they are: a line after each would cost over 6% of the memory (a
blocked matmul panel's 64-byte rows would double), and such rows are read whole, not as a handful of long streams."""
from __future__ import annotations

from .dtypes import ITEMSIZE

ALIAS_BYTES = 2048   # an outer stride that is a multiple of this maps its rows to at most 2 sets' groups of 4 KB
LINE_BYTES = 64
MIN_ROW_BYTES = 1024


def row_pad(shape: tuple, dtype: str) -> int:
    """Elements to store after each innermost row of a workspace of this shape: one cache line when its rows are
    at least MIN_ROW_BYTES long and some outer dimension (extent > 1) strides by a multiple of ALIAS_BYTES."""
    item = ITEMSIZE[dtype]
    if len(shape) < 2 or LINE_BYTES % item or shape[-1] * item < MIN_ROW_BYTES:
        return 0
    stride = shape[-1] * item
    for n in reversed(shape[:-1]):
        if n > 1 and stride % ALIAS_BYTES == 0:
            return LINE_BYTES // item
        stride *= n
    return 0


__all__ = ["row_pad", "ALIAS_BYTES", "LINE_BYTES", "MIN_ROW_BYTES"]
