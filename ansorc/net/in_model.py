"""The in-model check: after tuning, each task's tuned program (the log's best) and its default program are timed
inside the whole model, and where the default is the faster there, the log says so.

A tuned program is chosen by timing its task alone (weights evicted from the caches, activations warm). Inside
the model its neighbours leave the caches in other states, and a program that won alone can lose there; in a
network tuned to a few percent those losses cancel the gains (GoogLeNet on Zen 4: tuned 21.10 ms, untuned
21.17). Timing two libraries, every task tuned and every task default, alternately with the model's own
per-kernel profile measures both programs of every task in place, at the cost of two builds.

A verdict is a line of the log ({"kind": "in_model", ...}, skipped by measure/record.load) naming the workload,
the winner's steps and the loser's: compiling with the log runs the winner while the loser is still the log's
best. A later tuning that finds a better program makes the verdict moot; its own check compares that one.
"""
from __future__ import annotations

import contextlib
import json
import statistics
import time
import warnings
from dataclasses import dataclass

from ..measure.record import RecordLog, for_target, log_lines, other_kind, steps_key
from ..ir.schedule.canonical import rename_steps
from ..ir.schedule.steps import steps_to_json

KIND = "in_model"


@dataclass(frozen=True)
class Verdict:
    """Inside model `model`, program `winner` (canonical steps JSON) of a workload ran faster than `loser`."""
    workload_key: str
    target: str
    winner: str
    loser: str
    winner_ms: float
    loser_ms: float
    model: str = ""
    isa: str = ""
    timestamp: float = 0.0

    def to_json(self) -> str:
        return json.dumps({"kind": KIND, "workload_key": self.workload_key, "target": self.target,
                           "isa": self.isa, "model": self.model, "winner": json.loads(self.winner),
                           "loser": json.loads(self.loser), "winner_ms": self.winner_ms,
                           "loser_ms": self.loser_ms, "timestamp": self.timestamp}, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> "Verdict":
        obj = json.loads(text)
        if not isinstance(obj, dict) or obj.get("kind") != KIND:
            raise ValueError("not an in-model verdict")
        for name in ("workload_key", "target", "isa", "model"):
            if not isinstance(obj.get(name, ""), str):
                raise ValueError(f"field {name!r} is not a string")
        if not all(isinstance(obj.get(k), list) for k in ("winner", "loser")):
            raise ValueError("fields 'winner' and 'loser' must be step lists")
        ms = [obj.get(k) for k in ("winner_ms", "loser_ms", "timestamp")]
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and x >= 0 for x in ms):
            raise ValueError("times must be non-negative numbers")
        return cls(obj["workload_key"], obj["target"], steps_key(obj["winner"]), steps_key(obj["loser"]),
                   float(ms[0]), float(ms[1]), obj.get("model", ""), obj.get("isa", ""), float(ms[2]))


def load_verdicts(log, target: str | None = None) -> list:
    """The log's in-model verdicts (of `target`, measured on this machine's ISA for "native"), in file order;
    a malformed one is skipped with a warning naming file:line."""
    mine, out = for_target(target), []
    for lineno, raw in log_lines(log) if log is not None else ():
        if not other_kind(raw):
            continue
        try:
            v = Verdict.from_json(raw.decode("utf-8"))
        except (ValueError, TypeError, UnicodeDecodeError, RecursionError) as exc:
            warnings.warn(f"{log}:{lineno}: skipped a malformed line ({str(exc)[:200]})", stacklevel=2)
            continue
        if mine(v):
            out.append(v)
    return out


def winner_over(verdicts, workload_key: str, loser: str) -> str | None:
    """Steps JSON of the latest verdict's winner over program `loser` of the workload, or None."""
    found = [v for v in verdicts if v.workload_key == workload_key and v.loser == loser]
    return max(found, key=lambda v: v.timestamp).winner if found else None


@dataclass(frozen=True)
class InModelOptions:
    rounds: int = 15        # profiled runs of each library, alternating
    margin: float = 0.03    # how much faster inside the model the default must be to replace a tuned program


def default_schedules(plan, target) -> dict:
    """group name -> the default program (State) of its task, for every group of `plan`."""
    from ..codegen.pipeline import resolve_target
    from ..targets import plugin
    tgt = resolve_target(target)
    kind = plugin(tgt)
    out = {}
    for t in plan.tasks:
        out.update(dict.fromkeys(t.groups, kind.network_program(t.dag, tgt)))
    return out


def build_default(plan, target="native", name: str | None = None):
    """The model library of `plan` with every task's default program (what the check times the log against)."""
    from .api import build_model
    return build_model(plan.net, list(plan.groups), default_schedules(plan, target), target, name)


def check_in_model(plan, log: str, target="native", name: str | None = None,
                   options: InModelOptions = InModelOptions(), default=None) -> dict:
    """Time each task of `plan` (a NetworkPlan) inside the model under the log's program and under its default;
    append a verdict to `log` for each task whose default wins by options.margin. default: the library of the
    default programs already built (build_default; the caller closes it). Returns workload key -> the default
    State of the tasks that lost (nothing when no task has a tuned program, or the library cannot profile)."""
    from ..codegen.pipeline import resolve_target
    from .api import build_model, schedule_groups
    tgt = resolve_target(target)
    groups = list(plan.groups)
    logged, tasks = schedule_groups(plan.net, groups, log, tgt, tasks=plan.tasks)
    plain = default_schedules(plan, tgt)
    best = _logged_best(log, tasks, tgt.name)
    contested = [t for t in tasks if t.name in best and best[t.name].steps_json != _steps(t, plain)]
    if not contested:
        return {}
    with contextlib.ExitStack() as stack:
        if default is None:
            default = stack.enter_context(build_model(plan.net, groups, plain, tgt, name, tasks))
        if not callable(getattr(default, "profile", None)):
            return {}
        tuned = stack.enter_context(build_model(plan.net, groups, logged, tgt, name, tasks))
        times = _task_times({"tuned": tuned, "default": default}, options.rounds)
    verdicts = _verdicts(contested, best, plain, times, options.margin, tgt, name or plan.net.name)
    RecordLog(log).append_lines(v.to_json() for v in verdicts)
    lost = {(v.workload_key, v.loser) for v in verdicts}
    return {t.workload_key: plain[t.groups[0]] for t in contested
            if (best[t.name].workload_key, best[t.name].steps_json) in lost}


def _logged_best(log, tasks, target: str) -> dict:
    """task name -> the log's best record of it, for the tasks that run it (no verdict has replaced it)."""
    from ..measure.record import load
    from ..search.tuning import best_logged
    records = load(log)
    out = {}
    for t in tasks:
        recs = best_logged(records, t.dag, target, k=1) if t.schedule == "log" and not t.in_model else []
        if recs:
            out[t.name] = recs[0]
    return out


def _steps(task, schedules: dict) -> str:
    """The canonical steps JSON of the task's program in `schedules` (group name -> State)."""
    return steps_key(rename_steps(task.dag, steps_to_json(schedules[task.groups[0]].steps), to_canonical=True))


def _task_times(models: dict, rounds: int) -> dict:
    """label -> group name -> median seconds per run inside the model, profiled one run at a time, the models
    in turn (drift hits both alike)."""
    from .profile import random_inputs
    first = next(iter(models.values()))
    inputs = random_inputs(first)
    ordered = [inputs[n] for n in first.input_names]
    samples = {label: {} for label in models}
    for _ in range(max(1, rounds)):
        for label, model in models.items():
            per_group = {}
            for call in model.profile(*ordered, rounds=1):
                per_group[call["group"]] = per_group.get(call["group"], 0.0) + call["seconds"]
            for g, s in per_group.items():
                samples[label].setdefault(g, []).append(s)
    return {label: {g: statistics.median(s) for g, s in by_group.items()} for label, by_group in samples.items()}


def _verdicts(contested, best: dict, plain: dict, times: dict, margin: float, tgt, model: str) -> list:
    from ..measure.record import native_isa
    isa = native_isa() if tgt.name == "native" else ""
    now, out = time.time(), []
    for t in contested:
        tuned_ms = 1e3 * sum(times["tuned"].get(g, 0.0) for g in t.groups)
        default_ms = 1e3 * sum(times["default"].get(g, 0.0) for g in t.groups)
        if default_ms < tuned_ms * (1 - margin):
            rec = best[t.name]
            out.append(Verdict(rec.workload_key, tgt.name, _steps(t, plain), rec.steps_json,
                               default_ms, tuned_ms, model, isa, now))
    return out


__all__ = ["check_in_model", "build_default", "default_schedules", "InModelOptions", "Verdict", "load_verdicts",
           "winner_over", "KIND"]
