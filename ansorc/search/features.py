"""Per-store features of a lowered program for the learned cost model (Ansor section 3.2, plus CPU extras).

`extract(func)` reads the loop tree that `lower(state, passes=False)` gives (annotations and the
auto_unroll_max_step pragma still on the loops) and returns one row per `Store`, columns as listed in
`features_table.TABLE`; what the terms mean and how values are computed is documented there (and in
docs/features.md, generated from it).

Speed: one walk over the tree collects, per store, its enclosing loops, guards and the pragma in effect, and
marks the loops that will be unrolled on the way back up; index expressions are analysed once per
expression object; footprints grow incrementally from the innermost loop outwards and only change at loops
whose variable the access uses; rows are plain Python lists and the numpy array is built once per program.
"""
from __future__ import annotations

import math

import numpy as np

from ..codegen.dot import offers_within
from ..ir.passes.dot import match_dot
from ..ir.program.deep import run_deep
from ..ir.program.expr import Binary, Call, Cast, CheckedIndex, Compare, Logic, Read, Select
from ..ir.lowering.lower import lower
from ..ir.lowering.stmt import Allocate, Buffer, For, IfThenElse, PrimFunc, Seq, Store
from .features_table import (FEATURE_MEANINGS, FEATURE_NAMES, LOG_MASK, MAX_BUFS, N_FEATURES, TABLE, annotation_block,
                             intensity_curve)
from .features_access import access, footprint, region_lines
from .task import HardwareParams

DEFAULT_HW = HardwareParams()

TILE_SPARE_REGISTERS = 4  # vector registers a register tile leaves for operands (28 of AVX-512's 32)
_FLOATS = ("float32", "float64")
_LOG_COLS = np.array(LOG_MASK)


class _Loop:
    __slots__ = ("var", "ext", "kind", "eff", "bufcnt", "node")

    def __init__(self, node: For):
        self.var, self.ext, self.kind, self.node = node.var, node.extent, node.kind, node
        self.eff, self.bufcnt = node.kind, {}


class _Ctx:
    def __init__(self, func: PrimFunc, hw: HardwareParams):
        self.hw = hw          # vector width, registers, cache line: the same model serves AVX2, NEON, AVX-512
        self.stores = []      # (Store, loops tuple, guards tuple, max_step)
        self.allocs = {}      # name -> (Buffer, product of enclosing loops, number of enclosing loops)
        self.bufs = {b.name: b for b in func.args}
        self.lin = {}         # id(index expr) -> (expr, linear, groups)
        self.dots = offers_within(hw.vector_bytes)   # the dot-product instructions a vector this wide may hold
        self.narrow = None    # whether any buffer holds an operand type of those (_dot_terms)


# ----------------------------------------------------------------------------- tree walk

def _visit(s, loops, guards, ms, prod, ctx) -> int:
    """Collect stores; returns the step count (stores executed) of s; marks loops that will be unrolled."""
    t = type(s)
    if t is For:
        ms2 = s.auto_unroll or ms
        lp = _Loop(s)
        loops.append(lp)
        steps = s.extent * _visit(s.body, loops, guards, ms2, prod * s.extent, ctx)
        loops.pop()
        if s.kind == "unroll" or (s.kind == "serial" and ms2 and steps <= ms2):
            lp.eff = "unroll"
        return steps
    if t is Store:
        ctx.stores.append((s, tuple(loops), guards, ms))
        return 1
    if t is Seq:
        return sum(_visit(c, loops, guards, ms, prod, ctx) for c in s.stmts)
    if t is IfThenElse:
        if s.prepare:   # computed once, not per call (ir/lowering/prepared.py)
            return 0
        return _visit(s.then, loops, guards + (s.cond,), ms, prod, ctx)
    if t is Allocate:
        ctx.allocs[s.buffer.name] = (s.buffer, prod, len(loops))
        ctx.bufs[s.buffer.name] = s.buffer
        return _visit(s.body, loops, guards, ms, prod, ctx)
    return 0


# ----------------------------------------------------------------------------- expressions

_BIN_F = {"+": 1, "-": 1, "*": 2, "/": 3, "min": 4, "max": 4}   # slots of the op block (features_table._OPS)
_BIN_I = {"+": 7, "-": 7, "*": 8, "//": 9, "%": 9, "min": 10, "max": 10}


def _count(e, c: list, reads: list):
    """Add e's operations to c (slots of the op block) and collect its Reads."""
    stack = [e]
    pop, push, extend = stack.pop, stack.append, stack.extend
    while stack:
        n = pop()
        t = type(n)
        if t is Binary:
            a, b = n.a, n.b
            if n.dtype in _FLOATS:
                k = _BIN_F.get(n.op, 4)
                if k == 1 and ((type(a) is Binary and a.op == "*") or (type(b) is Binary and b.op == "*")):
                    c[0] += 1
            else:
                k = _BIN_I.get(n.op, 10)
            c[k] += 1
            push(a)
            push(b)
        elif t is Read:
            reads.append(n)
            extend(n.indices)
        elif t is Compare:
            c[4 if n.a.dtype in _FLOATS else 10] += 1
            push(n.a)
            push(n.b)
        elif t is Logic:
            c[12] += 1
            extend((n.a,) if n.b is None else (n.a, n.b))
        elif t is Select:
            c[13] += 1
            extend((n.cond, n.t, n.f))
        elif t is Cast:
            c[6 if n.dtype in _FLOATS else 11] += 1
            push(n.value)
        elif t is Call:
            c[5] += 1
            extend(n.args)
        elif t is CheckedIndex:  # the range test: two integer comparisons
            c[10] += 2
            push(n.value)


def _slog(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * np.log2(1.0 + np.abs(x))


# ----------------------------------------------------------------------------- per-store rows

def _buffers(ctx, loops, trip, accs, info, vec) -> tuple:
    """Footprints per buffer and level, the store's bytes per level, and the sorted per-buffer feature rows."""
    fps, store_bytes = {}, [0] * (len(loops) + 1)
    for b, al in accs.items():
        best = None
        for a in al:
            fp, region = footprint(a, loops)
            best = (fp, region) if best is None else (
                [max(x, y) for x, y in zip(best[0], fp)], region if fp[0] > best[0][0] else best[1])
        fps[b] = best
        elem = al[0].elem
        for k, x in enumerate(best[0]):
            store_bytes[k] += x * elem
    brows = [_buffer_row(ctx, b, al, loops, trip, info[b], fps[b], store_bytes, vec) for b, al in accs.items()]
    brows.sort(key=lambda x: (-x[0], -x[1]))
    return brows, fps, store_bytes


def _lines(al, loops, trip, elem, cache_line) -> tuple:
    """(bytes, cache lines, stride) of a buffer's accesses: lines from the innermost loop that moves the address."""
    nbytes = lines = 0.0
    stride = None
    for a in al:
        nbytes += trip * elem
        skipped = 1
        for k in range(len(loops) - 1, -1, -1):
            lp = loops[k]
            s = abs(a.flat.get(lp.var, 0.0)) if lp.ext > 1 else 0.0
            if s == 0:
                skipped *= lp.ext
                continue
            lines += trip / skipped * min(1.0, s * elem / cache_line)
            stride = s if stride is None else stride
            break
        else:
            lines += 1.0
    return nbytes, lines, stride


def _reuse(b, al, loops, store_bytes) -> tuple:
    """(reuse type, distance in iterations, distance in bytes, count): the innermost loop bringing data back."""
    inner_iters = 1
    for k in range(len(loops) - 1, -1, -1):
        lp = loops[k]
        if lp.ext == 1:
            continue
        if all(lp.var not in a.var_map for a in al):
            rtype, ct = 0, float(lp.ext)
        elif lp.bufcnt.get(b, 0) > 1:
            rtype, ct = 1, float(lp.bufcnt[b] - 1)
        else:
            inner_iters *= lp.ext
            continue
        return rtype, float(inner_iters), float(store_bytes[k + 1]), ct
    return 2, 0.0, 0.0, 0.0


def _buffer_row(ctx, b, al, loops, trip, read_written, fp_region, store_bytes, vec) -> tuple:
    """(lines, bytes, feature row) of one buffer of a store."""
    r, w = read_written
    elem = al[0].elem
    fp, region = fp_region
    nbytes, lines, stride = _lines(al, loops, trip, elem, ctx.hw.cache_line_bytes)
    ubytes = float(fp[0] * elem)
    ulines = region_lines(region, al[0].shape, elem, ctx.hw.cache_line_bytes)
    rtype, dis_iter, dis_bytes, ct = _reuse(b, al, loops, store_bytes)
    div = ct if rtype < 2 else 0.5
    vst = [abs(a.flat.get(vec.var, 0.0)) for a in al] if vec else ()
    reuse = [0.0, 0.0, 0.0]
    reuse[rtype] = 1.0
    return (lines, nbytes, [
        float(r and not w), float(w and not r), float(r and w), nbytes, ubytes, lines, ulines, *reuse,
        dis_iter, dis_bytes, ct, nbytes / div, ubytes / div, lines / div, ulines / div, stride or 0.0,
        float(bool(vst) and all(s == 1 for s in vst)), float(any(s not in (0, 1) for s in vst)),
        float(b in ctx.allocs and ctx.bufs[b].scope == "local")])


def _row(ctx, st, loops, guards, ms, counts, accs, info) -> list:
    """accs: buffer name -> list of distinct Access; info: buffer name -> [read, written]."""
    n = len(loops)
    trip = 1
    for lp in loops:
        trip *= lp.ext
    wacc = accs[st.buffer][0]
    alloc = ctx.allocs.get(st.buffer)
    # spatial loops: those in the written indices, and those outside the written buffer's allocation
    svars = set(wacc.var_map)
    if alloc is not None:
        svars.update(lp.var for lp in loops[:alloc[2]])
    nontriv = [lp for lp in loops if lp.ext > 1]

    row = [c * trip for c in counts]
    for kind in ("vectorize", "unroll", "parallel"):
        row += annotation_block(nontriv, svars, kind)
    vec = next((lp for lp in reversed(nontriv) if lp.eff == "vectorize"), None)
    brows, fps, store_bytes = _buffers(ctx, loops, trip, accs, info, vec)
    width = len(brows[0][2])
    for i in range(MAX_BUFS):
        row += brows[i][2] if i < len(brows) else [0.0] * width
    row += intensity_curve(sum(counts[1:7]), loops, store_bytes)
    if alloc is not None:
        size = float(alloc[0].size * wacc.elem)
        row += [size, size * alloc[1], float(alloc[1]), trip / alloc[1], float(alloc[0].scope == "local")]
    else:
        row += [0.0] * 5
    row += [float(trip), float(n), float(ms)]
    tile = 0.0
    if info[st.buffer][0]:  # accumulator: elements updated between two steps of the innermost reduce loop
        red = next((k for k in range(n - 1, -1, -1) if loops[k].ext > 1 and loops[k].var not in svars), None)
        if red is not None:
            tile = float(fps[st.buffer][0][red + 1])
    return row + _cpu_extras(ctx, loops, guards, accs, info[st.buffer][0], wacc, svars, nontriv, vec, tile, trip) \
        + _dot_terms(ctx, loops, trip) + _gpu_terms(ctx, st, loops, trip, accs, info)


def _cpu_extras(ctx, loops, guards, accs, accumulates, wacc, svars, nontriv, vec, tile, trip) -> list:
    """Vector, innermost-loop, register-tile and guard terms, sized by the task's hardware (ctx.hw)."""
    hw = ctx.hw
    lanes = max(1, hw.vector_bytes // wacc.elem)
    inner = nontriv[-1] if nontriv else None
    all_accs = [a for a_l in accs.values() for a in a_l]
    row = []
    if vec is not None:
        ve = vec.ext
        vcontig = all(abs(a.flat.get(vec.var, 0.0)) in (0, 1) for a in all_accs)
        row += [float(inner is vec), float(vcontig), float(ve % lanes == 0), float(ve // lanes), float(ve % lanes)]
    else:
        row += [0.0] * 5
    if inner is not None:
        icontig = all(abs(a.flat.get(inner.var, 0.0)) in (0, 1) for a in all_accs)
        row += [float(inner.ext), float(inner.var not in svars), float(icontig)]
    else:
        row += [0.0, 0.0, 0.0]
    vregs = float(math.ceil(tile / (min(lanes, vec.ext) if vec is not None else 1)))
    # a register tile must leave a few vector registers for the operands
    row += [tile, vregs, float(0 < vregs <= hw.vector_registers - TILE_SPARE_REGISTERS)]
    gc = [0] * 14
    for g in guards:
        _count(g, gc, [])
    ppar = 1
    for lp in loops:
        if lp.eff == "parallel":
            ppar *= lp.ext
    row += [float(bool(guards)), float(sum(gc) * trip), float(len(accs) == 1 and not accumulates), trip / ppar]
    return row


def _has_narrow(ctx) -> bool:
    """Whether an argument or local buffer has an operand type of the dot instructions: without one (a float32
    program) no store can match, and matching every vectorized store was a visible share of a C2D program's
    feature time (docs/perf-notes.md)."""
    if ctx.narrow is None:
        types = {dt for key in ctx.dots for dt in key[:2]}
        bufs = [*ctx.bufs.values(), *(b for b, _, _ in ctx.allocs.values())]
        ctx.narrow = any(b.dtype in types for b in bufs)
    return ctx.narrow


def _dot_terms(ctx, loops, trip) -> list:
    """Instructions, products per lane and broadcast load of the dot-product instruction the dot pass makes of
    the store's two innermost loops (G steps around the vector loop: ir/passes/dot.py's own test); zeros if none."""
    if len(loops) < 2 or loops[-1].kind != "vectorize" or not ctx.dots or not _has_narrow(ctx):
        return [0.0, 0.0, 0.0]
    own = {n: b for n, (b, _, _) in ctx.allocs.items()}
    bounds = {lp.var: (0, lp.ext - 1) for lp in loops[:-2]}
    steps = loops[-2]
    m = match_dot(steps.node, ctx.dots, {n: b.storage for n, b in ctx.bufs.items()}, own, bounds,
                  unrolled=steps.eff == "unroll")
    if m is None:
        return [0.0, 0.0, 0.0]
    return [m.count * trip / (steps.ext * loops[-1].ext), float(m.group), float(m.word_load)]


_GPU_LOOPS = ("blockIdx.x", "threadIdx.x", "vthread")


def _gpu_terms(ctx, st, loops, trip, accs, info) -> list:
    """Block, thread and vthread extents around the store, and its shared-memory traffic (GPU programs)."""
    ext = {k: 0.0 for k in _GPU_LOOPS}
    for lp in loops:   # nested threadIdx loops (a fetch inside a thread's work) are the same hardware index
        if lp.kind == "threadIdx.x":
            ext[lp.kind] = max(ext[lp.kind], float(lp.ext))
        elif lp.kind in ext:
            ext[lp.kind] = max(ext[lp.kind], 1.0) * lp.ext
    shared = [b for b in accs if ctx.bufs.get(b) is not None and ctx.bufs[b].scope == "shared"]
    reads = sum(len(accs[b]) for b in shared if info[b][0])
    return [ext["blockIdx.x"], ext["threadIdx.x"], ext["vthread"], float(st.buffer in shared), float(reads * trip)]


def extract(func: PrimFunc, raw: bool = False, hw: HardwareParams | None = None) -> np.ndarray:
    """[n_stores, N_FEATURES] float32 features, one row per Store in program order, for the hardware `hw` (the
    task's; by default HardwareParams(), an AVX-512 machine)."""
    ctx = _Ctx(func, hw or DEFAULT_HW)
    _visit(func.body, [], (), 0, 1, ctx)
    prepared = []
    for st, loops, guards, ms in ctx.stores:
        counts = [0] * 14
        reads = []
        _count(st.value, counts, reads)
        for i in st.indices:
            _count(i, counts, [])
        accs, info, keys = {}, {}, {}
        for name, idx, is_w in [(st.buffer, st.indices, True)] + [(r.name, r.indices, False) for r in reads]:
            buf = ctx.bufs.get(name)
            if buf is None:  # not declared in the program (a malformed tree): assume an unbounded float32 array
                buf = ctx.bufs[name] = Buffer(name, (1 << 40,) * len(idx), "float32", "global")
            fl = info.setdefault(name, [False, False])
            fl[1 if is_w else 0] = True
            seen = keys.setdefault(name, [])
            if any(idx is s or idx == s for s in seen):
                continue
            seen.append(idx)
            accs.setdefault(name, []).append(access(idx, buf, ctx.lin))
        for lp in loops:
            bc = lp.bufcnt
            for name in accs:
                bc[name] = bc.get(name, 0) + 1
        prepared.append((st, loops, guards, ms, counts, accs, info))
    rows = [_row(ctx, *p) for p in prepared]
    out = np.array(rows, dtype=np.float64).reshape(len(rows), N_FEATURES)
    if not raw:
        out[:, _LOG_COLS] = _slog(out[:, _LOG_COLS])
    return out.astype(np.float32)


def extract_states(states, name: str = "k", raw: bool = False, hw: HardwareParams | None = None,
                   valid=None) -> list:
    """Lower each state (passes=False) and extract; a state that fails to lower gives a [0, N_FEATURES] array."""
    out = []
    for s in states:
        try:
            func = run_deep(len(s.stages), lower, s, name, passes=False)  # nests about one level per stage
            if valid is not None and not valid(func):   # e.g. a GPU program over the device's limits
                raise ValueError("invalid program")
        except Exception:  # noqa: BLE001 - any lowering failure means "no program"
            out.append(np.zeros((0, N_FEATURES), dtype=np.float32))
            continue
        out.append(run_deep(len(s.stages), extract, func, raw=raw, hw=hw))
    return out


__all__ = ["FEATURE_NAMES", "FEATURE_MEANINGS", "TABLE", "N_FEATURES", "extract", "extract_states"]
