"""Where a compiled model's time goes (`ansorc profile`): each task's time inside the model (its kernel calls
timed by the library, Model.profile), its share, FLOP rate and where its program came from, next to
onnxruntime's per-node times for the same model and inputs (its node profiling), both end to end.

The two run alternately, one of ours then one of onnxruntime's, so drift on a shared machine hits both alike.
onnxruntime is optional here: without it (or where it refuses the model) the result says why and holds ours
only. profile_report.py turns the result into the terminal table and the bar chart.
"""
from __future__ import annotations

import collections
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from ..codegen.target import num_cores
from ..ir.program.dtypes import NP_DTYPE
from .network import NetError


def threads() -> int:
    """The kernels' thread count (OpenMP: $OMP_NUM_THREADS, else every core we may run on); peers get the same."""
    value = os.environ.get("OMP_NUM_THREADS", "").strip()
    return int(value) if value.isdigit() and int(value) > 0 else num_cores()


def ort_session(model, n_threads: int, profile_prefix: str | None = None):
    """An onnxruntime CPU session of `model` (a ModelProto or a path) on `n_threads` threads without idle
    spinning; profile_prefix: node profiling on, its JSON written under that prefix by end_profiling()."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    if profile_prefix:
        so.enable_profiling, so.profile_file_prefix = True, profile_prefix
    so.intra_op_num_threads = n_threads
    so.inter_op_num_threads = 1
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")  # idle spinning steals our cores
    if isinstance(model, (str, os.PathLike)):
        return ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"])
    if model.ir_version > 8:
        model.ir_version = 8
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def alternate(fns: dict, rounds: int, warmup: int = 3, gap: float = 0.0) -> dict:
    """Median seconds of each callable, timed in turn (a, b, a, b, ...) so drift hits both alike. gap: seconds
    slept (untimed) before each call, for runtimes whose idle threads spin after a call on the cores the next
    contender needs."""
    for f in fns.values():
        for _ in range(warmup):
            f()
    times = {k: [] for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            if gap:
                time.sleep(gap)
            t = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in times.items()}


def random_inputs(model, seed: int = 0) -> dict:
    """Inputs of the model's signature, by name: normal floats; integers and booleans 0 or 1 (valid indices of
    any axis of two or more, and valid masks)."""
    rng = np.random.default_rng(seed)
    out = {}
    for spec in model.signature["inputs"]:
        dtype, shape = np.dtype(NP_DTYPE[spec["dtype"]]), tuple(spec["shape"])
        values = rng.standard_normal(shape) if dtype.kind in "fc" else rng.integers(0, 2, shape)
        out[spec["name"]] = np.asarray(values).astype(dtype)
    return out


def source(task) -> str:
    """Where a task's program came from: "log" or "default" (api.TaskInfo.schedule), and whether the log's best
    lost to the default inside the model (in_model.py)."""
    how = getattr(task, "schedule", "default")
    if getattr(task, "in_model", False):
        return f"{how}, default faster in the model"
    return how if getattr(task, "replays", True) else f"{how} (log's program does not replay)"


def task_rows(tasks, prof: list, log=None, target: str = "native") -> list:
    """One row per task, slowest first: name, weight, ms inside the model (all its groups' calls), share of the
    kernels' time in %, GFLOP/s there (GOP/s for integer work: "unit"), source of its program, and with a log the
    task's best time alone there (weight x its best record; None without one). Calls of no task (none so far)
    make a row "other"."""
    per_group = collections.defaultdict(float)
    for p in prof:
        per_group[p["group"]] += p["seconds"]
    total = sum(per_group.values()) or 1.0
    alone = _alone(tasks, log, target)
    rows = []
    for t in tasks:
        inside = sum(per_group.pop(g, 0.0) for g in t.groups)
        rows.append({"task": t.name, "weight": t.weight, "ms": inside * 1e3, "share": 100 * inside / total,
                     "gflops": t.flops * t.weight / inside / 1e9 if inside > 0 else None, "source": source(t),
                     "unit": t.dag.rate_unit,
                     "alone_ms": alone.get(t.name)})
    rest = sum(per_group.values())
    if rest:
        rows.append({"task": "other", "weight": len(per_group), "ms": rest * 1e3, "share": 100 * rest / total,
                     "gflops": None, "source": "-", "alone_ms": None})
    return sorted(rows, key=lambda r: -r["ms"])


def _alone(tasks, log, target: str) -> dict:
    """task name -> weight x its best logged latency (ms), for the tasks the log holds."""
    if log is None:
        return {}
    from ..measure.record import load
    from ..search.tuning import best_logged
    records = list(load(log))
    out = {}
    for t in tasks:
        top = best_logged(records, t.dag, target, k=1)
        if top:
            out[t.name] = top[0].median * t.weight * 1e3
    return out


def node_times(trace: str, runs: int) -> dict:
    """(node name, op type) -> median ms per run, from onnxruntime's profile JSON of `runs` runs, the first of
    which (the warm-up) is left out."""
    durs = collections.defaultdict(list)
    for e in json.loads(Path(trace).read_text()):
        if e.get("cat") == "Node" and str(e.get("name", "")).endswith("_kernel_time"):
            key = (e["name"][:-len("_kernel_time")], e.get("args", {}).get("op_name", "?"))
            durs[key].append(e["dur"] / 1e3)
    out = {}
    for key, d in durs.items():
        per_run = max(1, len(d) // max(1, runs))   # a node inside a loop runs more than once per run
        kept = [sum(d[i:i + per_run]) for i in range(per_run, len(d), per_run)] or [sum(d)]
        out[key] = statistics.median(kept)
    return out


def ort_summary(nodes: dict) -> dict:
    """onnxruntime's node times summed by op type (slowest first, with their node counts and shares) and its
    nodes, slowest first."""
    total = sum(nodes.values()) or 1.0
    ops = collections.defaultdict(lambda: [0, 0.0])
    for (_, op), ms in nodes.items():
        ops[op][0] += 1
        ops[op][1] += ms
    by_op = [{"op": op, "nodes": n, "ms": ms, "share": 100 * ms / total} for op, (n, ms) in ops.items()]
    top = [{"node": name, "op": op, "ms": ms} for (name, op), ms in nodes.items()]
    return {"nodes_ms": sum(nodes.values()), "by_op": sorted(by_op, key=lambda r: -r["ms"]),
            "nodes": sorted(top, key=lambda r: -r["ms"])}


def _sessions(onnx_model, n_threads: int, folder: str):
    """(profiling session, plain session) of onnxruntime, or a string saying why there are none."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return "onnxruntime is not installed: ansorc's times only"
    try:
        return (ort_session(onnx_model, n_threads, str(Path(folder) / "ort")), ort_session(onnx_model, n_threads))
    except Exception as e:  # noqa: BLE001 - onnxruntime's own errors: the table says why, ours still show
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
        return f"onnxruntime cannot run this model ({first}): ansorc's times only"


def profile(model, onnx_model, inputs: dict, rounds: int = 10, log=None, target: str = "native") -> dict:
    """Profile a compiled Model (its tasks) against onnxruntime on `onnx_model` (a path or ModelProto) with the
    same inputs (name -> array), `rounds` runs each: per-task rows, onnxruntime's node summary, and both
    end-to-end medians (profiling off). A plain dict, what `ansorc profile --json` prints."""
    if not callable(getattr(model, "profile", None)):
        raise NetError(f"model {model.name!r}: this target's model library cannot profile its kernels")
    ordered = [inputs[n] for n in model.input_names]
    with tempfile.TemporaryDirectory(prefix="ansorc_profile_") as folder:
        sessions = _sessions(onnx_model, threads(), folder)
        ort = {"available": not isinstance(sessions, str), "note": sessions if isinstance(sessions, str) else ""}
        prof, trace = _alternate_profiles(model, ordered, inputs, sessions, rounds)
        if trace:
            ort.update(ort_summary(node_times(trace, rounds + 1)))
        fns = {"ansorc": lambda: model(*ordered)}
        if ort["available"]:
            fns["onnxruntime"] = lambda: sessions[1].run(None, inputs)
        run = alternate(fns, rounds)
    if ort["available"]:
        ort["run_ms"] = run["onnxruntime"] * 1e3
    ours = {"kernels_ms": sum(p["seconds"] for p in prof) * 1e3, "run_ms": run["ansorc"] * 1e3}
    return {"model": model.name, "rounds": rounds, "threads": threads(), "ansorc": ours, "onnxruntime": ort,
            "tasks": task_rows(model.tasks, prof, log, target)}


def _alternate_profiles(model, ordered: list, feeds: dict, sessions, rounds: int) -> tuple:
    """(our per-call profile, each call's median over `rounds` profiled runs; onnxruntime's trace file or None):
    one profiled run of ours, then one of onnxruntime's, `rounds` times (after a warm-up run of onnxruntime's).
    Medians, as a run that waits for a core another process holds takes a scheduler time slice."""
    ours = collections.defaultdict(list)
    ort = None if isinstance(sessions, str) else sessions[0]
    if ort is not None:
        ort.run(None, feeds)
    for _ in range(max(1, rounds)):
        for q in model.profile(*ordered, rounds=1):
            ours[(q["group"], q["kernel"])].append(q["seconds"])
        if ort is not None:
            ort.run(None, feeds)
    prof = [{"group": g, "kernel": k, "seconds": statistics.median(s)} for (g, k), s in ours.items()]
    return prof, None if ort is None else ort.end_profiling()


__all__ = ["profile", "task_rows", "ort_summary", "node_times", "random_inputs", "ort_session", "alternate",
           "threads"]
