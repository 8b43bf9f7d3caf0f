"""Where a compiled model's time goes: each kernel call timed inside the library (Model.profile), grouped by task,
next to the task's best latency in the log (timed alone, warm caches) and its FLOP rate.

    python bench/net_profile.py --model resnet18 [--log L] [--rounds 20] [--top 15] [--vs-onnxruntime]

The gap between the log's estimate (sum of weight x best) and the measured run shows up per task: a task far
slower inside the network than alone is cache-cold there or measured under other load. --vs-onnxruntime runs
onnxruntime (node profiling on) alternately with the profiled model, and prints its node times beside ours.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def task_rows(net, prof: list, log) -> list:
    from ansorc.measure.record import load
    from ansorc.search.tuning import best_logged
    from ansorc.net.fuse import fuse
    from ansorc.net.tasks import extract_tasks
    records = load(log) if log and Path(log).exists() else []
    per_group = {p["group"]: p["seconds"] for p in prof}
    rows = []
    for t in extract_tasks(net, fuse(net)):
        inside = sum(per_group.get(g, 0.0) for g in t.groups)
        top = best_logged(records, t.dag, "native", k=1) if records else []
        alone = top[0].median * t.weight if top else None
        rows.append({"task": t.name, "weight": t.weight, "inside_ms": inside * 1e3,
                     "alone_ms": None if alone is None else alone * 1e3,
                     "gflops": t.flops * t.weight / inside / 1e9 if inside > 0 else 0.0})
    return rows


def table(rows: list, top: int) -> str:
    total = sum(r["inside_ms"] for r in rows) or 1.0
    out = ["| task | weight | in the model ms | share | alone (log) ms | GFLOP/s |",
           "| --- | --- | --- | --- | --- | --- |"]
    for r in sorted(rows, key=lambda r: -r["inside_ms"])[:top]:
        alone = "-" if r["alone_ms"] is None else f"{r['alone_ms']:.3f}"
        out.append(f"| {r['task']} | {r['weight']} | {r['inside_ms']:.3f} | {100 * r['inside_ms'] / total:.1f}% "
                   f"| {alone} | {r['gflops']:.1f} |")
    logged = [r["alone_ms"] for r in rows if r["alone_ms"] is not None]
    est = f"{sum(logged):.3f}" if len(logged) == len(rows) else "-"
    out.append(f"| all {len(rows)} tasks | | {total:.3f} | 100% | {est} | |")
    return "\n".join(out)


def ort_node_table(model, feeds_: dict, lib, ordered: list, rounds: int, top: int) -> tuple:
    """(our per-call profile, onnxruntime's top nodes as a markdown table, its node sum in ms): the two run
    alternately, one of ours then one of onnxruntime's, `rounds` times, so drift hits both alike."""
    import collections
    import json
    import tempfile

    from net_bench import ort_session
    sess = ort_session(model, int(os.environ["OMP_NUM_THREADS"]), tempfile.mkdtemp() + "/ort")
    ours = collections.defaultdict(float)
    sess.run(None, feeds_)
    for _ in range(rounds):
        for q in lib.profile(*ordered, rounds=1):
            ours[(q["group"], q["kernel"])] += q["seconds"] / rounds
        sess.run(None, feeds_)
    nodes = collections.defaultdict(float)
    for e in json.loads(Path(sess.end_profiling()).read_text()):
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            name = f"{e['args'].get('op_name', '?')} {e['name'][:-len('_kernel_time')]}"
            nodes[name] += e["dur"] / 1e3 / (rounds + 1)
    rows = ["| onnxruntime node | ms |", "| --- | --- |"]
    rows += [f"| {k} | {v:.3f} |" for k, v in sorted(nodes.items(), key=lambda kv: -kv[1])[:top]]
    prof = [{"group": g, "kernel": k, "seconds": s} for (g, k), s in ours.items()]
    return prof, "\n".join(rows), sum(nodes.values())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="resnet18")
    p.add_argument("--log", help="tuning log (default programs without)")
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--top", type=int, default=15)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--vs-onnxruntime", action="store_true", help="onnxruntime's node times beside, alternating")
    args = p.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    import time

    import ansorc.net
    from ansorc.net import zoo
    from ansorc.net.importer import import_model
    from net_bench import feeds
    onnx_model = getattr(zoo, args.model)()
    net = import_model(onnx_model)
    x = feeds(onnx_model)
    ordered = [x[vi.name] for vi in onnx_model.graph.input]
    ort_table = None
    with ansorc.net.compile(net, log=args.log) as lib:
        if args.vs_onnxruntime:
            prof, ort_table, ort_ms = ort_node_table(onnx_model, x, lib, ordered, args.rounds, args.top)
        else:
            prof = lib.profile(*ordered, rounds=args.rounds)
        t = time.perf_counter()
        for _ in range(args.rounds):
            lib(*ordered)
        whole = (time.perf_counter() - t) / args.rounds
    print(table(task_rows(net, prof, args.log), args.top))
    print(f"\nwhole run (mean of {args.rounds}, profiling off): {whole * 1e3:.3f} ms")
    if ort_table:
        print(f"\n{ort_table}\n\nonnxruntime's node times sum to {ort_ms:.3f} ms (alternating with ours: same drift)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
