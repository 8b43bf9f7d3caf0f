"""GPU sketch rules (Ansor's CUDA rule list, section 1.4 of ansor-reference.md), on the CPU rules' machinery.

Order: always-inline (every element-wise, non-output stage), cache-write to local, multi-level tiling
"SSSRRSRS" with fusion of an element-wise consumer at the thread level, plain multi-level tiling, skip. Ansor's
cache-read rule runs on the producer stages; here placeholders are not stages, so a tiled stage adds its cache
reads itself: each tensor it reads (directly, or through an inlined element-wise stage such as padding) gets a
".shared" copy computed at the stage's outermost reduce tile. A long reduction with little spatial work gets a
cross-thread reduction sketch (its threads combine partial results with warp shuffles and shared memory).
"""
from __future__ import annotations

from ...ir.program.dag import needs_multi_level_tiling
from ...ir.schedule.inline_cost import inlining_bloats
from ...ir.schedule.state import State
from ...ir.schedule.steps import CacheRead, CacheWrite, ComputeAt, ComputeInline, Fuse, Reorder, Split
from ...search.rules import (APPLY, APPLY_AND_SKIP_REST, SKIP, Rule, SkipStage, consumers, elementwise_consumer,
                             fuse_consumer, has_cache_write_stage, multi_level_tile)

GPU_STRUCTURE = "SSSRRSRS"
GPU_FUSION_LEVEL = 3   # the consumer follows the block, vthread and thread levels
WARP = 32


def _is_cache_stage(name: str) -> bool:
    return name.endswith((".local", ".shared"))


class AlwaysInlineGPU(Rule):
    name = "always-inline-gpu"

    def condition(self, task, state, i):
        st = state.stages[i]
        if state.is_output(st.name) or st.op.combiner or st.compute_at == "inline" or _is_cache_stage(st.name):
            return SKIP
        return APPLY_AND_SKIP_REST if consumers(state, st.name) and not inlining_bloats(state, st.name) else SKIP

    def apply(self, task, state, i):
        return [(state.apply(ComputeInline(state.stages[i].name)), i - 1)]


def _extents(its) -> int:
    n = 1
    for it in its:
        n *= it.extent
    return n


class CrossThreadReduction(Rule):
    """The threads of a block share one reduction: its reduce loops fused and split, the inner part bound to
    threadIdx.x (by annotation), when the reduction is long next to the spatial work (Ansor: S < R for a stage
    that needs tiling, R > warp size otherwise). APPLY: the plain branch stays."""
    name = "cross-thread-reduction"

    def condition(self, task, state, i):
        st = state.stages[i]
        if not st.op.combiner or st.relations or _is_cache_stage(st.name) or has_cache_write_stage(state, st.name):
            return SKIP
        spatial = _extents(it for it in st.iters if it.kind == "S")
        reduce = _extents(it for it in st.iters if it.kind == "R")
        wanted = spatial < reduce if needs_multi_level_tiling(st.op) else reduce > WARP
        return APPLY if wanted else SKIP

    def apply(self, task, state, i):
        st = state.stages[i]
        red = [it.name for it in st.iters if it.kind == "R"]
        if len(red) > 1:
            state = state.apply(Fuse(st.name, tuple(red)))
        fused = "@".join(red)
        state = state.apply(Split(st.name, fused, (None,)))
        order = [it.name for it in st.iters if it.kind == "S"] + [f"{fused}.1", f"{fused}.0"]
        return [(state.apply(Reorder(st.name, tuple(order))), i - 1)]


class AddCacheWriteGPU(Rule):
    name = "add-cache-write-gpu"

    def condition(self, task, state, i):
        st = state.stages[i]
        if _is_cache_stage(st.name) or has_cache_write_stage(state, st.name) or st.relations:
            return SKIP
        if needs_multi_level_tiling(st.op) and elementwise_consumer(state, st.name) is None:
            return APPLY_AND_SKIP_REST
        return SKIP

    def apply(self, task, state, i):
        return [(state.apply(CacheWrite(state.stages[i].name, "local")), i)]


def add_shared_cache_reads(state: State, name: str) -> State:
    """Each tensor `name` reads, if no other stage reads it, is copied into shared memory at the outermost
    reduce tile of `name` (its last first-level reduce iterator)."""
    st = state.stage(name)
    first_r = [it.name for it in st.iters if it.kind == "R" and it.name.endswith(".0")]
    if not first_r:
        return state
    anchor = first_r[-1]
    for t in st.op.inputs:
        if _is_cache_stage(t.name) or [r for r in state.readers(t.name)] != [name]:
            continue
        state = state.apply(CacheRead(t.name, "shared", (name,)))
        state = state.apply(ComputeAt(f"{t.name}.shared", name, anchor))
    return state


class MultiLevelTilingGPU(Rule):
    """Tile "SSSRRSRS"; with an element-wise consumer, the consumer follows the first three spatial levels and
    the stage is computed at its thread level."""
    name = "multi-level-tiling-gpu"

    def condition(self, task, state, i):
        st = state.stages[i]
        return APPLY_AND_SKIP_REST if not st.relations and needs_multi_level_tiling(st.op) else SKIP

    def apply(self, task, state, i):
        name = state.stages[i].name
        consumer = elementwise_consumer(state, name)
        tiled, split_steps = multi_level_tile(state, name, GPU_STRUCTURE)
        if consumer is not None:
            tiled = fuse_consumer(tiled, name, consumer, split_steps, GPU_FUSION_LEVEL)
        return [(add_shared_cache_reads(tiled, name), i - 1)]


def default_gpu_rules() -> list:
    return [AlwaysInlineGPU(), CrossThreadReduction(), AddCacheWriteGPU(), MultiLevelTilingGPU(), SkipStage()]


__all__ = ["default_gpu_rules", "GPU_STRUCTURE", "add_shared_cache_reads"]
