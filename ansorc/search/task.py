"""SearchTask: the unit of search (one DAG, one target, the hardware it runs on)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..ir.program.dag import ComputeDAG
from .policy import CpuPolicy, SearchPolicy, policy_for


@dataclass(frozen=True)
class HardwareParams:
    num_cores: int = field(default_factory=lambda: os.cpu_count() or 1)
    vector_bytes: int = 64          # AVX-512; the target fills this in
    vector_registers: int = 32      # AVX-512's zmm0-31; the cost model sizes register tiles from it
    cache_line_bytes: int = 64
    max_innermost_split_factor: int = 64
    max_vectorize_elems: int = 64   # product of the vectorized iterators' extents

    def lanes(self, dtype: str = "float32") -> int:
        return max(1, self.vector_bytes // (8 if dtype in ("float64", "int64") else 4))


def hardware_params(target: str) -> HardwareParams:
    """The search's view of a target (its plug-in's): core count and vector width come from the Target."""
    from ..targets import parse, plugin
    return plugin(target).hardware_params(parse(target))


@dataclass(eq=False)
class SearchTask:
    """policy: the sketch and init rules of the search space (search/policy.py); by default the target's.
    cold_inputs: names of inputs that the deployment reads from memory rather than warm from the kernel before
    (a network's weights); programs are timed with those evicted from every cache before each call."""
    dag: ComputeDAG
    target: str = "native"
    hw: HardwareParams = field(default_factory=HardwareParams)
    policy: SearchPolicy = field(default_factory=CpuPolicy)
    cold_inputs: tuple = ()

    def __init__(self, dag, target: str = "native", hw: HardwareParams | None = None,
                 policy: SearchPolicy | None = None, cold_inputs=()):
        self.dag = dag if isinstance(dag, ComputeDAG) else ComputeDAG(dag)
        self.target = target
        self.hw = hw or hardware_params(target)
        self.policy = policy or policy_for(target)
        self.cold_inputs = tuple(cold_inputs)

    @property
    def workload_key(self) -> str:
        return self.dag.workload_key
