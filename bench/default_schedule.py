"""The default schedule of untuned tasks vs the naive loop nest vs a short tuning run, timed side by side.

    python bench/default_schedule.py [--trials 32] [--rounds 5] [--calls 5] [--workloads GMM:2 C2D:1 C2D:2]

Each workload NAME:INDEX is the INDEX-th shape of ansorc.workloads. Every contender is checked against the numpy
reference first, then timed in rounds (a block of `calls` calls per contender per round, contenders in turn);
the figure is the median over rounds of the block medians. On a shared machine, OMP_NUM_THREADS=1 gives steadier
figures: a parallel kernel waits at its barrier for whichever thread the OS took away.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ansorc  # noqa: E402
from ansorc import workloads  # noqa: E402
from ansorc.ir.evaluate import evaluate, random_inputs  # noqa: E402
from ansorc.search.default_schedule import default_cpu_schedule  # noqa: E402


def _block(kern, args, calls: int) -> float:
    kern(*args)
    ts = []
    for _ in range(calls):
        t = time.perf_counter()
        kern(*args)
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def contenders(tensors, trials: int, log: str) -> dict:
    dag = ansorc.ComputeDAG(tensors)
    out = {"naive": ansorc.build(tensors, None), "default": ansorc.build(tensors, default_cpu_schedule(dag))}
    if trials:
        res = ansorc.tune(tensors, trials=trials, log=log, progress=False)
        out[f"tuned {trials}"] = ansorc.build(tensors, res.best_state)
    return out


def run(spec: str, args) -> None:
    name, _, index = spec.partition(":")
    tensors = workloads.make(name, int(index or 0))
    dag = ansorc.ComputeDAG(tensors)
    inputs = random_inputs(dag.inputs, 0)
    expected = evaluate(list(dag.outputs), inputs)
    bufs = [ansorc.array(inputs[t.name]) for t in dag.inputs] + [ansorc.empty(t.shape, t.dtype) for t in dag.outputs]
    with tempfile.TemporaryDirectory() as tmp:
        kerns = contenders(tensors, args.trials, str(Path(tmp) / "log.json"))
    for label, k in kerns.items():
        k(*bufs)
        np.testing.assert_allclose(bufs[-1], expected[dag.outputs[-1].name], rtol=1e-3, atol=1e-3, err_msg=label)
    times = {label: [] for label in kerns}
    for _ in range(args.rounds):
        for label, k in kerns.items():
            times[label].append(_block(k, bufs, args.calls))
    flops = dag.flop_count
    for label, ts in times.items():
        t = statistics.median(ts)
        print(f"{spec:8s} {label:10s} {t * 1e3:10.3f} ms {flops / t / 1e9:8.2f} GFLOP/s", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trials", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--workloads", nargs="+", default=["GMM:2", "C2D:1", "C2D:2"])
    args = ap.parse_args(argv)
    for spec in args.workloads:
        run(spec, args)


if __name__ == "__main__":
    main()
