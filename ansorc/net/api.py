"""`ansorc.net.compile`: an ONNX model -> a Model (one library, weights file, arena), scheduled from a log or by
default. Importing (importer.py), fusion (fuse.py) and the default schedule (search/default_schedule.py) are
imported when used, so this module loads without them.
"""
from __future__ import annotations

import tempfile
import warnings
from dataclasses import dataclass

from ..codegen.pipeline import resolve_target
from ..codegen.target import Target
from ..ir.state import State, replay
from ..ir.steps import steps_from_json
from .library import build_library, emit_library, write_library
from .model import Model
from .network import NetError, Network, group_dag


@dataclass(frozen=True)
class TaskInfo:
    """One task of a compiled model: the groups sharing one workload, and where their program came from. Its
    fields are tasks.NetTask's plus `schedule`, so `tasks.task_table` prints it."""
    dag: object          # the ComputeDAG of the task's first group
    weight: int          # how many groups run this workload
    groups: tuple        # their names, in execution order
    flops: float         # of one run of the task
    name: str
    schedule: str        # "log" | "default" | "naive"

    @property
    def workload_key(self) -> str:
        return self.dag.workload_key


def _default_schedule(dag, target: Target) -> tuple:
    try:
        from ..search.default_schedule import default_cpu_schedule
    except ImportError:  # until the default schedule lands: the naive loop nest, always valid
        return State.initial(dag), "naive"
    return default_cpu_schedule(dag, target), "default"


def _from_log(records, dags: list, key: str, target: str):
    """The best logged schedule of workload `key`, replayed on the first of `dags` whose names it fits."""
    from ..measure.record import best
    recs = best(records, key, target, k=1)
    for dag in dags if recs else ():
        try:
            return replay(dag, steps_from_json(recs[0].steps))
        except (ValueError, KeyError, IndexError):  # a record of another naming of this workload
            continue
    if recs:
        warnings.warn(f"workload {key}: the logged schedule replays on none of its groups; using the default",
                      stacklevel=3)
    return None


def schedule_groups(net: Network, groups, log=None, target="native") -> tuple:
    """(schedules: group name -> State, tasks: list of TaskInfo). Groups of one workload share one State: their
    DAGs differ only in names, so one kernel serves them all."""
    tgt = resolve_target(target)
    by_key: dict = {}
    for g in groups:
        dag = group_dag(net, g)
        by_key.setdefault(dag.workload_key, []).append((g, dag))
    records = None
    if log is not None:
        from ..measure.record import load
        records = list(load(log))
    schedules, tasks = {}, []
    for k, (key, members) in enumerate(by_key.items()):
        dags = [d for _, d in members]
        state = _from_log(records, dags, key, tgt.name) if records else None
        how = "log"
        if state is None:
            state, how = _default_schedule(dags[0], tgt)
        for g, _ in members:
            schedules[g.name] = state
        anchor = members[0][0].name.split("_", 1)[-1]
        tasks.append(TaskInfo(dags[0], len(members), tuple(g.name for g, _ in members), dags[0].flop_count,
                              f"t{k}_{anchor}", how))
    return schedules, tasks


def build_model(net: Network, groups, schedules: dict, target="native", name: str | None = None,
                tasks=()) -> Model:
    """Emit, build and load the model library of `net` cut into `groups` under `schedules`."""
    tgt = resolve_target(target)
    if isinstance(tgt, Target) and not tgt.runs_here():
        raise NetError(f"model {net.name!r}: target {tgt.name!r} does not run on this machine")
    lib = emit_library(net, groups, schedules, tgt, name)
    so = build_library(lib)
    scratch = tempfile.mkdtemp(prefix=f"ansorc_{lib.name}_")
    files = write_library(scratch, lib, so, net.weights)
    return Model(files, lib.signature, tasks, owned_dir=scratch)


def compile(model, trials: int = 0, log=None, input_shapes=None, target="native",  # noqa: A001 - the verb
            name: str | None = None, progress: bool = False) -> Model:
    """An ONNX model (a path, an onnx.ModelProto, or an imported Network) compiled into a Model: each fused
    group runs the best program of its workload in `log`, else the default program. With trials > 0 the model's
    tasks are tuned first for that many measured programs in all (task scheduler, appending to `log`)."""
    if trials > 0 and log is None:
        raise NetError("tuning a model (trials > 0) needs a log: its programs are recorded there and read back")
    if isinstance(model, Network):
        net = model
    else:
        from .importer import import_model
        net = import_model(model, input_shapes=input_shapes)
    if trials > 0:
        from .tune import tune_network
        tune_network(net, trials, str(log), target=target if isinstance(target, str) else target.name,
                     progress=progress)
    from .fuse import fuse
    groups = fuse(net)
    schedules, tasks = schedule_groups(net, groups, log, target)
    if log is not None:
        _warn_untuned(tasks, log)
    return build_model(net, groups, schedules, target, name, tasks)


class UntunedTaskWarning(UserWarning):
    """Compiling with a log, some tasks found no tuned program in it (they run the default program)."""


def _warn_untuned(tasks, log) -> None:
    """TVM users' most common complaint is a log silently not applied: name every task the log did not serve."""
    missing = [t for t in tasks if t.schedule != "log"]
    if missing:
        names = ", ".join(f"{t.name} ({t.workload_key[:12]})" for t in missing[:8])
        more = f" and {len(missing) - 8} more" if len(missing) > 8 else ""
        warnings.warn(f"{log}: {len(missing)} of {len(tasks)} tasks have no tuned program there and run the default "
                      f"program: {names}{more}", UntunedTaskWarning, stacklevel=3)


__all__ = ["compile", "build_model", "schedule_groups", "TaskInfo", "UntunedTaskWarning"]
