"""Random annotation of GPU sketches (Ansor's GPU init rules): fill tile sizes, bind threads, cooperative
fetching of shared stages, unroll pragmas.

Thread binding of a multi-level-tiled root stage fuses its first-level spatial parts (and any untiled
extent-1 axes in front of them) into blockIdx.x, the second level into vthread and the third into threadIdx.x;
an untiled root stage fuses its spatial loops and splits them into blocks of a sampled thread count. A shared
stage's loops are fused and split by the consumer's thread count (a FollowFusedSplit, so mutating a tile size
keeps the two in step), and that part is bound to threadIdx.x.
"""
from __future__ import annotations

import random

from ...ir.schedule.state import ScheduleError, SplitRel, State
from ...ir.schedule.steps import Annotate, FollowFusedSplit, Fuse, Split
from ...search.annotate import NON_DIVISOR_PROB, add_unroll, divisors, factor_schemes, sample_lengths

GPU_UNROLL_CANDIDATES = (0, 16, 64, 512, 1024)
THREAD_CHOICES = (32, 64, 128, 256, 512)   # also the thread counts of a cross-thread reduction
WARP = 32
MAX_VTHREAD = 8
MAX_THREAD_OUTPUTS = 64    # accumulators per thread (vthreads x inner tile): past this, registers spill
MAX_REDUCE_TILE = 64       # reduction elements per shared-memory fetch (the two inner reduce levels)
TILE_TRIES = 20
PRIOR_DRAWS = 8       # joint tile draws compared by the soft prior
PRIOR_PROB = 0.75     # share of programs whose tiles come from the prior's pick


def _levels(st) -> dict:
    """{leaf iterator: tile level} for the split parts of the stage's spatial axes."""
    spatial = {a.name for a in st.op.axes}
    out = {}
    for rel in st.relations:
        if isinstance(rel, SplitRel) and rel.parent in spatial:
            out.update({c: k for k, c in enumerate(rel.children)})
    return out


def _fuse_bind(state: State, stage: str, names: list, annotation: str) -> State:
    if not names:
        return state
    if len(names) > 1:
        state = state.apply(Fuse(stage, tuple(names)))
    return state.apply(Annotate(stage, "@".join(names), annotation))


def _extent(st, names) -> int:
    n = 1
    for x in names:
        n *= st.iter(x).extent
    return n


def bind_tiled(task, state: State, name: str, levels: dict) -> State:
    st = state.stage(name)
    groups = {0: [], 1: [], 2: []}
    for it in st.iters:
        lv = levels.get(it.name)
        if lv is None and it.kind == "S" and not groups[1] and not groups[2]:
            groups[0].append(it.name)          # an untiled axis in front joins the block index
        elif lv in groups:
            groups[lv].append(it.name)
    threads = _extent(st, groups[2])
    total = _extent(st, [it.name for it in st.iters if it.kind == "S"])
    if threads < WARP and total > 2 * WARP:
        raise ScheduleError(f"{name}: {threads} threads per block (fewer than a warp)")
    if _extent(st, groups[1]) > MAX_VTHREAD:
        raise ScheduleError(f"{name}: vthread extent {_extent(st, groups[1])} > {MAX_VTHREAD}")
    state = _fuse_bind(state, name, groups[0], "blockIdx.x")
    state = _fuse_bind(state, name, groups[1], "vthread")
    return _fuse_bind(state, name, groups[2], "threadIdx.x")


def bind_plain(task, state: State, name: str, rng: random.Random) -> State:
    st = state.stage(name)
    spatial = []
    for it in st.iters:
        if it.kind != "S":
            break
        spatial.append(it.name)
    if not spatial:
        raise ScheduleError(f"{name}: no spatial loop to bind to threads")
    if len(spatial) > 1:
        state = state.apply(Fuse(name, tuple(spatial)))
    fused = "@".join(spatial)
    state = state.apply(Split(name, fused, (rng.choice(THREAD_CHOICES),)))
    state = state.apply(Annotate(name, f"{fused}.0", "blockIdx.x"))
    return state.apply(Annotate(name, f"{fused}.1", "threadIdx.x"))


def _cross_thread_iter(st) -> str | None:
    """The inner part of a cross-thread reduction's split reduce loop (CrossThreadReduction's sketch), if any."""
    reduce_splits = [r for r in st.relations if isinstance(r, SplitRel) and len(r.children) == 2
                     and all(st.iters[st.iter_index(c)].kind == "R" for c in r.children if c in
                             {it.name for it in st.iters})]
    names = [it.name for it in st.iters]
    for r in reduce_splits:
        inner, outer = r.children[1], r.children[0]
        if inner in names and outer in names and names.index(inner) + 1 == names.index(outer):
            return inner
    return None


def bind_cross_thread(task, state: State, name: str, inner: str) -> State:
    st = state.stage(name)
    spatial = [it.name for it in st.iters if it.kind == "S"]
    if not spatial:
        raise ScheduleError(f"{name}: a cross-thread reduction needs a spatial loop for the blocks")
    state = _fuse_bind(state, name, spatial, "blockIdx.x")
    return state.apply(Annotate(name, inner, "threadIdx.x"))


def bind_threads(task, state: State, rng: random.Random) -> State:
    for name in [s.name for s in state.stages]:
        st = state.stage(name)
        if st.compute_at != "root":
            continue
        levels = _levels(st)
        inner = _cross_thread_iter(st) if st.op.combiner else None
        if inner is not None:
            state = bind_cross_thread(task, state, name, inner)
        elif levels and max(levels.values()) >= 3:
            state = bind_tiled(task, state, name, levels)
        else:
            state = bind_plain(task, state, name, rng)
    return state


def cooperative_fetch(task, state: State, rng: random.Random) -> State:
    for st in [s for s in state.stages if s.scope == "shared" and s.compute_at == "attached"]:
        consumer = state.stage(st.attach[0])
        spatial = {a.name for a in consumer.op.axes}
        src = tuple(i for i, s in enumerate(state.steps) if isinstance(s, Split) and s.stage == consumer.name
                    and s.iter in spatial and len(s.lengths) >= 2)
        if not src:
            raise ScheduleError(f"{st.name}: its consumer {consumer.name} has no thread-level split")
        names = [it.name for it in st.iters]
        state = state.apply(Fuse(st.name, tuple(names))) if len(names) > 1 else state
        fused = "@".join(names)
        state = state.apply(FollowFusedSplit(st.name, fused, src, 1, True))
        state = state.apply(Annotate(st.name, f"{fused}.1", "threadIdx.x"))
    return state


def add_unroll_gpu(task, state: State, rng: random.Random) -> State:
    return add_unroll(task, state, rng, GPU_UNROLL_CANDIDATES)


GPU_INIT_RULES = (bind_threads, cooperative_fetch, add_unroll_gpu)


def _tile_splits(sketch: State) -> tuple[list, list]:
    """Indices of the undecided multi-level splits of the sketch: (spatial 5-level, reduce 3-level)."""
    sp, rd = [], []
    for i, step in enumerate(sketch.steps):
        if isinstance(step, Split) and any(x is None for x in step.lengths):
            (sp if len(step.lengths) == 4 else rd if len(step.lengths) == 2 else []).append(i)
    return sp, rd


def _schemes(rng: random.Random, extent: int, n: int, inner: int) -> tuple:
    """Factorizations to draw from: exact ones, or (as the CPU sampler sometimes does, and always for a prime
    extent) those of the extent rounded up to a multiple of 4, 8 or 16; lowering guards the remainder."""
    few = len(divisors(extent)) <= 2 and extent > 8
    if extent > 8 and (few or rng.random() < NON_DIVISOR_PROB):
        q = rng.choice([q for q in (4, 8, 16) if q < extent] or [2])
        return factor_schemes(-(-extent // q) * q, n, inner)
    return factor_schemes(extent, n, inner)


def _draw_spatial(rng, extents: dict, sp: list, inner: int) -> dict | None:
    """(vthread, thread, inner, innermost) per spatial axis, drawn axis by axis among the choices that keep
    the block within the limits: <= 8 vthreads, <= 1024 threads, <= MAX_THREAD_OUTPUTS accumulators per thread,
    and at least a warp of threads when the stage has that much work."""
    total = 1
    for i in sp:
        total *= extents[i]
    want = min(WARP, total)
    order = list(sp)
    rng.shuffle(order)
    out, vth, thr, outs = {}, 1, 1, 1
    for n, i in enumerate(order):
        last = n == len(order) - 1
        ok = [c for c in _schemes(rng, extents[i], 4, inner)
              if vth * c[0] <= MAX_VTHREAD and thr * c[1] <= 1024 and outs * c[0] * c[2] * c[3] <= MAX_THREAD_OUTPUTS
              and (not last or thr * c[1] >= want)]
        if not ok:
            return None
        c = rng.choice(ok)
        out[i], vth, thr, outs = c, vth * c[0], thr * c[1], outs * c[0] * c[2] * c[3]
    return out


def _penalty(draw: dict, axis_of: dict, operands: list) -> float:
    """How far a draw is from the usual shape of a fast GPU tile: ~128-256 threads, and many multiply-adds per
    operand a thread loads from shared memory (its tile's outputs over the loads they need: for a matmul tile
    of i x j outputs, i*j / (i + j)), without more than 64 accumulators."""
    import math
    threads = outs = 1
    tile = {}
    for i, (v, t, a, b) in draw.items():
        threads, outs = threads * t, outs * v * a * b
        tile[axis_of[i]] = v * a * b
    loads = sum(math.prod(tile.get(ax, 1) for ax in axes) for axes in operands) or 1
    return abs(math.log2(threads) - 7.5) - math.log2(outs / loads) + 2 * max(0.0, math.log2(outs) - 6)


def _prefer_balanced(rng: random.Random, draws: list, axis_of: dict, operands: list) -> dict:
    """A soft prior: most of the time the best of a few draws by _penalty, otherwise the first (the space stays
    whole: evolution and mutation reach every tiling)."""
    if rng.random() < PRIOR_PROB:
        return min(draws, key=lambda d: _penalty(d, axis_of, operands))
    return draws[0]


def _operand_axes(op) -> list:
    """For each tensor the stage reads, the stage's spatial axes its indices use."""
    from ...ir.program.expr import Read, free_vars, walk
    spatial = {a.name for a in op.axes}
    out = {}
    for r in walk(op.body):
        if isinstance(r, Read):
            out.setdefault(r.name, set()).update(v for i in r.indices for v in free_vars(i) if v in spatial)
    return list(out.values())


def _draw_reduce(rng, extents: dict, rd: list, inner: int) -> dict:
    out, red = {}, 1
    for i in rd:
        ok = [c for c in _schemes(rng, extents[i], 2, inner) if red * c[0] * c[1] <= MAX_REDUCE_TILE]
        c = rng.choice(ok) if ok else (1, 1)
        out[i], red = c, red * c[0] * c[1]
    return out


def fill_tile_sizes_gpu(task, sketch: State, rng: random.Random) -> State:
    """Tile sizes of the multi-level-tiled stage drawn within the block limits (Ansor draws them independently
    and discards most programs afterwards), then the sketch is replayed with them. Shared memory needs bound
    inference: it is checked when the program is lowered."""
    sp, rd = _tile_splits(sketch)
    if not sp:
        state = State.initial(task.dag)
        for step in sketch.steps:
            if isinstance(step, Split) and any(x is None for x in step.lengths):
                step = _fill_other_split(rng, state, step, task.hw.max_innermost_split_factor)
            state = state.apply(step)
        return state
    state = State.initial(task.dag)
    extents = {}
    for i, step in enumerate(sketch.steps):
        if i in sp or i in rd:
            extents[i] = state.stage(step.stage).iter(step.iter).extent
        state = state.apply(step)
    inner = task.hw.max_innermost_split_factor
    draws = []
    for _ in range(TILE_TRIES):
        d = _draw_spatial(rng, extents, sp, inner)
        if d is not None:
            draws.append(d)
            if len(draws) == PRIOR_DRAWS:
                break
    if not draws:
        raise ScheduleError("no GPU tile sizes within the block limits")
    tiled = state.stage(sketch.steps[sp[0]].stage).op
    spatial = _prefer_balanced(rng, draws, {i: sketch.steps[i].iter for i in sp}, _operand_axes(tiled))
    lengths = {**spatial, **_draw_reduce(rng, extents, rd, inner)}
    state = State.initial(task.dag)
    for i, step in enumerate(sketch.steps):
        if i in lengths:
            step = Split(step.stage, step.iter, lengths[i])
        elif isinstance(step, Split) and any(x is None for x in step.lengths):
            step = _fill_other_split(rng, state, step, inner)
        state = state.apply(step)
    return state


def _fill_other_split(rng, state: State, step: Split, inner: int) -> Split:
    """A cross-thread reduction's split takes a multiple of the warp (warp shuffles need whole warps); others
    are drawn as on the CPU."""
    it = state.stage(step.stage).iter(step.iter)
    if it.kind == "R" and len(step.lengths) == 1:
        return Split(step.stage, step.iter, (rng.choice([t for t in THREAD_CHOICES if t <= max(WARP, it.extent)]),))
    return Split(step.stage, step.iter, sample_lengths(rng, it.extent, len(step.lengths), inner))


def annotate_gpu(task, sketch: State, rng: random.Random) -> State:
    state = fill_tile_sizes_gpu(task, sketch, rng)
    for rule in GPU_INIT_RULES:
        state = rule(task, state, rng)
    return state





def sample_gpu(task, n: int, seed: int = 0, sketches: list | None = None, max_tries: int | None = None) -> list:
    """n distinct complete GPU programs of `task`'s DAG (annotate.sample under the CUDA policy, whatever the
    task's own target); same seed, same programs. Shared memory is checked when a program is lowered."""
    from ...search.annotate import sample
    from ...search.task import SearchTask
    gpu_task = task if getattr(task.policy, "kind", "") == "cuda" else SearchTask(task.dag, "cuda")
    return sample(gpu_task, n, seed=seed, sketches=sketches, max_tries=max_tries)


__all__ = ["annotate_gpu", "sample_gpu", "GPU_INIT_RULES", "GPU_UNROLL_CANDIDATES"]
