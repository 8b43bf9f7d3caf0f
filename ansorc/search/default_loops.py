"""Loop-level pieces of the default CPU schedule (search/default_schedule.py): one root stage vectorized along a
contiguous innermost axis, reductions between its outer loops and the vector loop, the outer loops fused into one
parallel loop; and the read-pattern tests those choices rest on."""
from __future__ import annotations

from ..ir.program.dag import transposed_axes
from ..ir.program.expr import Binary, Const, Read, Select, Var, free_vars, reads
from ..ir.passes.skip import contribution_conditions
from ..ir.schedule.state import State
from ..ir.schedule.steps import Annotate, Fuse, Pragma, Reorder, Split
from .rules import tile_transpose
from .task import HardwareParams

PARALLEL_PER_CORE = 16   # parallel iterations wanted per core (as the parallelize init rule)
UNROLL_STEPS = 16        # auto_unroll_max_step of reductions: small kernel windows (3x3) unroll
# Below this many FLOPs a kernel runs in well under a microsecond on one core, less than waking a second
# thread costs (an RNN's per-step gate update: 96 outputs). Larger thresholds (16-64 K) were tried and lost on
# BERT's and MobileNet's small kernels (docs/perf-notes.md).
SERIAL_FLOPS = 4096


def schedule_root(state: State, name: str, hw: HardwareParams) -> State:
    """One root stage: its innermost spatial loop vectorized (split by a vector-sized factor when long) where the
    reads are contiguous along it, the reduction loops between the outer loops and that vector loop, the outer
    loops fused into one parallel loop."""
    st = state.stage(name)
    spatial = [it for it in st.iters if it.kind == "S"]
    reduce = [it.name for it in st.iters if it.kind == "R"]
    inner, outer = [], [it.name for it in spatial]
    last = spatial[-1] if spatial else None
    factor = row_vector(st.op, last.name, last.extent, hw) if last is not None else None
    if factor:
        outer = outer[:-1]
        if factor < last.extent:
            state = state.apply(Split(name, last.name, (factor,)))
            outer, inner = outer + [f"{last.name}.0"], [f"{last.name}.1"]
        else:
            inner = [last.name]
    order = outer + reduce + inner
    if order != [it.name for it in state.stage(name).iters]:
        state = state.apply(Reorder(name, tuple(order)))
    state = parallel(state, name, outer, hw)
    if inner:
        state = state.apply(Annotate(name, inner[0], "vectorize"))
    if reduce:
        state = state.apply(Pragma(name, state.stage(name).iters[0].name, "auto_unroll_max_step", UNROLL_STEPS))
    return state


def parallel(state: State, name: str, outer: list, hw: HardwareParams, ranges: bool = False) -> State:
    """Fuse the leading outer loops until there are enough iterations for the cores, and parallelize them; with
    `ranges`, in one range per thread unless skipped work makes the ranges uneven (pragma parallel_ranges,
    ir/passes/skip.py; without it, a skip guard reading the loop deals its iterations out round-robin)."""
    if state.dag.flop_count < SERIAL_FLOPS:
        return state
    st = state.stage(name)
    take, prod = [], 1
    for n in outer:
        take.append(n)
        prod *= st.iter(n).extent
        if prod >= PARALLEL_PER_CORE * hw.num_cores:
            break
    if prod <= 1:
        return state
    if len(take) > 1:
        state = state.apply(Fuse(name, tuple(take)))
    state = state.apply(Annotate(name, "@".join(take), "parallel"))
    return state.apply(Pragma(name, "@".join(take), "parallel_ranges", 1)) if ranges else state


def row_vector(op, axis: str, extent: int, hw: HardwareParams) -> int | None:
    """Lanes of a vector along `op`'s spatial axis `axis` (its innermost): vector_factor, or the block of a
    blocked layout, when every read along it is contiguous; None when the output rows take no vector."""
    factor = vector_factor(extent, hw, op.dtype)
    factor = (block_size(op, axis) or factor) if factor else None
    return factor if factor and contiguous_along(op, axis, factor) else None


def vector_factor(extent: int, hw: HardwareParams, dtype: str) -> int | None:
    """Lanes of the vector loop: the whole extent when short, else the largest divisor between one vector and
    the vectorize limit, else one vector (a guarded tail); None when the loop is too short to gain."""
    lanes = hw.lanes(dtype)
    if extent < min(4, lanes):
        return None
    if extent <= hw.max_vectorize_elems:
        return extent
    fits = [f for f in range(lanes, hw.max_vectorize_elems + 1) if extent % f == 0]
    return max(fits) if fits else lanes


def contiguous_along(op, var: str, factor: int | None = None) -> bool:
    """Every read that depends on `var` has it in its last subscript and elsewhere at most as `var // factor`
    (a blocked layout: conv weights packed by blocks of output channels, read w[co // B, ..., co % B]): a vector
    of `factor` consecutive outputs then reads consecutive (or strided by a small step) elements, not a gather
    across rows."""
    for r in reads(op.body):
        for i in r.indices[:-1]:
            if uses(i, var) and not (_block_of(i, var) and i.b.value == factor):
                return False
    return True


def block_size(op, var: str) -> int | None:
    """c when some read subscripts `var // c` (a blocked layout), else None: a vector along `var` must then be
    exactly c long, or its reads would be gathers."""
    for r in reads(op.body):
        for i in r.indices[:-1]:
            if _block_of(i, var):
                return i.b.value
    return None


def uses(e, var: str) -> bool:
    return var in free_vars(e)


def _block_of(e, var: str) -> bool:
    """e is `var // c` (c a positive constant)."""
    return isinstance(e, Binary) and e.op == "//" and isinstance(e.a, Var) and e.a.name == var and \
        isinstance(e.b, Const) and e.b.value > 0


def divisor(extent: int, lo: int, hi: int) -> int | None:
    fits = [f for f in range(max(1, lo), min(hi, extent) + 1) if extent % f == 0]
    return max(fits) if fits else None


def vector_tile(extent: int, lanes: int, most: int) -> int | None:
    """Lanes of a register tile's vector part: whole vectors dividing the axis (104: 8, not 13 with 5 scalar
    lanes), else whichever of a divisor between one vector and `most` and a guarded tile of whole vectors leaves
    fewer lanes idle (AVX-512's 440 channels: 32 guarded, 98% busy, not 22 = one vector and 6 lanes, 69%)."""
    whole = next((v for v in range(most, lanes - 1, -lanes) if extent % v == 0), None)
    if whole:
        return whole
    split, guarded = divisor(extent, lanes, most), guarded_vectors(extent, lanes, most)
    if split and guarded:
        return guarded if extent / (-(-extent // guarded) * guarded) > split / (-(-split // lanes) * lanes) else split
    return split or guarded


def guarded_vectors(extent: int, lanes: int, most: int) -> int | None:
    """`most` lanes or one vector, not dividing `extent` (ViT's 197 tokens), if the last tile idles <= 15%."""
    return next((v for v in (most, lanes) if fills(extent, v)), None)


def fills(extent: int, tile: int) -> bool:
    """Tiles of `tile` cover `extent` leaving at most 15% of their points idle (the guarded last one's)."""
    return extent >= 0.85 * -(-extent // tile) * tile


def padding_of_depthwise(dag, op) -> bool:
    """A zero-padding stage (tag "pad", or a select of one read against 0, as ansorc.workloads writes it) read only
    by reductions over its window alone (a depthwise conv, a pool: each reduce axis indexes the input beside an
    output axis, none sums channels): inlined, its border test costs less than writing and reading back a padded
    copy of the input, which such a reduction reads only once per tap (docs/perf-notes.md, "The default program")."""
    body = op.body
    if op.tag != "pad" and (op.combiner or not isinstance(body, Select) or not isinstance(body.t, Read) or
                            not isinstance(body.f, Const) or body.f.value != 0):
        return False
    ops = {o.name: o for o in dag.compute_ops}
    readers = [ops.get(n) for n in dag.consumers(op.name)]
    return bool(readers) and all(r is not None and r.combiner and len(r.reduce_axes) <= 2 and
                                 _window_only(r, op.name) for r in readers)


def concat_into_elementwise(dag, op) -> bool:
    """A Concat (a select chain between reads, on index conditions, net/ops/shape.py) read only by element-wise
    stages of its own shape (DenseNet's BatchNorm + ReLU after each concat): inlined, the reader's loop over the
    concat axis is cut into one piece per input (ir/passes/partition.py) and the concat is never written out."""
    if op.combiner or not _choice_chain(op.body):
        return False
    ops = {o.name: o for o in dag.compute_ops}
    readers = [ops.get(n) for n in dag.consumers(op.name)]
    shape = [a.extent for a in op.axes]
    return bool(readers) and all(r is not None and not r.combiner and [a.extent for a in r.axes] == shape
                                 for r in readers)


def _choice_chain(e, top: bool = True) -> bool:
    """select(c, read, rest) on index conditions, rest a read or another such select; the innermost else arm may
    be a constant (the chain's unreached 0), the outermost not (that would be padding)."""
    if not isinstance(e, Select) or not isinstance(e.t, Read) or reads(e.cond):
        return False
    return isinstance(e.f, Read) or _choice_chain(e.f, False) or (not top and isinstance(e.f, Const))


def _window_only(reader, name: str) -> bool:
    """Every subscript of `reader`'s reads of `name` that uses a reduce axis uses an output axis too (h + rh)."""
    out = [a.name for a in reader.axes]
    return all(any(uses(i, o) for o in out) for r in reads(reader.body) if r.name == name for i in r.indices
               if any(uses(i, a.name) for a in reader.reduce_axes))


def taps_past_edges(state: State, op, axis: str) -> bool:
    """Whether some tap of a sum reads the zero padding along `axis` (a conv's pad[w + rw], pad = select(in
    bounds, x, 0)): a skip condition of ir/passes/skip.py reads the axis and a reduce axis. Lowering then writes the tap
    loop out around a register tile that covers the axis (ir/passes/tile_edges.py)."""
    if op.combiner != "sum":
        return False

    def producer(name):   # a materialized stage's body, as lowering's skip conditions chase it
        if not state.has_stage(name) or state.stage(name).op.combiner:
            return None
        return [a.name for a in state.stage(name).op.axes], state.stage(name).op.body
    reduce = {a.name for a in op.reduce_axes}
    return any(axis in free_vars(c) and free_vars(c) & reduce for c in contribution_conditions(op.body, 0, producer))


__all__ = ["block_size", "contiguous_along", "divisor", "padding_of_depthwise", "parallel", "row_vector",
           "transpose_tiled", "vector_tile", "fills",
           "schedule_root", "taps_past_edges", "uses", "vector_factor"]


def transpose_tiled(state: State, name: str, hw: HardwareParams) -> State | None:
    """A copy across a transposition (ir.dag.transposed_axes) in square tiles of about one vector: the write axis
    w split by a vector and vectorized (its reads gathered from tile rows that stay in L1), the read axis r by up
    to as many; None when either extent has no such factor."""
    st = state.stage(name)
    axes = transposed_axes(st.op)
    if axes is None:
        return None
    w, r = axes
    lanes = hw.lanes(st.op.dtype)
    fw, fr = divisor(st.iter(w).extent, min(4, lanes), lanes), divisor(st.iter(r).extent, 2, lanes)
    if fw is None or fr is None:
        return None
    state, outer = tile_transpose(state, name, axes, (fw, fr))
    state = parallel(state, name, outer, hw)
    return state.apply(Annotate(name, f"{w}.1", "vectorize"))
