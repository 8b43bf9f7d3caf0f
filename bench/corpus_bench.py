"""The model corpus (tests/corpus.py) compiled untuned and timed against onnxruntime: per model, its ops,
tasks, compile seconds, the relative L2 error of its outputs against onnxruntime's, and both latencies (2 threads,
the same inputs, alternating in one process, medians).

    python bench/corpus_bench.py --out bench/results/corpus.md          # the whole corpus; + corpus.png
    python bench/corpus_bench.py --models efficientnet_b0 --rounds 30 --profile
    python bench/corpus_bench.py --tune-minutes 10 --log-dir ~/corpus-logs --out bench/results/corpus.md

--tune-minutes M tunes each model with the task scheduler for M minutes of wall time (its log in --log-dir,
model.jsonl, and model.tuning.json once done: it is not tuned again; a model whose row is already in
--log-dir/rows.jsonl is not timed again either, so a corpus run can stop and go on, and deleting rows.jsonl times
the tuned models again), then times untuned, tuned and onnxruntime alternating and adds the tuned columns.
--profile prints, per model, the ten slowest tasks inside the model (Model.profile) next to onnxruntime's
own per-node profile summed by op type.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ansorc.cli import TRIALS_PER_MINUTE  # noqa: E402
from ansorc.net.profile import alternate, ort_session  # noqa: E402

from tests.corpus import CORPUS, example_inputs, export  # noqa: E402

TOLERANCE = 1e-4   # relative L2 of every output against onnxruntime's


def rel_l2(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def machine() -> str:
    """Where a row was measured: the CPU's model name, its widest ISA, the commit and onnxruntime's version."""
    import onnxruntime

    from ansorc.codegen.target import host_isas
    info = {}
    if Path("/proc/cpuinfo").exists():
        for line in open("/proc/cpuinfo"):
            key, _, value = line.partition(":")
            info.setdefault(key.strip(), value.strip())
    cpu = info.get("model name", platform.processor() or platform.machine())
    if "cpu family" in info:
        cpu += f" (family {info['cpu family']} model {info.get('model', '?')}, {host_isas()[0]})"
    commit = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=Path(__file__).resolve().parents[1],
                            capture_output=True, text=True).stdout.strip() or "unknown"
    return f"{cpu}, commit {commit}, onnxruntime {onnxruntime.__version__}"


def bench_model(name: str, rounds: int, threads: int, profile: bool, tune_minutes: float = 0.0,
                log_dir: str = "") -> dict:
    import onnx

    import ansorc.net
    path = export(name)
    proto = onnx.load(str(path))
    feeds = example_inputs(name)
    row = {"model": name, "family": CORPUS[name].family, "machine": machine(),
           "ops": len({n.op_type for n in proto.graph.node}), "nodes": len(proto.graph.node)}
    sess = ort_session(proto, threads, profile_prefix=f"/tmp/ort_{name}" if profile else None)
    want = sess.run(None, feeds)
    t0 = time.perf_counter()
    try:
        model = ansorc.net.compile(str(path), trials=0)
    except Exception as e:   # noqa: BLE001 - a row saying why, the corpus goes on
        row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
        return row
    row["compile_s"] = round(time.perf_counter() - t0, 1)
    row["tasks"] = len(model.tasks)
    args = [feeds[n] for n in model.input_names]
    got = model(*args)
    row["rel_l2"] = max(rel_l2(g, w) for g, w in zip(got, want))
    runs = {"ansorc": lambda: model(*args), "ort": lambda: sess.run(None, feeds)}
    tuned = tune_model(name, path, tune_minutes, log_dir, row) if tune_minutes else None
    if tuned is not None:
        row["tuned_rel_l2"] = max(rel_l2(g, w) for g, w in zip(tuned(*args), want))
        runs["tuned"] = lambda: tuned(*args)
    times = alternate(runs, rounds)
    row["ansorc_ms"], row["ort_ms"] = times["ansorc"] * 1e3, times["ort"] * 1e3
    row["speedup"] = times["ort"] / times["ansorc"]
    if tuned is not None:
        row["tuned_ms"], row["tuned_speedup"] = times["tuned"] * 1e3, times["ort"] / times["tuned"]
        tuned.close()
    if profile:
        print_profile(name, model, args, sess)
    model.close()
    return row


def tune_model(name: str, path, minutes: float, log_dir: str, row: dict):
    """The model tuned for `minutes` of wall time (task scheduler), compiled from its log; row gets the
    tuning's wall time and trials."""
    import ansorc.net
    from ansorc.net.tune import tune_network
    from ansorc.search.tuning import TuneOptions
    log, done = str(Path(log_dir) / f"{name}.jsonl"), Path(log_dir) / f"{name}.tuning.json"
    if not done.exists():   # tuned once: a later run only times it again
        t0 = time.perf_counter()
        run = tune_network(str(path), max(64, round(minutes * TRIALS_PER_MINUTE)), log,
                           options=TuneOptions(progress=False), time_budget=minutes * 60)
        done.write_text(json.dumps({"tune_s": round(time.perf_counter() - t0), "minutes": minutes,
                                    "trials": sum(r.trials for r in run.result.results)}))
    tuning = json.loads(done.read_text())
    row["tune_s"], row["trials"] = tuning["tune_s"], tuning["trials"]
    return ansorc.net.compile(str(path), trials=0, log=log)


def print_profile(name: str, model, args, sess) -> None:
    prof = model.profile(*args, rounds=10)
    by_group = {}
    for p in prof:
        by_group[p["group"]] = by_group.get(p["group"], 0.0) + p["seconds"]
    total = sum(by_group.values())
    print(f"\n{name}: ansorc kernels {total * 1e3:.2f} ms; slowest groups")
    for g, s in sorted(by_group.items(), key=lambda x: -x[1])[:10]:
        print(f"  {s * 1e3:8.3f} ms {100 * s / total:5.1f}%  {g}")
    for _ in range(10):
        sess.run(None, {i.name: a for i, a in zip(sess.get_inputs(), args)})
    trace = json.load(open(sess.end_profiling()))
    by_op = {}
    for ev in trace:
        if ev.get("cat") == "Node" and ev["name"].endswith("_kernel_time"):
            op = ev["args"]["op_name"]
            by_op[op] = by_op.get(op, 0.0) + ev["dur"] / 1e3 / 11
    print(f"{name}: onnxruntime per op type (ms per run): " +
          ", ".join(f"{k} {v:.2f}" for k, v in sorted(by_op.items(), key=lambda x: -x[1])[:8]))


def table(rows: list) -> str:
    ok = [r for r in rows if "speedup" in r]
    tuned = [r for r in ok if "tuned_speedup" in r]
    geo = _geomean(r["speedup"] for r in ok)
    cols = ["model", "family", "ONNX ops", "tasks", "compile s", "rel L2 vs ort", "ansorc ms", "onnxruntime ms",
            "untuned"] + (["tuning s (trials)", "tuned ms", "tuned"] if tuned else [])
    lines = ["| " + " | ".join(cols) + " |", "|" + " --- |" * len(cols)]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['family']} | {r['ops']} | - | - | {r['error']} |" + " - |" *
                         (len(cols) - 6))
            continue
        cells = [r["model"], r["family"], r["ops"], r["tasks"], r["compile_s"], f"{r['rel_l2']:.1e}",
                 f"{r['ansorc_ms']:.2f}", f"{r['ort_ms']:.2f}", f"{r['speedup']:.2f}x"]
        if tuned:
            cells += [f"{r['tune_s']} ({r['trials']})", f"{r['tuned_ms']:.2f}", f"{r['tuned_speedup']:.2f}x"] \
                if "tuned_speedup" in r else ["-", "-", "-"]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    lines.append(f"\n{len(ok)} of {len(rows)} compile and run; {sum(r['rel_l2'] <= TOLERANCE for r in ok)} within "
                 f"{TOLERANCE:g} of onnxruntime; geometric mean {geo:.2f}x onnxruntime untuned.")
    if tuned:
        lines.append(f"Tuned: {len(tuned)} models, geometric mean {_geomean(r['tuned_speedup'] for r in tuned):.2f}x "
                     f"onnxruntime ({_geomean(r['speedup'] for r in tuned):.2f}x untuned for the same models), "
                     f"{sum(r['tuned_rel_l2'] <= TOLERANCE for r in tuned)} within {TOLERANCE:g}.")
    return "\n".join(lines) + "\n"


def _geomean(values) -> float:
    logs = [math.log(v) for v in values]
    return math.exp(statistics.mean(logs)) if logs else float("nan")


def chart(rows: list, out: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ok = [r for r in rows if "speedup" in r]
    fig, ax = plt.subplots(figsize=(8, 0.3 * len(ok) + 1.2))
    tuned = any("tuned_speedup" in r for r in ok)
    height = 0.4 if tuned else 0.8
    ys = range(len(ok))
    ax.barh([y - (height / 2 if tuned else 0) for y in ys], [r["speedup"] for r in ok], height=height,
            color=["tab:green" if r["speedup"] >= 1 else "tab:red" for r in ok], label="untuned")
    if tuned:
        ax.barh([y + height / 2 for y in ys], [r.get("tuned_speedup", 0) for r in ok], height=height,
                color="tab:blue", label="tuned")
        ax.legend(loc="lower right")
    ax.set_yticks(list(ys), [r["model"] for r in ok])
    ax.axvline(1.0, color="k", lw=0.8)
    ax.invert_yaxis()
    ax.set_xlabel("onnxruntime time / ansorc time (2 threads)")
    fig.tight_layout()
    fig.savefig(out, dpi=90)


def measured_on(rows: list) -> str:
    """The head's line saying where the rows were measured (rows of a resumed run may differ)."""
    where = {}
    for r in rows:
        where.setdefault(r.get("machine", "an unrecorded machine"), []).append(r["model"])
    if len(where) == 1:
        return f"Measured on {next(iter(where))}.\n\n"
    return "".join(f"- {m}: {', '.join(names)}\n" for m, names in where.items()) + "\n"


def _done_rows(log_dir: str) -> dict:
    path = Path(log_dir) / "rows.jsonl"
    Path(log_dir).mkdir(parents=True, exist_ok=True)
    return {r["model"]: r for r in map(json.loads, path.read_text().splitlines())} if path.exists() else {}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(CORPUS))
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--out", help="markdown table path (a PNG chart beside it)")
    ap.add_argument("--tune-minutes", type=float, default=0.0, help="tune each model this long (wall time)")
    ap.add_argument("--log-dir", help="tuning logs and finished rows (rows.jsonl); needed with --tune-minutes")
    args = ap.parse_args(argv)
    if args.tune_minutes and not args.log_dir:
        ap.error("--tune-minutes needs --log-dir")
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    done = _done_rows(args.log_dir) if args.tune_minutes else {}
    rows = []
    for name in args.models.split(","):
        if name in done:
            rows.append(done[name])
            continue
        rows.append(bench_model(name, args.rounds, args.threads, args.profile, args.tune_minutes,
                                args.log_dir or ""))
        print(json.dumps(rows[-1]), flush=True)
        if args.tune_minutes:
            with open(Path(args.log_dir) / "rows.jsonl", "a") as f:
                f.write(json.dumps(rows[-1]) + "\n")
    text = table(rows)
    print(text)
    if args.out:
        tuning = f"--tune-minutes {args.tune_minutes:g} --log-dir LOGS " if args.tune_minutes else ""
        head = (f"# The model corpus against onnxruntime{'' if tuning else ', untuned'}\n\n"
                f"`python bench/corpus_bench.py {tuning}--out {args.out}`, {time.strftime('%Y-%m-%d')}, "
                f"{args.threads} threads, {args.rounds} alternating rounds, medians.\n\n" + measured_on(rows))
        Path(args.out).write_text(head + text)
        chart(rows, str(Path(args.out).with_suffix(".png")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
