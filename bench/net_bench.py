"""End-to-end latency of whole models: ansorc's library next to onnxruntime (2 threads, the same inputs), timed
alternating in one process (medians), after 0 trials (default programs) and after tuning checkpoints.

    python bench/net_bench.py --models resnet18,mobilenet_v2,bert_tiny --trials 0,1000,2000 \
        --log-dir bench/results/net --out bench/results/net/latency.md

Tuning resumes each model's log (<log-dir>/<model>.jsonl): a checkpoint of T trials tunes only what the log
lacks. Printed per row: trials in the log, tuning wall seconds (this run), the scheduler's estimated latency
(sum of weight x best task latency) and the measured latencies.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ansorc.net.profile import alternate, ort_session  # noqa: E402


def feeds(model, seed: int = 0) -> dict:
    import onnx
    rng = np.random.default_rng(seed)
    out = {}
    for vi in model.graph.input:
        shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        if vi.name == "attention_mask":
            out[vi.name] = np.ones(shape, np.int64)
        elif vi.type.tensor_type.elem_type == onnx.TensorProto.INT64:
            out[vi.name] = rng.integers(0, 1000, shape).astype(np.int64)
        else:
            out[vi.name] = rng.standard_normal(shape).astype(np.float32)
    return out


def logged_trials(log: Path) -> int:
    if not log.exists():
        return 0
    from ansorc.measure.record import RETIME_NOTE, load
    return sum(1 for r in load(str(log)) if r.note != RETIME_NOTE)


def estimated(net, log: Path):
    """sum over tasks of weight x best logged latency, or None while some task has no record."""
    from ansorc.measure.record import load
    from ansorc.net.fuse import fuse
    from ansorc.net.tasks import extract_tasks
    from ansorc.search.tuning import best_logged
    if not log.exists():
        return None
    recs = load(str(log))
    total = 0.0
    for t in extract_tasks(net, fuse(net)):
        top = best_logged(recs, t.dag, "native", k=1)
        if not top:
            return None
        total += t.weight * top[0].median
    return total


def estimated_curve(net, log: Path) -> list:
    """[(trials, seconds)]: the estimated latency after each logged trial, in log order, from the point where
    every task has a valid program (re-timing records excluded: they measure nothing new)."""
    from ansorc.measure.record import RETIME_NOTE, load
    from ansorc.net.fuse import fuse
    from ansorc.net.tasks import extract_tasks
    tasks = extract_tasks(net, fuse(net))
    weight = {t.name: t.weight for t in tasks}
    # a task's records under its key, or (a log from before weights were constant) without its constants
    task_of = {k: t.name for t in tasks for k in (t.dag.with_constants(()).workload_key, t.dag.workload_key)}
    best, curve, n = {}, [], 0
    for r in (load(str(log)) if log.exists() else []):
        if r.note == RETIME_NOTE:
            continue
        n += 1
        if r.workload_key in task_of and r.ok:
            t = task_of[r.workload_key]
            best[t] = min(best.get(t, float("inf")), r.median)
        if len(best) == len(weight):
            curve.append((n, sum(weight[k] * v for k, v in best.items())))
    return curve


def plot_model(name: str, net, rows: list, log: Path, out: str) -> str:
    """<out stem>_<model>.png: estimated latency against trials, with the measured library and onnxruntime."""
    from ansorc.net.tune import curve_png
    measured = {"ansorc library": [(r["trials"], r["ansorc_ms"] / 1e3) for r in rows],
                "onnxruntime": [(r["trials"], r["ort_ms"] / 1e3) for r in rows]}
    path = f"{Path(out).with_suffix('')}_{name}.png"
    return curve_png({"weighted task latency": estimated_curve(net, log)}, path, measured=measured,
                     title=f"{name}: estimated and measured end-to-end latency")


def bench_model(name: str, checkpoints, args) -> list:
    import ansorc.net
    from ansorc.net import zoo
    from ansorc.net.importer import import_model
    from ansorc.net.tune import tune_network
    from ansorc.search.tuning import TuneOptions
    model = getattr(zoo, name)()
    net = import_model(model)
    x = feeds(model)
    ordered = [x[vi.name] for vi in model.graph.input]
    sess = ort_session(model, args.threads)
    log = Path(args.log_dir) / f"{name}.jsonl"
    rows = []
    for target in checkpoints:
        need = target - logged_trials(log)
        t0 = time.perf_counter()
        if need > 0:
            tune_network(net, need, str(log), strategy=args.strategy,
                         options=TuneOptions(progress=False, seed=args.seed))
        tune_s = time.perf_counter() - t0
        with ansorc.net.compile(net, log=str(log) if log.exists() else None) as lib:
            ours = lib(*ordered)
            want = sess.run(None, x)
            err = max(float(np.linalg.norm(o - w) / max(np.linalg.norm(w), 1e-30)) for o, w in zip(ours, want))
            med = alternate({"ansorc": lambda: lib(*ordered), "onnxruntime": lambda: sess.run(None, x)}, args.rounds)
        est = estimated(net, log)
        rows.append({"model": name, "trials": logged_trials(log), "tune_s": tune_s, "estimated_ms":
                     None if est is None else est * 1e3, "ansorc_ms": med["ansorc"] * 1e3,
                     "ort_ms": med["onnxruntime"] * 1e3, "speedup": med["onnxruntime"] / med["ansorc"],
                     "rel_l2": err})
        print(fmt(rows[-1]), flush=True)
    if args.out:
        plot_model(name, net, rows, log, args.out)
    return rows


HEAD = ("| model | trials | tuning s (this run) | estimated ms | ansorc ms | onnxruntime ms | speedup | rel. L2 |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- |")


def fmt(r: dict) -> str:
    est = "-" if r["estimated_ms"] is None else f"{r['estimated_ms']:.3f}"
    return (f"| {r['model']} | {r['trials']} | {r['tune_s']:.0f} | {est} | {r['ansorc_ms']:.3f} | {r['ort_ms']:.3f} "
            f"| {r['speedup']:.2f}x | {r['rel_l2']:.1e} |")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="resnet18,mobilenet_v2,bert_tiny")
    p.add_argument("--trials", default="0", help="comma-separated checkpoints of trials in each model's log")
    p.add_argument("--log-dir", default="bench/results/net")
    p.add_argument("--strategy", default="gradient", choices=("gradient", "round-robin"))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="write the markdown table here too")
    args = p.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    Path(args.log_dir).mkdir(parents=True, exist_ok=True)
    print(HEAD)
    rows = []
    for name in args.models.split(","):
        rows += bench_model(name, [int(t) for t in args.trials.split(",")], args)
    if args.out:
        Path(args.out).write_text(HEAD + "\n" + "\n".join(fmt(r) for r in rows) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
