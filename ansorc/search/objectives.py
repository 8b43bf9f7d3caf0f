"""The task scheduler's objectives (the Ansor paper's Table 2): a function of every task's best latency.

Each objective maps the list of task latencies g (seconds, one per task; NO_PROGRAM for a task without a valid
program yet) to the value the scheduler lowers. S(j) below is the set of tasks of network j, w_i the number of
times task i occurs in its network. The scheduler differentiates objectives numerically, so any callable works.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

NO_PROGRAM = 1e10  # TVM's latency for a task that has no valid program yet


def _network_latency(g, weights, members) -> float:
    return sum(weights[i] * g[i] for i in members)


@dataclass(frozen=True)
class WeightedSum:
    """f1: sum over networks of sum_{S(j)} w_i g_i (the default; one network = its estimated latency)."""
    weights: tuple

    def __call__(self, g) -> float:
        return sum(w * x for w, x in zip(self.weights, g))


@dataclass(frozen=True)
class LatencyRequirement:
    """f2: sum_j max(latency_j, L_j): a network that meets its requirement L_j stops drawing trials."""
    weights: tuple
    networks: tuple        # per network: tuple of task indices
    requirements: tuple    # per network: L_j in seconds

    def __call__(self, g) -> float:
        return sum(max(_network_latency(g, self.weights, m), req) for m, req in zip(self.networks, self.requirements))


@dataclass(frozen=True)
class GeomeanSpeedup:
    """f3: -(prod_j B_j / latency_j)^(1/m): the geometric-mean speedup over reference latencies B_j, negated so
    that lower is better like the others."""
    weights: tuple
    networks: tuple
    references: tuple      # per network: B_j in seconds

    def __call__(self, g) -> float:
        logs = [math.log(ref / max(_network_latency(g, self.weights, m), 1e-30))
                for m, ref in zip(self.networks, self.references)]
        return -math.exp(sum(logs) / len(logs))


def networks_or_one(n_tasks: int, networks) -> tuple:
    """Task indices per network; all tasks form one network when none are given."""
    if networks is None:
        return (tuple(range(n_tasks)),)
    out = tuple(tuple(int(i) for i in m) for m in networks)
    if sorted(i for m in out for i in m) != list(range(n_tasks)):
        raise ValueError("networks must assign every task index 0..n-1 to exactly one network")
    return out


def make_objective(name, weights, networks=None, requirements=None, references=None):
    """"f1" (weighted sum; also "f4", which is f1 with per-task early stopping), "f2" (latency requirements),
    "f3" (geometric-mean speedup over references), or any callable(latencies) -> float."""
    if callable(name):
        return name
    weights = tuple(float(w) for w in weights)
    nets = networks_or_one(len(weights), networks)
    if name in ("f1", "f4", "weighted_sum"):
        return WeightedSum(weights)
    if name == "f2":
        if requirements is None or len(requirements) != len(nets):
            raise ValueError("objective f2 needs one latency requirement (seconds) per network")
        return LatencyRequirement(weights, nets, tuple(float(x) for x in requirements))
    if name == "f3":
        if references is None or len(references) != len(nets):
            raise ValueError("objective f3 needs one reference latency (seconds) per network")
        return GeomeanSpeedup(weights, nets, tuple(float(x) for x in references))
    raise ValueError(f"unknown objective {name!r}; expected f1, f2, f3, f4 or a callable")


__all__ = ["NO_PROGRAM", "WeightedSum", "LatencyRequirement", "GeomeanSpeedup", "make_objective", "networks_or_one"]
