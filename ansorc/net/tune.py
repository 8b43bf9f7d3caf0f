"""Tune a whole network: import, fuse, extract its tasks (identical groups = one task, weighted by occurrence),
and spend the budget across them with the task scheduler (search/multi.py). The log is keyed by workload, so a
model compiled with this log afterwards picks up every tuned task, and a second model sharing a task reuses it."""
from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass, field

from ..codegen.pipeline import resolve_target
from ..targets import plugin
from ..search.multi import ScheduleResult, tune_tasks
from ..search.scheduler import SchedulerOptions
from ..search.task import SearchTask
from ..search.tuning import TuneOptions
from .in_model import InModelOptions, build_default, check_in_model
from .network import Network
from .profile import random_inputs
from .tasks import NetworkPlan, plan_network


@dataclass
class NetworkTuning:
    net: Network
    groups: list
    tasks: list                 # NetTask (tasks.py), in scheduler order
    result: ScheduleResult
    in_model: dict = field(default_factory=dict)  # workload key -> the default State that beat the tuned one

    @property
    def estimated_latency(self) -> float:
        """sum over tasks of weight x best latency (seconds); inf while a task has no program."""
        return self.result.estimated_latency

    def best_states(self) -> dict:
        """workload key -> the best State found (this run's or the resumed log's), for tasks that have one; the
        default program where it won inside the model (in_model.py)."""
        best = {t.workload_key: r.best_state for t, r in zip(self.tasks, self.result.results)
                if r.best_state is not None}
        return {**best, **self.in_model}


def network_of(model, input_shapes=None) -> Network:
    if isinstance(model, Network):
        return model
    from .importer import import_model
    return import_model(model, input_shapes=input_shapes)


def tune_network(model, trials: int, log: str, input_shapes=None, target: str = "native",
                 strategy: str = "gradient", objective="f1", cold_weights: bool = True,
                 options: TuneOptions | None = None, backend=None, on_round=None, in_flight: int | None = None,
                 callbacks=(), time_budget: float | None = None, scheduler: SchedulerOptions | None = None,
                 in_model: InModelOptions | None = InModelOptions()) -> NetworkTuning:
    """Tune the tasks of `model` (a path, onnx.ModelProto, Network or NetworkPlan) for `trials` programs in
    all, appending to `log` (resumed). cold_weights: time each program with its weights evicted from the
    caches, as the whole model runs it (each weight is read once per inference, long after its last use; the
    activations come warm from the kernel before), so that the tuner ranks programs by how they stream weights
    from memory. in_model: afterwards, time each task's best program against its default inside the model and
    keep the faster (net/in_model.py; None: no check; only where the programs are measured on this machine).
    options (a TuneOptions), backend, on_round, in_flight, callbacks, time_budget (seconds) and scheduler (a
    SchedulerOptions, e.g. a longer warm-up: warmup_rounds): as ansorc.tune_tasks takes them; the time
    budget counts from this call, the import and the in-model check included."""
    started = time.monotonic()
    plan = model if isinstance(model, NetworkPlan) else plan_network(network_of(model, input_shapes),
                                                                       plugin(target).constants)
    net, groups, tasks = plan.net, list(plan.groups), list(plan.tasks)
    cold = cold_weights and plugin(target).cold_weights  # e.g. a GPU's weights stay in device memory
    search = [SearchTask(t.dag, target, cold_inputs=weight_inputs(net, t) if cold else ()) for t in tasks]
    with contextlib.ExitStack() as stack:
        check = _InModel.start(plan, target, in_model if backend is None else None, stack)
        left = None if time_budget is None else time_budget - (time.monotonic() - started) - check.reserve_s
        res = tune_tasks(search, [t.weight for t in tasks], trials=trials, log=log, strategy=strategy,
                         objective=objective, options=options, backend=backend, on_round=on_round,
                         in_flight=in_flight, callbacks=callbacks, scheduler=scheduler, time_budget=left)
        winners = check.finish(log)
    return NetworkTuning(net, groups, tasks, res, winners)


BUILD_S_PER_TASK = 0.35   # a model library's build per distinct task, from an empty cache (GoogLeNet: 83 in 29 s)


@dataclass
class _InModel:
    """The in-model check of one tuning: the default library is built first, so that its build time sizes the
    share of the budget the check keeps (a second build, of the tuned library, and the profiled runs)."""
    plan: object
    target: str
    options: InModelOptions | None = None
    default: object = None
    reserve_s: float = 0.0

    @classmethod
    def start(cls, plan, target: str, options, stack) -> "_InModel":
        tgt = resolve_target(target)
        if options is None or not plugin(tgt).in_model_check or not tgt.runs_here():
            return cls(plan, target)
        t0 = time.monotonic()
        default = stack.enter_context(build_default(plan, tgt))
        built = time.monotonic() - t0
        inputs = random_inputs(default)
        t1 = time.monotonic()
        default(*[inputs[n] for n in default.input_names])
        run = time.monotonic() - t1
        # the build cache may have served the default library: a tuned one is compiled afresh
        build = max(1.5 * built, BUILD_S_PER_TASK * len(plan.tasks))
        return cls(plan, target, options, default, build + 3 * options.rounds * run + 1.0)

    def finish(self, log: str) -> dict:
        if self.options is None:
            return {}
        return check_in_model(self.plan, log, self.target, options=self.options, default=self.default)


def weight_inputs(net: Network, task) -> tuple:
    """Names of the task's inputs that are weights of the network (constants read once per inference)."""
    return tuple(p.name for p in task.dag.inputs if p.name in net.weights)


def curve_png(curves: dict, path: str, measured: dict | None = None, title: str = "") -> str:
    """Plot estimated end-to-end latency (ms) against trials for each named curve [(trials, seconds)], plus
    measured latencies {label: [(trials, seconds)]} as markers. Returns the path."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for label, pts in curves.items():
        pts = [(t, s) for t, s in pts if math.isfinite(s) and s < 1e9]
        if pts:
            ax.plot([t for t, _ in pts], [s * 1e3 for _, s in pts], label=f"{label} (estimated)")
    for label, pts in (measured or {}).items():
        ax.plot([t for t, _ in pts], [s * 1e3 for _, s in pts], "o", label=f"{label} (measured)")
    ax.set_xlabel("trials")
    ax.set_ylabel("end-to-end latency (ms)")
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    if title:
        ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


__all__ = ["tune_network", "NetworkTuning", "curve_png", "network_of"]
