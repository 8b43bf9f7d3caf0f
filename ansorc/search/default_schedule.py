"""The schedule of an untuned task (trials=0): deterministic, always valid, reasonably fast.

Strictly inlinable stages are inlined (outputs stay), and so are layout transposes (a network's NCHW input read
by its first channels-last conv) and the padding of depthwise convs and pools. Each remaining root stage: the
innermost spatial loop is vectorized (whole when short, else split by a vector-sized factor) when its reads are
contiguous or invariant along it, the reduction loops go between the outer spatial loops and that vector loop
(so a reduction updates a vector of outputs per step, as a matmul's inner product becomes FMAs on rows), and the
outer spatial loops are fused into one parallel loop of enough iterations for the cores. Reductions stay serial,
but for one to fewer outputs than that (a norm of a whole matrix): its partial sums run in parallel (full_reduced).

A reduction with data reuse (a matmul, a conv) also gets a register tile, Ansor's cache-write sketch with fixed
sizes: it accumulates a block of rows x one or two vectors in a local buffer (registers once unrolled) over the
whole reduction, then copies the block out; without it every step reloads and stores its output vector and
streams the weights once per output row. Where the weights' panel of a vector tile (reduction x tile) is large
and strided (GMM 1024: 1024 rows 4 KB apart, which thrash L1 and a 16-way L2), the tile stacks into a block of up
to 128 rows that sweeps the reduction in blocks of <= 256 steps, each step's panel slice packed into a
contiguous buffer first (GotoBLAS's packing). Figures for each choice: docs/perf-notes.md, "The default program".
"""
from __future__ import annotations

import math

from ..codegen.target import CpuTarget, Target
from ..ir.program.dag import (ComputeDAG, is_strictly_inlinable, needs_multi_level_tiling, op_flops,
                              permutes_outer_axes)
from ..ir.program.dtypes import itemsize
from ..ir.program.expr import Const, Read, Var, reads, walk
from ..ir.schedule.inline_cost import inlining_bloats
from ..ir.schedule.state import ScheduleError, State
from ..ir.schedule.steps import (Annotate, CacheRead, CacheWrite, ComputeAt, ComputeInline, FollowSplit, Pragma,
                                 Reorder, Split)
from .dot_rule import dot_default_schedule
from .default_loops import (block_size, concat_into_elementwise, contiguous_along, divisor, fills,
                            padding_of_depthwise, parallel, schedule_root, taps_past_edges, transpose_tiled, uses,
                            vector_tile)
from .default_reduce import full_reduced, vector_reduced
from .default_rows import row_fused
from .features import TILE_SPARE_REGISTERS
from .task import HardwareParams, hardware_params

TILE_VECTORS = 2         # vectors per row of a register tile
TILE_ACCUMULATORS = 16   # vector accumulators of a register tile: two FMA pipes of latency 4 need 8, twice that
STRETCHED_OPERANDS = 2   # registers a stretched tile leaves: a broadcast and one spare (see tile_accumulators)
TILE_UNROLL = 512        # auto_unroll_max_step of a register-tiled stage: the whole tile unrolls
REDUCE_BLOCK = 256       # most steps of the innermost reduction that the row blocks of one tile sweep in turn
SHORT_REDUCE = 16        # a block of fewer steps takes the reductions outside it in, up to REDUCE_BLOCK steps
SMALL_PANEL_BYTES = 32 << 10  # a panel (reduction x vector tile) this small is neither blocked nor packed
CONFLICT_STRIDE = 2 << 10   # ... unless its rows lie this far apart (a row's line then maps to one of two L1 sets)
L1_WAYS = 8                 # and outnumber what two sets of 8 ways hold
BLOCKS_PER_CORE = 4      # parallel blocks a core at least keeps when tiles stack into blocks
LAYOUT_REREADS = 16      # row blocks re-reading each column block of the weights that make a blocked copy pay
LAYOUT_MIN_REREADS = 2   # ... or as few, for weights larger than the caches (their re-reads come from memory)
LAYOUT_PANEL_BYTES = 4 << 20      # that large
LAYOUT_FLOPS_PER_BYTE = 256       # and with this much compute per byte of them, so that the copy costs little
ROW_BLOCK = 128          # most rows of a register-tiled block that share one sweep of the weights' panel
# ... and the most bytes its rows read from a matmul-like row operand over the whole reduction: the block's slice
# of A stays in L2 (half of Zen 3's 512 KB) while the column tiles take turns (GMM 1024's blocks of 114 rows, 456 KB
# of A, ran slower than blocks of 54; docs/perf-notes.md)
ROW_OPERAND_BYTES = 256 << 10


def default_cpu_schedule(dag, target="native", hw: HardwareParams | None = None) -> State:
    """A complete State of `dag` for a CPU target (a name or Target); `hw` overrides the target's parameters."""
    if not isinstance(Target.from_name(target), CpuTarget):
        raise ScheduleError(f"the default CPU schedule cannot run on {getattr(target, 'name', target)!r}, a GPU "
                            "target")
    dag = dag if isinstance(dag, ComputeDAG) else ComputeDAG(dag)
    hw = hw or hardware_params(target)
    state = State.initial(dag)
    for st in dag.compute_ops:
        if _inlines(dag, state, st):
            state = state.apply(ComputeInline(st.name))
    done: set = set()
    for out in dag.outputs:
        fused = row_fused(state, out.name, hw)
        if fused is not None:
            state, names = fused
            done.update(names)
    for st in list(state.stages):
        if st.compute_at == "root" and st.name not in done:
            dotted = dot_default_schedule(state, st.name, target, hw)   # None unless a narrow-type dot product
            if dotted is not None:
                # its element-wise consumer too: tiled, parallel and holding the tile (scheduling it again would
                # fuse loops the tile is attached at)
                done.update({st.name, f"{st.name}.local"} | {s.name for s in dotted.stages if s.relations})
                state = dotted
                continue
            tiled = _register_tiled(state, st.name, hw)
            if tiled is not None:
                state, fused = tiled
                done.update(fused)
            else:
                state = transpose_tiled(state, st.name, hw) or vector_reduced(state, st.name, hw) or \
                    full_reduced(state, st.name, hw) or schedule_root(state, st.name, hw)
    return state


def _inlines(dag, state, st) -> bool:
    kind = is_strictly_inlinable(st) or padding_of_depthwise(dag, st) or st.tag == "layout_transform" or \
        permutes_outer_axes(st) or concat_into_elementwise(dag, st)
    return kind and not dag.is_output(st.name) and dag.consumers(st.name) and not inlining_bloats(state, st.name)


def weight_block(channels: int, dtype: str = "float32", target="native") -> int | None:
    """The block of output channels to pack conv weights by, (CO / B, KH, KW, CI, B): the vector tile of the
    default schedule's register tile on `target` (one or two vectors) when it divides `channels`, else None.
    Packed, each tile streams one contiguous slice of the weights instead of B floats per CO-float row."""
    lanes = hardware_params(target).lanes(dtype)
    return next((b for b in (TILE_VECTORS * lanes, lanes) if channels % b == 0 and b < channels), None)


def _tile_axes(state: State, st, hw: HardwareParams):
    """(vector axis, its tile, row axis, its tile) of a reduction worth a register tile, else None: the vector
    axis is the innermost spatial one (contiguous reads), its tile one or two vectors dividing it; the row axis
    the next spatial one of extent > 1 that the weights do not use (_row_axis), its tile the most rows dividing
    it whose vectors fill half the vector registers (the other half holds operands), or, where no divisor comes
    near that, a tile that does not divide it (_guarded_rows: DIL 224's 109 output columns)."""
    op = st.op
    spatial = [a for a in op.axes]
    if not op.combiner or not needs_multi_level_tiling(op) or len(spatial) < 2 or st.relations:
        return None
    vec = spatial[-1]
    lanes = hw.lanes(op.dtype)
    most = TILE_VECTORS * lanes
    vf = block_size(op, vec.name) or (vec.extent if vec.extent <= most else vector_tile(vec.extent, lanes, most))
    if vf is None or vf < min(4, lanes) or not contiguous_along(op, vec.name, vf):
        return None
    rows = [a for a in spatial[:-1] if a.extent > 1]
    if not rows:
        return None
    vectors = -(-vf // lanes)
    cap = max(1, tile_accumulators(hw)) // vectors
    row = _row_axis(op, vec.name, rows, cap)
    rf = divisor(row.extent, 1, cap)
    guarded = _guarded_rows(row.extent, cap) if row.extent > cap else None
    if guarded and (rf is None or 2 * rf <= cap or (_fewer_tiles(row.extent, guarded, rf) and
                                                    not _guard_in_block(op, (vec.name, vf, row.name, guarded), hw))):
        rf = guarded
    stretched = divisor(row.extent, cap + 1, tile_accumulators(hw, STRETCHED_OPERANDS) // vectors)
    if stretched and (not rf or _fewer_tiles(row.extent, stretched, rf)) and op.reduce_axes and \
            op.reduce_axes[-1].extent >= lanes:
        whole = stretched == row.extent and taps_past_edges(state, op, row.name)
        row, rf = (None if whole else _outer_rows(op, vec.name, rows, row, cap)) or (row, stretched)
    return (vec.name, vf, row.name, rf) if rf and rf > 1 else None


def _outer_rows(op, vec: str, rows: list, row, cap: int) -> tuple | None:
    """(axis, rows) of a tile that fills at least two thirds of `cap` exactly along another axis that the weights
    do not use, for a row axis that only a stretched tile fits (7 or 14 wide): a stretched tile reads each weights
    vector from memory in every FMA, and that load traffic makes it slower than a smaller tile with its operands
    pinned (docs/perf-notes.md). A 3-D conv's depth (16) then gives 4-row tiles; a 2-D conv has no such axis and
    keeps the stretched tile. Not called for a stretched tile that covers a whole row with taps on its padding:
    lowering writes those taps out in tiles that fit (ir/passes/tile_edges.py), which beat the depth tiles there
    (C3D 7x7x512)."""
    for a in reversed(_free_rows(op, vec, rows)):
        f = divisor(a.extent, -(-2 * cap // 3), cap) if a is not row else None
        if f:
            return a, f
    return None


def _fewer_tiles(extent: int, rows: int, than: int) -> bool:
    """Whether tiles of `rows` rows cover `extent` in at most three quarters as many tiles as `than` rows."""
    return 4 * -(-extent // rows) <= 3 * -(-extent // than)


def _guard_in_block(op, tile: tuple, hw: HardwareParams) -> bool:
    """Whether a tile of rows that do not divide the row axis keeps its guard inside the sweep: one row block holds
    all the axis's tiles, so the last tile's rows are guarded in the reduction loop and its accumulators stay in
    memory (C1D 64 wide: 6-row tiles lose to 4-row ones; docs/perf-notes.md). Otherwise each block or tile is a
    window of the output that lowering shifts back inside it, and the guard is only on the copy-out."""
    vec, vf, row, rf = tile
    blocks = dict(_row_blocks(op, vec, vf, row, rf, hw))
    return row in blocks and blocks[row] * rf >= next(a.extent for a in op.axes if a.name == row)


def tile_accumulators(hw: HardwareParams, operands: int = TILE_SPARE_REGISTERS) -> int:
    """Vector accumulators of a register tile: TILE_ACCUMULATORS, or fewer where the ISA has too few registers
    to keep `operands` besides (the cost model's TILE_SPARE_REGISTERS; AVX2's 16: 12, a 6 x 2-vector tile: 16
    accumulators leave no register for the operands and spill). A tile may take two more (STRETCHED_OPERANDS) where
    that makes it divide the row axis in a quarter fewer tiles (_tile_axes): the FMAs can read the row's vectors from
    memory, leaving one register for the broadcast and one spare (7-wide rows on AVX2, 7 x 2: the 7x7x512 convs;
    14 accumulators everywhere lose). Not where the innermost reduction is shorter than a vector (a stem conv's 3
    input channels): unrolled into the tap loop, its weight vectors are kept in registers for all rows, and the spare
    ones are gone (the C3D 224 stem). Figures: docs/perf-notes.md, "The default program"."""
    return min(TILE_ACCUMULATORS, hw.vector_registers - operands)


def _row_axis(op, vec: str, rows: list, cap: int):
    """The innermost of `rows` (spatial axes, vector axis excluded) unless the weights (the largest read along
    the vector axis) use it: rows of a tile would then share no vector operand (a capsule conv's cap_j picks a
    different weight row for each). Then the innermost axis they do not use whose extent fills the tile, else the
    longest of those (the innermost of equals): CAP's output columns w, not cap_j (docs/perf-notes.md)."""
    free = _free_rows(op, vec, rows)
    if not free or rows[-1] in free:
        return rows[-1]
    return next((a for a in reversed(free) if a.extent >= cap), max(reversed(free), key=lambda a: a.extent))


def _free_rows(op, vec: str, rows: list) -> list:
    """The axes of `rows` that the weights (the largest read along the vector axis) do not use: all of them when
    nothing is read along it."""
    weights = _largest(_reads_along_last(op, vec))
    return [a for a in rows if weights is None or not any(uses(i, a.name) for i in weights.indices)]


def _guarded_rows(extent: int, cap: int) -> int | None:
    """Rows of a tile that need not divide `extent` (DIL's 109 output columns, prime): the most rows in
    (cap/2, cap] whose guarded last tile leaves at most 15% of all tiles' rows idle (9: 5 + 4, not 8 + 1)."""
    return next((r for r in range(cap, cap // 2, -1) if fills(extent, r)), None)


def _reuse_first(op, axes: list, vec: str) -> list:
    """The axes that the largest input's subscripts use go first (stable otherwise): consecutive tiles of a thread
    then share its slice in cache (a deep conv's weights for one block of output channels). Of inputs of one
    size (a square matmul) the one read along the vector axis: a tile reads a vector tile of it per step and a
    few rows' elements of the other, so streaming the other moves fewer bytes (GotoBLAS keeps B's micro-panel;
    docs/perf-notes.md)."""
    reads = [r for r in walk(op.body) if isinstance(r, Read) and r.tensor is not None]
    if not reads:
        return axes
    big = max(reads, key=lambda r: (math.prod(r.tensor.shape), bool(r.indices) and uses(r.indices[-1], vec)))
    used = {v.name for i in big.indices for v in walk(i) if isinstance(v, Var)}
    return [a for a in axes if a in used] + [a for a in axes if a not in used]


def _register_tiled(state: State, name: str, hw: HardwareParams) -> tuple | None:
    """name.local accumulates a (row tile x vector tile) block over the reduction, computed at the innermost
    outer loop of `name`, which copies it out (vectorized), or of its element-wise epilogue, which then reads the
    block (name inlined). A large strided weights' panel makes the block several row tiles high (the middle
    loops), swept in reduction blocks with the panel's slice packed (see _row_blocks). (state, names of the
    stages scheduled), or None when `name` does not qualify."""
    axes = _tile_axes(state, state.stage(name), hw)
    if axes is None:
        return None
    vec, vf, row, rf = axes
    windows = next(a.extent for a in state.stage(name).op.axes if a.name == row) % rf != 0
    local = f"{name}.local"
    blocks = _row_blocks(state.stage(name).op, vec, vf, row, rf, hw)
    if windows and _guard_in_block(state.stage(name).op, axes, hw):
        blocks = []   # one block of every tile keeps the last one's guard in the sweep; alone, it shifts inside
    state = state.apply(CacheWrite(name, "local"))
    if blocks:
        state = _blocked_panel(state, local, (row, vec, vf), rf * math.prod(f for _, f in blocks), hw)
    spatial = [a.name for a in state.stage(local).op.axes]
    reduce = [a.name for a in state.stage(local).op.reduce_axes]
    splits = [(ax, (f,)) for ax, f in blocks if ax != row] + \
        [(row, (blocks[-1][1], rf) if blocks else (rf,)), (vec, (vf,))]
    steps = {}
    for ax, f in splits:
        if math.prod(f) < state.stage(local).iter(ax).extent or blocks:
            steps[ax] = len(state.steps)
            state = state.apply(Split(local, ax, f))
    axes = _reuse_first(state.stage(local).op, [a for a in spatial if a not in (row, vec) or a in steps], vec)
    outer = [f"{a}.0" if a in steps else a for a in axes]
    inner = [f"{a}.1" if a in steps else a for a in (row, vec)]
    middle = [f"{ax}.1" for ax, _ in blocks]      # the row tiles of a block: one sweep of the reduction each
    tile = [f"{row}.2", inner[1]] if blocks else inner
    state, sweep, block = _reduce_block(state, local, reduce) if blocks else (state, reduce, [])
    state = state.apply(Reorder(local, tuple(outer + sweep + middle + block + tile)))
    inner = inner[1:] if blocks else inner
    epilogue = _epilogue(state, name)
    if epilogue is not None:  # the copy-out is the epilogue itself: the conv's output never goes to memory
        state = state.apply(ComputeInline(name))
        rename = dict(zip((a.name for a in state.stage(local).op.axes),
                          (a.name for a in state.stage(epilogue).op.axes)))
        outer, middle, inner = ([_renamed(a, rename) for a in names] for names in (outer, middle, inner))
        steps = {rename[a]: src for a, src in steps.items()}
    target = epilogue or name
    for ax, src in steps.items():
        state = state.apply(FollowSplit(target, ax, src, 1))
    state = state.apply(Reorder(target, tuple(outer + middle + inner)))
    if outer:
        state = state.apply(ComputeAt(local, target, outer[-1]))
    if blocks:
        state = _pack_panel(state, local, row, vec, vf, (sweep or [None])[-1])  # a slice, not a whole panel
    # tiles that overlap the row's end (shifted windows) would write the overlap from two threads, round-robin
    state = parallel(state, target, outer, hw, ranges=windows)
    state = state.apply(Annotate(local, state.stage(local).iters[-1].name, "vectorize"))
    state = state.apply(Annotate(target, inner[-1], "vectorize"))
    state = state.apply(Pragma(local, state.stage(local).iters[0].name, "auto_unroll_max_step", TILE_UNROLL))
    return state, {name, target}


def _row_blocks(op, vec: str, vf: int, row: str, rf: int, hw: HardwareParams) -> list:
    """[(axis, factor)] of the middle loops, outermost first, the row axis (its count of rf-row tiles) last; [] for
    a block of one tile. The block sweeps the reduction once per row tile, so the weights' panel of vf columns is
    read from cache by every tile instead of from memory (docs/perf-notes.md, "The default program"). The
    most tiles up to ROW_BLOCK rows that leave at least BLOCKS_PER_CORE blocks a core; when a block holds all of
    the row axis (a 7 x 7 conv), whole rows of the next spatial axis out join it."""
    steps = math.prod(a.extent for a in op.reduce_axes)
    if steps * vf * itemsize(op.dtype) <= SMALL_PANEL_BYTES and not _set_conflicts(op, row, vec, vf, steps):
        return []   # the whole panel stays in L1 anyway: blocking and packing only cost (1x1 convs, K = 64)
    extents = {a.name: a.extent for a in op.axes}
    parallel = math.prod(e for a, e in extents.items() if a != vec) // rf * -(-extents[vec] // vf)
    least = BLOCKS_PER_CORE * hw.num_cores

    row_bytes = _row_operand_bytes(op, row)

    def most(extent: int, rows: int) -> int:   # the largest divisor of extent that the limits allow
        return max((f for f in range(1, extent + 1) if extent % f == 0 and rows * f <= ROW_BLOCK and
                    parallel // f >= least and rows * f * row_bytes <= ROW_OPERAND_BYTES), default=1)
    tiles = -(-extents[row] // rf)
    m = most(tiles, rf)
    blocks, parallel = [(row, m)], parallel // m
    others = [a.name for a in op.axes if a.name not in (row, vec) and a.extent > 1]
    if m == tiles and others:
        d = most(extents[others[-1]], rf * m)
        blocks = [(others[-1], d)] * (d > 1) + blocks
    return blocks if math.prod(f for _, f in blocks) > 1 else []


def _row_operand_bytes(op, row: str) -> int:
    """Bytes that one row of the block reads over the whole reduction from a matmul-like row operand (GMM's A:
    subscripts are the row axis and reduce axes, plainly), 0 when there is none (a conv's input rows overlap)."""
    extents = {a.name: a.extent for a in op.reduce_axes}
    best = 0
    for r in reads(op.body):
        names = [i.name for i in r.indices if isinstance(i, Var)]
        if len(names) == len(r.indices) and row in names and any(n in extents for n in names):
            best = max(best, math.prod(extents.get(n, 1) for n in names) * itemsize(op.dtype))
    return best


def _set_conflicts(op, row: str, vec: str, vf: int, steps: int) -> bool:
    """Whether the panel's rows lie so far apart that they share a few L1 sets: at CONFLICT_STRIDE apart they
    fall in at most two of the 4 KB that one way of L1 spans, and more than L1_WAYS of them evict each other
    (GMM 512 on AVX2: a 512 x 16 panel, 32 KB, rows 2 KB apart, gains from packing; docs/perf-notes.md)."""
    panel = _panel(op, row, vec, vf)
    return panel is not None and steps > 2 * L1_WAYS and \
        panel.tensor.shape[-1] * itemsize(op.dtype) >= CONFLICT_STRIDE


def _reduce_block(state: State, local: str, reduce: list) -> tuple:
    """(state, the reduction loops outside the row blocks, those inside): the row blocks share each step of the
    outer ones, whose weights' slice (the inner reduction x the vector tile) then stays in cache. The innermost
    reduction is split to at most REDUCE_BLOCK; rows of a panel lie a whole output row apart in memory, and at 1024
    floats apart 1024 of them thrash a 16-way L2 (GMM 1024: the panel is re-read from L3 for every row tile).
    A shorter one takes the reductions outside it in while they fit: a conv over 3 channels would otherwise load
    and store its register tile every 3 steps (the C3D stem's 7 x 7 x 3 taps sweep as one block of 147)."""
    if not reduce:
        return state, reduce, []
    last = reduce[-1]
    extent = state.stage(local).iter(last).extent
    if extent <= REDUCE_BLOCK:
        inside = 1
        while inside < len(reduce) and extent < SHORT_REDUCE and \
                extent * state.stage(local).iter(reduce[-inside - 1]).extent <= REDUCE_BLOCK:
            inside += 1
            extent *= state.stage(local).iter(reduce[-inside]).extent
        return state, reduce[:-inside], reduce[-inside:]
    kc = divisor(extent, REDUCE_BLOCK // 4, REDUCE_BLOCK)
    if kc is None:   # no divisor near the block size (a prime extent): one sweep of the whole, unpacked slices
        return state, reduce[:-1], [last]
    state = state.apply(Split(local, last, (kc,)))
    return state, reduce[:-1] + [f"{last}.0"], [f"{last}.1"]


def _panel(op, row: str, vec: str, vf: int) -> Read | None:
    """The largest tensor that `op` reads along the vector axis but not the row axis in rows longer than the
    vector tile (the weights' panel: a matmul's B, a conv's kernel), else None."""
    return _largest([r for r in _reads_along_last(op, vec) if r.tensor.shape[-1] > vf and
                     not any(uses(i, row) for i in r.indices)])


def _reads_along_last(op, vec: str) -> list:
    """The reads of tensors whose last subscript moves with axis `vec`."""
    return [r for r in reads(op.body) if r.tensor is not None and r.indices and uses(r.indices[-1], vec)]


def _largest(tensor_reads: list) -> Read | None:
    return max(tensor_reads, key=lambda r: math.prod(r.tensor.shape)) if tensor_reads else None


def _blocked_panel(state: State, local: str, tile: tuple, block_rows: int, hw: HardwareParams) -> State:
    """Read the weights' panel from a copy blocked by the vector tile ([co // vf, ..., co % vf], made once per
    call by a parallel root stage) when each column block of it is re-read by at least LAYOUT_REREADS row
    blocks. A panel row's vf columns lie a whole weight row apart in the original, so the slices that the row
    blocks re-read occupy a few cache sets and are evicted between reads (a 3x3x3 conv's 27 taps: C3D
    14x14x256); blocked, each is one contiguous run that stays in L2, and no per-block packing is needed. Fewer
    re-reads pay for weights larger than the caches, each re-read from memory, when the compute is over
    LAYOUT_FLOPS_PER_BYTE per byte of them (the copy's one pass is then small beside it): C3D 7x7x512 (7 re-reads
    of 27 MB, 400 FLOP/byte); not T2D 4x4 (4 re-reads of 8 MB, 8 FLOP/byte: the copy costs more than it saves).
    Figures: docs/perf-notes.md, "The default program"."""
    row, vec, vf = tile
    op = state.stage(local).op
    panel = _panel(op, row, vec, vf)
    if panel is None or panel.tensor.shape[-1] % vf:
        return state
    rereads = math.prod(a.extent for a in op.axes if a.name != vec) // max(1, block_rows)
    nbytes = math.prod(panel.tensor.shape) * itemsize(op.dtype)
    flops = op_flops(op)
    large = nbytes >= LAYOUT_PANEL_BYTES and flops >= LAYOUT_FLOPS_PER_BYTE * nbytes
    # constant weights are copied once, not per call (ir/lowering/prepared.py): the blocked layout then costs nothing
    if rereads < (LAYOUT_MIN_REREADS if large else LAYOUT_REREADS) and panel.name not in state.dag.constants:
        return state
    state = state.apply(CacheRead(panel.name, "local", (local,), vf))
    return schedule_root(state, f"{panel.name}.local", hw)


def _pack_panel(state: State, local: str, row: str, vec: str, vf: int, anchor: str | None) -> State:
    """Copy the weights' slice that one step of the sweep reads (the reduction block x the vector tile) into a
    contiguous buffer at that step, the packing of GotoBLAS: the row blocks then read it from L1 instead of
    reading rows of the panel a whole weight row apart (conflict misses from L1 up; docs/perf-notes.md). Only a
    panel that is strided (its rows longer than the tile) and reused (m > 1) is worth the copy."""
    panel = _panel(state.stage(local).op, row, vec, vf)
    if anchor is None or panel is None:
        return state
    name = f"{panel.name}.local"
    state = state.apply(CacheRead(panel.name, "local", (local,)))
    state = state.apply(ComputeAt(name, local, anchor))
    return state.apply(Annotate(name, state.stage(name).iters[-1].name, "vectorize"))


def _renamed(iter_name: str, rename: dict) -> str:
    base, dot, part = iter_name.partition(".")
    return rename[base] + dot + part


def _same_element(r: Read, op) -> bool:
    """r reads the element op computes: each subscript is op's own axis (or 0 along an axis of extent 1)."""
    return len(r.indices) == len(op.axes) and all(
        i == a.var or (isinstance(i, Const) and i.value == 0 and a.extent == 1) for i, a in zip(r.indices, op.axes))


def _epilogue(state: State, name: str) -> str | None:
    """The root output stage that alone reads `name` (a cache-written conv, now a copy) through a chain of
    inlined element-wise stages of its shape (bias, batch-norm, ReLU, a residual add), else None."""
    shape = tuple(state.stage(name).op.shape)
    chain, roots = {name}, []
    for st in state.stages[state.stage_index(name) + 1:]:
        reads = [r for r in walk(st.op.body) if isinstance(r, Read) and r.name in chain]
        if not reads:
            continue
        if tuple(st.op.shape) != shape or st.op.combiner or not all(_same_element(r, st.op) for r in reads):
            return None
        if st.compute_at == "inline":
            chain.add(st.name)
        else:
            roots.append(st.name)
    if len(roots) != 1 or not state.is_output(roots[0]) or state.stage(roots[0]).compute_at != "root":
        return None
    return roots[0]


__all__ = ["block_size", "default_cpu_schedule", "weight_block"]
