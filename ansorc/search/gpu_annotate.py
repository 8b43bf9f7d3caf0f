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

from ..ir.state import ScheduleError, SplitRel, State
from ..ir.steps import Annotate, FollowFusedSplit, Fuse, Pragma, Split
from .annotate import fill_tile_sizes

GPU_UNROLL_CANDIDATES = (0, 16, 64, 512, 1024)
THREAD_CHOICES = (32, 64, 128, 256, 512)
WARP = 32
MAX_VTHREAD = 8


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


def bind_threads(task, state: State, rng: random.Random) -> State:
    for name in [s.name for s in state.stages]:
        st = state.stage(name)
        if st.compute_at != "root":
            continue
        levels = _levels(st)
        if levels and max(levels.values()) >= 3:
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
    for st in state.stages:
        if st.compute_at != "inline" and st.op.combiner and st.iters:
            state = state.apply(Pragma(st.name, st.iters[0].name, "auto_unroll_max_step",
                                       rng.choice(GPU_UNROLL_CANDIDATES)))
    return state


GPU_INIT_RULES = (bind_threads, cooperative_fetch, add_unroll_gpu)


def annotate_gpu(task, sketch: State, rng: random.Random) -> State:
    state = fill_tile_sizes(task, sketch, rng)
    for rule in GPU_INIT_RULES:
        state = rule(task, state, rng)
    return state


__all__ = ["annotate_gpu", "GPU_INIT_RULES", "GPU_UNROLL_CANDIDATES"]
