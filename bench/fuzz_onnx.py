"""The long run of the ONNX sanitizer fuzz test: N random ONNX graphs (tests/cpu/fuzz_onnx_graphs.py) compiled by
ansorc's network path (trials=0), the model library built with -fsanitize=address,undefined and run against
onnxruntime (tests/cpu/fuzz_onnx_check.py has the outcomes).

    python bench/fuzz_onnx.py --graphs 2000 --seed 0 --out /tmp/fuzz_onnx.json

Prints the counts as it goes; writes a JSON summary: the counts, the coverage gaps by op, and each failure with
its seed (graph_for_seed(seed) rebuilds it) and the graph. Exit 1 when any graph failed.
"""
from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.cpu.fuzz_onnx_check import Outcome, check_graph  # noqa: E402
from tests.cpu.fuzz_onnx_graphs import graph_for_seed, tolerances  # noqa: E402


def one(seed: int):
    graph = graph_for_seed(seed)
    try:
        return graph, check_graph(graph.model, graph.feeds, *tolerances(graph))
    except Exception as e:  # noqa: BLE001 - the harness's own failure (a build error, a timeout) is a finding too
        return graph, Outcome("crash", f"harness: {type(e).__name__}: {str(e)[:2000]}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="write the counts and failures as JSON here")
    args = ap.parse_args(argv)
    counts, gaps, failures = collections.Counter(), collections.Counter(), []
    start = time.time()

    def summary() -> dict:
        return {"graphs": args.graphs, "seed": args.seed, "seconds": round(time.time() - start, 1),
                "counts": dict(counts), "coverage_gaps": dict(gaps.most_common(40)), "failures": failures}
    for k in range(args.graphs):
        seed = args.seed * 1_000_003 + k
        graph, outcome = one(seed)
        counts[outcome.kind] += 1
        if outcome.kind == "coverage":
            gaps[outcome.detail.split("ansorc: ", 1)[-1][:160]] += 1
        if outcome.failed:
            failures.append({"seed": seed, "kind": outcome.kind, "graph": graph.describe(),
                             "detail": outcome.detail[:3000]})
            print(f"graph {k} (seed {seed}) {outcome.kind}: {graph.describe()[:300]}\n  {outcome.detail[:400]}",
                  flush=True)
        if (k + 1) % 50 == 0:
            print(f"{k + 1} graphs, {time.time() - start:.0f} s: {dict(counts)}", flush=True)
            if args.out:
                Path(args.out).write_text(json.dumps(summary(), indent=1) + "\n")
    result = summary()
    print(json.dumps({k: v for k, v in result.items() if k not in ("failures", "coverage_gaps")}))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
