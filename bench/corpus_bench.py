"""The model corpus (tests/corpus.py) compiled untuned and timed against onnxruntime: per model, its ops,
tasks, compile seconds, the relative L2 error of its outputs against onnxruntime's, and both latencies (2 threads,
the same inputs, alternating in one process, medians).

    python bench/corpus_bench.py --out bench/results/corpus.md          # the whole corpus; + corpus.png
    python bench/corpus_bench.py --models efficientnet_b0 --rounds 30 --profile

--profile prints, per model, the ten slowest tasks inside the model (Model.profile) next to onnxruntime's
own per-node profile summed by op type.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ansorc.net.profile import alternate, ort_session  # noqa: E402

from tests.corpus import CORPUS, example_inputs, export  # noqa: E402

TOLERANCE = 1e-4   # relative L2 of every output against onnxruntime's


def rel_l2(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def bench_model(name: str, rounds: int, threads: int, profile: bool) -> dict:
    import onnx

    import ansorc.net
    path = export(name)
    proto = onnx.load(str(path))
    feeds = example_inputs(name)
    row = {"model": name, "family": CORPUS[name].family,
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
    times = alternate({"ansorc": lambda: model(*args), "ort": lambda: sess.run(None, feeds)}, rounds)
    row["ansorc_ms"], row["ort_ms"] = times["ansorc"] * 1e3, times["ort"] * 1e3
    row["speedup"] = times["ort"] / times["ansorc"]
    if profile:
        print_profile(name, model, args, sess)
    model.close()
    return row


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
    geo = math.exp(statistics.mean(math.log(r["speedup"]) for r in ok)) if ok else float("nan")
    lines = ["| model | family | ONNX ops | tasks | compile s | rel L2 vs ort | ansorc ms | onnxruntime ms | untuned |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['family']} | {r['ops']} | - | - | {r['error']} | - | - | - |")
            continue
        lines.append(f"| {r['model']} | {r['family']} | {r['ops']} | {r['tasks']} | {r['compile_s']} | "
                     f"{r['rel_l2']:.1e} | {r['ansorc_ms']:.2f} | {r['ort_ms']:.2f} | {r['speedup']:.2f}x |")
    lines.append(f"\n{len(ok)} of {len(rows)} compile and run; {sum(r['rel_l2'] <= TOLERANCE for r in ok)} within "
                 f"{TOLERANCE:g} of onnxruntime; geometric mean {geo:.2f}x onnxruntime untuned.")
    return "\n".join(lines) + "\n"


def chart(rows: list, out: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ok = [r for r in rows if "speedup" in r]
    fig, ax = plt.subplots(figsize=(8, 0.3 * len(ok) + 1.2))
    ax.barh([r["model"] for r in ok], [r["speedup"] for r in ok],
            color=["tab:green" if r["speedup"] >= 1 else "tab:red" for r in ok])
    ax.axvline(1.0, color="k", lw=0.8)
    ax.invert_yaxis()
    ax.set_xlabel("onnxruntime time / ansorc time (untuned, 2 threads)")
    fig.tight_layout()
    fig.savefig(out, dpi=90)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(CORPUS))
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--out", help="markdown table path (a PNG chart beside it)")
    args = ap.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    rows = []
    for name in args.models.split(","):
        rows.append(bench_model(name, args.rounds, args.threads, args.profile))
        print(json.dumps(rows[-1]), flush=True)
    text = table(rows)
    print(text)
    if args.out:
        head = (f"# The model corpus against onnxruntime, untuned\n\n"
                f"`python bench/corpus_bench.py --out {args.out}`, {time.strftime('%Y-%m-%d')}, "
                f"{args.threads} threads, {args.rounds} alternating rounds, medians.\n\n")
        Path(args.out).write_text(head + text)
        chart(rows, str(Path(args.out).with_suffix(".png")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
