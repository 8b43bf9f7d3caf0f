"""`ansorc.net.compile`: an ONNX model -> a Model (one library, weights file, arena), scheduled from a log or by
default (search/default_schedule.py). The importer and fusion are imported when used.
"""
from __future__ import annotations

import itertools
import json
import tempfile
import warnings
from dataclasses import dataclass

from ..targets import PLUGINS, plugin, plugin_of_kind
from ..codegen.pipeline import resolve_target
from ..codegen.target import Target
from ..ir.schedule.state import replay
from ..ir.schedule.steps import steps_from_json
from ..search.tuning import TuneOptions
from .library import build_library, emit_library, write_library
from .model import Model
from .network import NetError, Network, group_dag
from .tasks import NetTask, extract_tasks, plan_network


@dataclass(frozen=True)
class TaskInfo(NetTask):
    """A task of a compiled model (tasks.NetTask) and where its program came from: "log" or "default"; `replays`
    is False when the log's record of it does not replay (it runs the default program); `in_model` is True when
    the log's best program lost to another inside the model (in_model.py) and the winner runs."""
    schedule: str = "default"
    replays: bool = True
    in_model: bool = False


def _from_log(records, verdicts, dags, task_dag, target: str):
    """(state, replays, in_model): the best logged schedule of `task_dag`'s workload, or the winner over it inside
    the model where a verdict says so, replayed on the first of `dags` whose names it fits (None: no record, or
    replays False: none fits). A task whose weights are constant falls back on its programs logged with the
    weights passed per call (logs from before weights were constant): they are valid in both modes
    (search/tuning.py, best_logged)."""
    from ..search.tuning import best_logged
    from .in_model import winner_over
    recs = best_logged(records, task_dag, target, k=1)
    winner = winner_over(verdicts, recs[0].workload_key, recs[0].steps_json) if recs else None
    steps = winner or (recs[0].steps_json if recs else None)
    for dag in dags if recs else ():  # an iterable, consumed lazily
        try:
            return replay(dag, steps_from_json(json.loads(steps))), True, winner is not None
        except (ValueError, KeyError, IndexError, TypeError):  # a record of another naming of this workload
            continue
    return None, not recs, False  # (the one warning naming the log: _warn_untuned)


def schedule_groups(net: Network, groups, log=None, target="native", tasks=None, tuned=None) -> tuple:
    """(schedules: group name -> State, tasks: list of TaskInfo). Groups of one workload share one State: their
    DAGs differ only in names, so one kernel serves them all. tasks: the NetTasks of `groups` when already
    extracted (NetworkPlan); tuned: workload key -> State handed over by a tuning run of those tasks, used
    before the log, which is then read only for the tasks it did not serve."""
    tgt = resolve_target(target)
    kind = plugin(tgt)
    tuned = tuned or {}
    net_tasks = list(tasks) if tasks is not None else extract_tasks(net, groups, kind.constants)
    records, verdicts = None, []
    if log is not None and any(t.workload_key not in tuned for t in net_tasks):
        from ..measure.record import load
        from .in_model import load_verdicts
        records, verdicts = list(load(log)), load_verdicts(log, tgt.name)
    by_name = {g.name: g for g in groups}
    schedules, tasks = {}, []
    for t in net_tasks:
        # the other groups' DAGs are built only if the first naming does not replay the record
        dags = itertools.chain([t.dag], (group_dag(net, by_name[n], kind.constants) for n in t.groups[1:]))
        state, replays, in_model = tuned.get(t.workload_key), True, False
        if state is None and records:
            state, replays, in_model = _from_log(records, verdicts, dags, t.dag, tgt.name)
        how = "log" if state is not None else "default"
        state = state if state is not None else kind.network_program(t.dag, tgt)
        schedules.update(dict.fromkeys(t.groups, state))
        tasks.append(TaskInfo(t.dag, t.weight, t.groups, t.flops, t.name, how, replays, in_model))
    return schedules, tasks


def build_model(net: Network, groups, schedules: dict, target="native", name: str | None = None, tasks=()):
    """Emit, build and load the model library of `net` cut into `groups` under `schedules` (the target
    plug-in's network library: a Model on CPUs, a CudaModel on CUDA)."""
    tgt = resolve_target(target)
    return plugin(tgt).build_network(net, groups, schedules, tgt, name, tasks)


def build_cpu_model(net: Network, groups, schedules: dict, tgt: Target, name: str | None, tasks) -> Model:
    """The CPU plug-in's network library: one C translation unit, built with the target's compiler."""
    if isinstance(tgt, Target) and not tgt.runs_here():
        raise NetError(f"model {net.name!r}: target {tgt.name!r} does not run on this machine")
    lib = emit_library(net, groups, schedules, tgt, name)
    so = build_library(lib)
    scratch = tempfile.mkdtemp(prefix=f"ansorc_{lib.name}_")
    files = write_library(scratch, lib, so, net.weights)
    return Model(files, lib.signature, tasks, owned_dir=scratch)


def compile(model, trials: int = 0, log=None, input_shapes=None, target="native",  # noqa: A001 - the verb
            name: str | None = None, progress: bool = False, options: TuneOptions | None = None) -> Model:
    """An ONNX model (a path, an onnx.ModelProto, or an imported Network) compiled into a Model: each fused
    group runs the best program of its workload in `log`, else the default program. With trials > 0 the model's
    tasks are tuned first for that many measured programs in all (task scheduler, appending to `log`), with
    `options` (a TuneOptions: seed, cost_model, ...; default TuneOptions(progress=progress))."""
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 0:
        raise NetError(f"trials={trials!r}: expected an integer >= 0 (0: no tuning)")
    if not plugin(target).networks:   # before the import and any tuning
        able = [n for kind in PLUGINS for n in plugin_of_kind(kind).names if plugin_of_kind(kind).networks]
        raise NetError(f"target {getattr(target, 'name', target)!r}: models do not compile for it yet; they do for "
                       f"{', '.join(able)}")
    if trials > 0 and log is None:
        raise NetError("tuning a model (trials > 0) needs a log: its programs are recorded there and read back")
    if isinstance(model, Network):
        net = model
    else:
        from .importer import import_model
        net = import_model(model, input_shapes=input_shapes)
    plan = plan_network(net, plugin(target).constants)   # fused once: tuning and the library share it
    tuned = {}
    if trials > 0:
        from .tune import tune_network
        run = tune_network(plan, trials, str(log), target=target if isinstance(target, str) else target.name,
                           options=options or TuneOptions(progress=progress))
        # a task whose default won inside the model is read back from the log's verdict (TaskInfo.in_model)
        tuned = {k: s for k, s in run.best_states().items() if k not in run.in_model}
    groups = list(plan.groups)
    schedules, tasks = schedule_groups(net, groups, log, target, tasks=plan.tasks, tuned=tuned)
    if log is not None:
        _warn_untuned(tasks, log)
    return build_model(net, groups, schedules, target, name, tasks)


class UntunedTaskWarning(UserWarning):
    """Compiling with a log, some tasks found no tuned program in it (they run the default program)."""


def _warn_untuned(tasks, log) -> None:
    """TVM users' most common complaint is a log silently not applied: name every task the log did not serve."""
    missing = [t for t in tasks if t.schedule != "log"]
    if missing:
        names = ", ".join(f"{t.name} ({t.workload_key[:12]}{'' if t.replays else ', does not replay'})"
                          for t in missing[:8])
        more = f" and {len(missing) - 8} more" if len(missing) > 8 else ""
        broken = sum(not t.replays for t in missing)
        why = f" ({broken} of them: the logged program does not replay)" if broken else ""
        warnings.warn(f"{log}: {len(missing)} of {len(tasks)} tasks have no tuned program there that replays{why} "
                      f"and run the default program: {names}{more}", UntunedTaskWarning, stacklevel=3)


__all__ = ["compile", "build_model", "schedule_groups", "TaskInfo", "UntunedTaskWarning"]
