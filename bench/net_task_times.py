"""Per-task latency of a zoo model under the default (untuned) programs: each task built alone and timed on
random inputs, weighted by how often the network runs it. Shows which fused groups dominate the model. The
figure is the fastest of `calls` calls: on a machine shared with other work, a call the OS preempted is slower
for reasons the program does not control (OMP_NUM_THREADS=1 steadies it further).

    python bench/net_task_times.py --model resnet18 --layout nhwc [--top 15]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ansorc  # noqa: E402
from ansorc.ir.evaluate import random_inputs  # noqa: E402
from ansorc.net import zoo  # noqa: E402
from ansorc.net.fuse import fuse  # noqa: E402
from ansorc.net.importer import import_model  # noqa: E402
from ansorc.net.tasks import extract_tasks  # noqa: E402
from ansorc.search.default_schedule import default_cpu_schedule  # noqa: E402


def time_task(dag, calls: int) -> float:
    kern = ansorc.build(list(dag.inputs) + list(dag.outputs), default_cpu_schedule(dag))
    feeds = random_inputs(dag.inputs, 0)
    bufs = [ansorc.array(feeds[t.name]) for t in dag.inputs] + [ansorc.empty(t.shape, t.dtype) for t in dag.outputs]
    kern(*bufs)
    ts = []
    for _ in range(calls):
        t = time.perf_counter()
        kern(*bufs)
        ts.append(time.perf_counter() - t)
    return min(ts)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--layout", default="nhwc")
    ap.add_argument("--calls", type=int, default=15)
    ap.add_argument("--top", type=int, default=15)
    args = ap.parse_args(argv)
    net = import_model(getattr(zoo, args.model)(), layout=args.layout)
    rows = []
    for t in extract_tasks(net, fuse(net)):
        s = time_task(t.dag, args.calls)
        rows.append((s * t.weight, s, t))
    total = sum(r[0] for r in rows)
    print(f"{args.model} {args.layout}: {len(rows)} tasks, sum of weighted task minima {total * 1e3:.2f} ms")
    for w, s, t in sorted(rows, key=lambda r: -r[0])[:args.top]:
        ops = ",".join(sorted({o.tag or "-" for o in t.dag.ops if hasattr(o, "tag") and getattr(o, "tag", "")}))
        print(f"  {w * 1e3:8.2f} ms  {t.weight}x {s * 1e3:7.3f} ms  {t.flops / s / 1e9 if s else 0:7.2f} GFLOP/s  "
              f"{t.name[:40]:40s} {ops} {[tuple(o.shape) for o in t.dag.outputs]}")


if __name__ == "__main__":
    main()
