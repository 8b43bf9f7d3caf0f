"""SearchPolicy: which sketch rules and init (annotation) rules build a target's search space.

A task carries its policy (SearchTask.policy); sketch generation and annotation read the rule lists from it,
so that a GPU policy (thread binding, shared-memory stages) plugs in without touching the tuner.
"""
from __future__ import annotations

from typing import Callable, Protocol, Sequence

from .annotate import CPU_INIT_RULES
from .mutate import MUTATORS, WEIGHTS
from .rules import Rule, default_cpu_rules


class SearchPolicy(Protocol):
    def sketch_rules(self) -> Sequence[Rule]:
        """Derivation rules, tried in order per stage (search/sketch.py)."""

    def init_rules(self) -> Sequence[Callable]:
        """Annotation rules (task, state, rng) -> state, applied in order to complete a sketch."""

    def measured_on(self, backend) -> None:
        """The tuner is about to measure with `backend`: a policy may read the device's limits from it."""

    weights: dict      # mutation kind -> probability (search/mutate.py)
    mutators: dict     # mutation kind -> function (task, state, rng) -> state | None


class CpuPolicy:
    """Ansor's CPU space: multi-level tiling "SSRSRS", cache writes, rfactor, fusion; then tile sizes, compute
    locations, parallel outer loops, the unroll pragma and vectorized inner loops."""

    weights = WEIGHTS
    mutators = MUTATORS

    def __init__(self, structure: str = "SSRSRS"):
        self.structure = structure

    def sketch_rules(self) -> list:
        return default_cpu_rules(self.structure)

    def init_rules(self) -> tuple:
        return CPU_INIT_RULES

    def measured_on(self, backend) -> None:
        """Nothing to learn from the backend: the CPU's limits are the target's."""


def policy_for(target) -> SearchPolicy:
    """The default policy of a target: its plug-in's."""
    from ..targets import parse, plugin
    return plugin(target).policy(parse(target))


__all__ = ["SearchPolicy", "CpuPolicy", "policy_for"]
