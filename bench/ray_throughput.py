"""Distributed tuning throughput: candidates built and measured per minute, locally and through a local Ray
cluster with one and with two worker nodes, and the N-node model of docs/distributed.md from the measured
per-candidate search, build and run times.

    python bench/ray_throughput.py --trials 32 --n 256      # GMM 256, the tuner's defaults (LightGBM model)

Each configuration tunes the same workload from an empty log with fresh build caches (every build is real).
The head node coordinates only (no CPUs, no target resource); each worker node has --num-cpus 1 and the
target's resource. All nodes here share one machine, so two workers share one timing token and two cores:
on this machine the figure says what the overhead of the cluster is, not what a second machine would add.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["RAY_USAGE_STATS_ENABLED"] = "0"


def _tune(tensors, trials: int, seed: int, backend=None) -> dict:
    import ansorc
    with tempfile.TemporaryDirectory(prefix="ansorc-rt-") as tmp:
        start = time.perf_counter()
        r = ansorc.tune(tensors, trials=trials, log=os.path.join(tmp, "log.jsonl"), seed=seed, progress=False,
                        retime_top=0, backend=backend)
        wall = time.perf_counter() - start
    n = max(r.trials, 1)
    return {"trials": r.trials, "wall_s": round(wall, 1), "per_minute": round(60 * r.trials / wall, 1),
            "search_s_per_cand": round(r.overhead_seconds / n, 4), "build_s_per_cand": round(r.build_seconds / n, 4),
            "run_s_per_cand": round(r.run_seconds / n, 4), "best_gflops": round(r.best_gflops, 1)}


def _cluster_run(tensors, workers: int, trials: int, seed: int) -> dict:
    from ansorc.measure.ray_backend import RayBackend
    from ansorc.measure.ray_local import LocalCluster
    from ansorc.measure.ray_nodes import target_resource
    res = target_resource("native")
    with LocalCluster(python_path=str(ROOT)) as cluster:
        cluster.start({}, num_cpus=0)
        for k in range(workers):
            cluster.add(f"w{k + 1}", {res: 1}, num_cpus=1)
        with RayBackend(cluster.address, "native") as backend:
            out = _tune(tensors, trials, seed, backend)
            out["measured_by_node"] = sorted(backend.measured_by.values())
    return out


def model(search: float, build: float, run: float, cores: int, trials: int = 20000) -> dict:
    """The tuner's round is synchronous (search, then build, then run), so one candidate costs the driver's
    search plus its share of the cluster's work: t(N) = s + (b / c + r) / N. The driver is the limit from
    N* = (b / c + r) / s nodes on; beyond that, at most 1 / s candidates per second."""
    per_node = build / cores + run
    n_star = per_node / search if search > 0 else float("inf")
    hours = {n: round(trials * (search + per_node / n) / 3600, 2) for n in (1, 2, 4, 8, 16, 32, 64)}
    return {"node_s_per_cand": round(per_node, 4), "n_star": round(n_star, 1), "resnet50_hours_by_nodes": hours,
            "driver_bound_hours": round(trials * search / 3600, 2)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trials", type=int, default=32)
    p.add_argument("--n", type=int, default=256, help="GMM size (n x n x n)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cores", type=int, default=16, help="cores per node assumed by the model")
    p.add_argument("--out", help="write the JSON here too")
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ansorc-rt-cache-") as cache:
        os.environ["ANSORC_CACHE_DIR"] = cache
        from ansorc import workloads
        tensors = workloads.matmul(a.n, a.n, a.n)
        rows = {"local": _tune(tensors, a.trials, a.seed)}
        for workers in (1, 2):
            os.environ["ANSORC_CACHE_DIR"] = os.path.join(cache, f"driver{workers}")  # nothing built here
            rows[f"ray_{workers}_worker"] = _cluster_run(tensors, workers, a.trials, a.seed)
    local = rows["local"]
    result = {"workload": f"GMM {a.n}", "trials": a.trials, "cpus_here": os.cpu_count(), "rows": rows,
              "model": model(local["search_s_per_cand"], local["build_s_per_cand"] * (os.cpu_count() or 1),
                             local["run_s_per_cand"], a.cores)}
    text = json.dumps(result, indent=1)
    print(text)
    if a.out:
        Path(a.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
