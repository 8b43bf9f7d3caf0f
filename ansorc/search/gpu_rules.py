"""GPU sketch rules (Ansor's CUDA rule list, section 1.4 of ansor-reference.md), on the CPU rules' machinery.

Order: always-inline (every element-wise, non-output stage), cache-write to local, multi-level tiling
"SSSRRSRS" with fusion of an element-wise consumer at the thread level, plain multi-level tiling, skip. Ansor's
cache-read rule runs on the producer stages; here placeholders are not stages, so a tiled stage adds its cache
reads itself: each tensor it reads (directly, or through an inlined element-wise stage such as padding) gets a
".shared" copy computed at the stage's outermost reduce tile. Cross-thread reduction is not implemented yet: a
reduction with little spatial work runs one thread per output element.
"""
from __future__ import annotations

from ..ir.dag import needs_multi_level_tiling
from ..ir.state import State
from ..ir.steps import CacheRead, CacheWrite, ComputeAt, ComputeInline
from .rules import (APPLY, APPLY_AND_SKIP_REST, SKIP, Rule, SkipStage, consumers, elementwise_consumer,
                    fuse_consumer, has_cache_write_stage, multi_level_tile)

GPU_STRUCTURE = "SSSRRSRS"
GPU_FUSION_LEVEL = 3   # the consumer follows the block, vthread and thread levels


def _is_cache_stage(name: str) -> bool:
    return name.endswith((".local", ".shared"))


class AlwaysInlineGPU(Rule):
    name = "always-inline-gpu"

    def condition(self, task, state, i):
        st = state.stages[i]
        if state.is_output(st.name) or st.op.combiner or st.compute_at == "inline" or _is_cache_stage(st.name):
            return SKIP
        return APPLY_AND_SKIP_REST if consumers(state, st.name) else SKIP

    def apply(self, task, state, i):
        return [(state.apply(ComputeInline(state.stages[i].name)), i - 1)]


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
    return [AlwaysInlineGPU(), AddCacheWriteGPU(), MultiLevelTilingGPU(), SkipStage()]


__all__ = ["default_gpu_rules", "GPU_STRUCTURE", "add_shared_cache_reads"]
