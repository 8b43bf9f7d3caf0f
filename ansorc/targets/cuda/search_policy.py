"""The search policy for CUDA targets: which sketch rules, which annotation, which mutations, and which
programs are invalid before anything is built. The tuner asks the task's policy instead of branching on the
target (the CPU policy is the default rules, annotation and mutations)."""
from __future__ import annotations

import random

from .codegen_target import CudaTarget
from .ir_passes import check_kernel, split_kernels
from ...ir.schedule.state import ScheduleError, State
from .search_annotate import (GPU_UNROLL_CANDIDATES, MAX_VTHREAD, WARP, add_unroll_gpu, bind_threads, cooperative_fetch,
                              fill_tile_sizes_gpu)
from .search_rules import default_gpu_rules
from ...search.mutate import mutate_tile_size, mutate_unroll

GPU_WEIGHTS = {"tile_size": 0.90, "unroll": 0.10}   # Ansor's GPU mutation weights


def state_within_limits(state: State, target: CudaTarget) -> bool:
    """Cheap checks on a complete state, without lowering: every root stage's thread and vthread extents, and
    the accumulators of the stage computed at each thread."""
    for st in state.stages:
        if st.compute_at != "root":
            continue
        threads = [it.extent for it in st.iters if it.annotation == "threadIdx.x"]
        vth = [it.extent for it in st.iters if it.annotation == "vthread"]
        total = 1
        for it in st.iters:
            if it.kind == "S":
                total *= it.extent
        if not threads or threads[0] > target.max_threads_per_block or (threads[0] < WARP and total > 2 * WARP):
            return False
        if vth and vth[0] > MAX_VTHREAD:
            return False
    return True


def program_within_limits(func, target: CudaTarget) -> bool:
    """Every kernel of a lowered program within the device limits (shared memory, threads, barriers)."""
    try:
        for k in split_kernels(func)[0]:
            check_kernel(k, target)
    except ScheduleError:
        return False
    return True


def mutate_tile_size_gpu(task, state: State, rng: random.Random) -> State | None:
    child = mutate_tile_size(task, state, rng)
    return child if child is not None and state_within_limits(child, task.policy.target) else None


def mutate_unroll_gpu(task, state: State, rng: random.Random) -> State | None:
    return mutate_unroll(task, state, rng, GPU_UNROLL_CANDIDATES)


GPU_MUTATORS = {"tile_size": mutate_tile_size_gpu, "unroll": mutate_unroll_gpu}


class GpuPolicy:
    """Sketch rules, annotation, mutations and validity for a CUDA target."""
    kind = "cuda"
    weights = GPU_WEIGHTS
    mutators = GPU_MUTATORS

    def __init__(self, target: CudaTarget):
        self.target = target

    def sketch_rules(self) -> list:
        return default_gpu_rules()

    def measured_on(self, backend) -> None:
        """A CUDA backend reports the present GPU's limits; a remote or fake one may not."""
        limits = getattr(backend, "limits", None)
        if limits is not None:
            self.use_device_limits(limits())

    def use_device_limits(self, limits: dict | None) -> None:
        """Search within what the present GPU reports (shared memory, threads, registers) from now on."""
        self.target = self.target.with_limits(limits)

    def init_rules(self) -> tuple:
        return (fill_tile_sizes_gpu, bind_threads, cooperative_fetch, add_unroll_gpu, self.check_limits)

    def check_limits(self, task, state: State, rng: random.Random) -> State:
        if not state_within_limits(state, self.target):
            raise ScheduleError("the drawn program exceeds the block limits")
        return state

    def valid(self, func) -> bool:
        return program_within_limits(func, self.target)





def default_gpu_schedule(task, tries: int = 64) -> State:
    """A GPU program for an untuned task (compiled with trials=0): the first of a fixed-seed sample that fits
    the device, so the same workload always gets the same program."""
    from ...ir.lowering.lower import lower
    from ...search.annotate import sample
    for st in sample(task, tries, seed=0):
        if program_within_limits(lower(st, "probe", passes=False), task.policy.target):
            return st
    raise ScheduleError("no GPU program within the device limits was found for this workload")
__all__ = ["GpuPolicy", "state_within_limits", "program_within_limits", "default_gpu_schedule", "GPU_WEIGHTS"]
