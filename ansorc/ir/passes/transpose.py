"""transpose_copies: a vectorized copy whose lanes read down a column of its source, inside a loop that walks along
the source's rows, becomes square blocks transposed through registers (VTranspose).

`dst[v, j] = src[j, v]` vectorized along j leaves the vectorizer one store per v of `lanes` elements gathered by
scalar loads a row apart (VLanes). Taking `lanes` consecutive v together, the same elements are `lanes` contiguous
row loads, an in-register transpose and `lanes` contiguous stores. Gathered, TBG's copy of K transposed was a
visible part of its kernel (docs/perf-notes.md). The block reads and writes exactly the elements the loop did, in the
same store order (several pieces of one vector: each piece's stores in order, the pieces disjoint, see _disjoint),
and src is another buffer than dst, so the result is the same.

Runs after the register passes, on the vector IR, where the target has a "transpose" for the dtype and lanes.
"""
from __future__ import annotations

from dataclasses import replace

from ..program.dtypes import ITEMSIZE
from ..program.expr import Binary, CheckedIndex, Const, Read, Var, substitute, walk
from ..program.simplify import linear_form, simplify
from ..lowering.stmt import Allocate, For, PrimFunc, Seq, Stmt, seq
from .vector import VLanes, VStore, VTranspose, stmt_kids, with_kids
from .vectorize import VectorCaps, flat_index, lane_stride

# Rows a multiple of these many bytes apart (destination, source) share a few L1 sets. Where the blocked loop makes
# several blocks in a row (walking along the source rows, each block storing to `lanes` new destination rows of the
# same sets), the blocks then cost more than the gathers saved: destination rows a multiple of 1 KB apart, or
# source rows a multiple of 4 KB apart when a block's source rows fill the set's SET_WAYS (with 4 lanes the blocks
# still gain). Such copies keep the gathers. A loop that is one block (a tile's: the next block, down the source
# column, completes the same destination lines) gains at any stride. Figures: docs/perf-notes.md, "Code generation".
CONFLICT_BYTES = (1024, 4096)
SET_WAYS = 8


def _conflicts(stride: int, src_stride: int, lanes: int, itemsize: int) -> bool:
    dst_bytes, src_bytes = stride * itemsize, src_stride * itemsize
    return dst_bytes % CONFLICT_BYTES[0] == 0 or (src_bytes % CONFLICT_BYTES[1] == 0 and lanes >= SET_WAYS)


def transpose_copies(func: PrimFunc, caps: VectorCaps) -> PrimFunc:
    shapes = {b.name: b.storage for b in func.args}
    return replace(func, body=_visit(func.body, shapes, caps, {}))


def _visit(s: Stmt, shapes: dict, caps: VectorCaps, bounds: dict) -> Stmt:
    if isinstance(s, For):
        blocks = _as_blocks(s, shapes, caps, bounds)
        if blocks is None:
            blocks = _as_blocks_down(s, shapes, caps, bounds)
        if blocks is not None:
            return blocks
        bounds = {**bounds, s.var: (0, s.extent - 1)}
    if isinstance(s, Allocate):
        shapes = {**shapes, s.buffer.name: s.buffer.storage}
    return with_kids(s, tuple(_visit(c, shapes, caps, bounds) for c in stmt_kids(s)))


def _gathered_column(store: VStore, shapes: dict, bounds: dict) -> tuple | None:
    """(src, flat index of lane 0, lane stride) when every lane of the stored VLanes reads src one row further."""
    elems = store.value.elems
    if not all(isinstance(e, Read) and e.name == elems[0].name and e.dtype == store.value.dtype for e in elems):
        return None
    src = elems[0].name
    if src == store.buffer or src not in shapes or \
            any(isinstance(n, CheckedIndex) for e in elems for i in e.indices for n in walk(i)):
        return None
    flats = [simplify(flat_index(e.indices, shapes[src]), bounds) for e in elems]
    forms = [linear_form(x) for x in flats]
    stride = forms[1][1] - forms[0][1]
    if stride == 0 or any(f[0] != forms[0][0] or f[1] - forms[0][1] != k * stride for k, f in enumerate(forms)):
        return None
    return src, flats[0], stride


def _as_blocks(f: For, shapes: dict, caps: VectorCaps, bounds: dict) -> Stmt | None:
    """The loop as a loop over transposed blocks, or None where it is not such a copy. Its body is one gathering
    store, or several into disjoint lanes of the same rows (the pieces of one vector loop: 16 lanes as 2 x 8)."""
    stores = f.body.stmts if isinstance(f.body, Seq) else (f.body,)
    if f.kind not in ("serial", "unroll") or not stores or not all(isinstance(s, VStore) for s in stores):
        return None
    blocks = [_block(s, f, shapes, caps, bounds) for s in stores]
    if any(b is None for b in blocks) or not _disjoint(blocks):
        return None
    n = f.extent // blocks[0].lanes
    first = {f.var: Binary("*", Var(f.var), Const(blocks[0].lanes, "int32"), "int32") if n > 1 else Const(0, "int32")}
    inner = {**bounds, f.var: (0, n - 1)}
    body = seq(*[replace(b, index=simplify(substitute(b.index, first), inner),
                         src_index=simplify(substitute(b.src_index, first), inner)) for b in blocks])
    return For(f.var, n, f.kind, body, f.auto_unroll) if n > 1 else body


def _as_blocks_down(f: For, shapes: dict, caps: VectorCaps, bounds: dict) -> Stmt | None:
    """A loop along the source rows around a loop down the source column whose body is one gathering store (an
    unsplit copy, the column loop in vector pieces: K' computed per head inside its consumer's loop) as blocks in
    the order that gains at any stride: for each `lanes` rows of f, the blocks down the column, each completing
    the same destination lines. The pieces must write disjoint elements of a destination row."""
    g = f.body
    if f.kind not in ("serial", "unroll") or not isinstance(g, For) or g.kind not in ("serial", "unroll") or \
            not isinstance(g.body, VStore):
        return None
    inner = {**bounds, g.var: (0, g.extent - 1)}
    block = _block(g.body, f, shapes, caps, inner, check_conflicts=False)
    if block is None or block.lanes >= f.extent:
        return None
    step = lane_stride(block.index, g.var)
    if step is None or step < block.lanes or (g.extent - 1) * step + block.lanes > abs(block.stride) or \
            lane_stride(block.src_index, g.var) is None:
        return None
    n = f.extent // block.lanes
    first = {f.var: Binary("*", Var(f.var), Const(block.lanes, "int32"), "int32")}
    rows = {**inner, f.var: (0, n - 1)}
    blocked = replace(block, index=simplify(substitute(block.index, first), rows),
                      src_index=simplify(substitute(block.src_index, first), rows))
    return For(f.var, n, f.kind, For(g.var, g.extent, g.kind, blocked, g.auto_unroll), f.auto_unroll)


def _block(store: VStore, f: For, shapes: dict, caps: VectorCaps, bounds: dict,
           check_conflicts: bool = True) -> VTranspose | None:
    """The store as one block (indices still in terms of f's variable), or None."""
    if not isinstance(store.value, VLanes):
        return None
    lanes, dtype = store.value.lanes, store.value.dtype
    if not caps.has("transpose", dtype, lanes) or f.extent % lanes:
        return None
    column = _gathered_column(store, shapes, bounds)
    if column is None:
        return None
    src, src_index, src_stride = column
    stride = lane_stride(store.index, f.var)
    if lane_stride(src_index, f.var) != 1 or stride is None or \
            check_conflicts and f.extent > lanes and _conflicts(stride, src_stride, lanes, ITEMSIZE[dtype]):
        return None
    return VTranspose(store.buffer, store.index, stride, src, src_index, src_stride, lanes, dtype)


def _disjoint(blocks: list) -> bool:
    """Whether blocks made together write disjoint elements, none reading what another writes, so that making each
    block's stores together keeps the result: one buffer and stride, lanes apart within one row of the stride."""
    if len(blocks) == 1:
        return True
    b0 = blocks[0]
    if any((b.buffer, b.stride, b.lanes) != (b0.buffer, b0.stride, b0.lanes) for b in blocks) or \
            any(b.src == b0.buffer for b in blocks):
        return False
    offsets = []
    for b in blocks:
        terms, c = linear_form(simplify(Binary("-", b.index, b0.index, "int32")))
        if terms:
            return False
        offsets.append(c)
    offsets.sort()
    return all(y - x >= b0.lanes for x, y in zip(offsets, offsets[1:])) and \
        offsets[-1] - offsets[0] + b0.lanes <= abs(b0.stride)


__all__ = ["transpose_copies"]
