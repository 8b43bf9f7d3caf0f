"""Tasks of a network: fused groups that compute the same thing (the same structural `workload_key` of their
ComputeDAG: shapes, dtypes and expressions, not names or weight values) are one task, tuned once, weighted by
how many times the network runs it."""
from __future__ import annotations

import os
from dataclasses import dataclass

from .network import Network, group_dag


@dataclass(frozen=True)
class NetTask:
    dag: object       # the ComputeDAG of the first group of the task (the others differ only in names)
    weight: int       # how many groups of the network are this task
    groups: tuple     # names of those groups, in execution order
    flops: float      # floating-point operations of one run of the task
    name: str         # C-safe, unique among the network's tasks

    @property
    def workload_key(self) -> str:
        return self.dag.workload_key


@dataclass(frozen=True)
class NetworkPlan:
    """A network cut once per compile: its fused groups and the distinct tasks among them. Tuning and the
    library builder both read this one value, so a compile with tuning fuses once and hands the tuned states
    over in memory (NetworkTuning.best_states), not by re-reading its log."""
    net: Network
    groups: tuple
    tasks: tuple      # NetTask, in order of first occurrence


def plan_network(net: Network, constants: bool = True) -> NetworkPlan:
    """Fuse `net` and extract its tasks; constants: weights are constant inputs of the kernels (group_dag)."""
    from .fuse import fuse
    groups = tuple(fuse(net))
    return NetworkPlan(net, groups, tuple(extract_tasks(net, groups, constants)))


def extract_tasks(net: Network, groups, constants: bool = True) -> list:
    """One NetTask per distinct group computation, in order of first occurrence; constants: as group_dag."""
    dags, members = {}, {}
    for g in groups:
        dag = group_dag(net, g, constants)
        key = dag.workload_key
        dags.setdefault(key, dag)
        members.setdefault(key, []).append(g.name)
    tasks = []
    for i, (key, names) in enumerate(members.items()):
        anchor = names[0].split("_", 1)[-1]
        tasks.append(NetTask(dags[key], len(names), tuple(names), dags[key].flop_count, f"t{i}_{anchor}"))
    return tasks


def _flops(x: float) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if x >= scale:
            return f"{x / scale:.2f}{unit}"
    return f"{x:.0f}"


def task_table(tasks, log=None, target: str | None = None) -> str:
    """A text table of the tasks (name, weight, FLOPs per run, weighted FLOPs), with a `tuned` column saying
    whether `log` (a path or RecordLog) holds a measured program of the task when a log is given."""
    from ..measure.record import load
    from ..search.tuning import best_logged
    records = None
    if log is not None:  # read once, not once per task
        records = load(log) if isinstance(log, (str, os.PathLike)) else list(log)
    head = ["task", "weight", "FLOPs", "weighted"] + (["tuned"] if records is not None else [])
    rows = []
    for t in tasks:
        row = [t.name, str(t.weight), _flops(t.flops), _flops(t.flops * t.weight)]
        if records is not None:
            row.append("yes" if best_logged(records, t.dag, target) else "no")
        rows.append(row)
    total = sum(t.flops * t.weight for t in tasks)
    rows.append([f"{len(tasks)} tasks", str(sum(t.weight for t in tasks)), "", _flops(total)] +
                ([""] if records is not None else []))
    widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]
    line = lambda r: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))  # noqa: E731
    return "\n".join([line(head)] + [line(r) for r in rows])


__all__ = ["NetTask", "extract_tasks", "task_table"]
