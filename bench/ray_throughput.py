"""Distributed tuning throughput: candidates built and measured per minute, locally and through a local Ray
cluster with one and with two worker nodes, and the N-node model of docs/distributed.md from the measured
per-candidate search, build and run times.

    python bench/ray_throughput.py --trials 32 --n 256      # GMM 256, the tuner's defaults (LightGBM model)

Single task: ansorc.tune locally and with one and two worker nodes. Several tasks (--multi-trials): tune_tasks
on three GEMM-like tasks with one and two worker nodes, rounds one at a time ("sequential", in_flight=1) or
overlapped (the backend's slots(): nodes + 1), with the driver's time split into search, model update,
recording and waiting. The LightGBM retraining time is also timed on synthetic feature rows of 1,000 to 20,000
programs (--model-sizes), since the model is retrained on all data as it grows.
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
        r = ansorc.tune(tensors, trials=trials, log=os.path.join(tmp, "log.jsonl"), backend=backend,
                        options=ansorc.TuneOptions(seed=seed, progress=False, retime_top=0))
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


def _multi_tasks():
    from ansorc import workloads
    from ansorc.search.task import SearchTask
    return [SearchTask(workloads.matmul(128, 128, 128), "native"), SearchTask(workloads.matmul_relu(128, 256, 64),
            "native"), SearchTask(workloads.matmul(64, 256, 128), "native")]


def _multi_run(workers: int, trials: int, per_round: int, seed: int, in_flight) -> dict:
    """tune_tasks over three tasks on a cluster of `workers` worker nodes: throughput and the driver's times."""
    from ansorc.measure.ray_backend import RayBackend
    from ansorc.measure.ray_local import LocalCluster
    from ansorc.measure.ray_nodes import target_resource
    from ansorc.search.multi import tune_tasks
    from ansorc.search.tuning import TuneOptions
    res = target_resource("native")
    with LocalCluster(python_path=str(ROOT)) as cluster:
        cluster.start({}, num_cpus=0)
        for k in range(workers):
            cluster.add(f"w{k + 1}", {res: 1}, num_cpus=1)
        with RayBackend(cluster.address, "native") as backend, \
                tempfile.TemporaryDirectory(prefix="ansorc-rt-") as tmp:
            start = time.perf_counter()
            out = tune_tasks(_multi_tasks(), trials=trials, log=os.path.join(tmp, "log.jsonl"),
                             backend=backend,
                             in_flight=in_flight,
                                 options=TuneOptions(seed=seed, per_round=per_round, progress=False, retime_top=0))
            wall = time.perf_counter() - start
            peak = backend.peak_batches
    n = max(sum(r.trials for r in out.results), 1)
    row = {"trials": n, "in_flight": in_flight or f"slots()={workers + 1}", "wall_s": round(wall, 1),
           "per_minute": round(60 * n / wall, 1), "peak_batches_measured_at_once": peak,
           "load_avg_1m_after": round(os.getloadavg()[0], 2)}
    row.update(out.driver.summary())
    return row


def model_training(sizes, pool: int = 500, seed: int = 0) -> dict:
    """Seconds LGBModel.train takes on `sizes` programs: feature matrices of `pool` sampled GEMM programs, drawn
    with replacement, with random costs (the training time depends on the rows and their values' spread)."""
    import numpy as np
    from ansorc import workloads
    from ansorc.search.annotate import sample
    from ansorc.search.cost_model import LGBModel
    from ansorc.search.features import extract_states
    from ansorc.search.task import SearchTask
    task = SearchTask(workloads.matmul(64, 64, 64), "native")
    feats = [f for f in extract_states(sample(task, pool, seed=seed), hw=task.hw) if len(f)]
    rng = np.random.default_rng(seed)
    out = {"feature_width": int(feats[0].shape[1]), "rows_per_program": float(np.mean([len(f) for f in feats]))}
    for n in sizes:
        m = LGBModel(seed=seed)
        m.feats = {("w", str(k)): feats[rng.integers(len(feats))] for k in range(n)}
        m.costs = {k: float(rng.uniform(1e-4, 1e-2)) for k in m.feats}
        start = time.perf_counter()
        m.train()
        out[str(n)] = round(time.perf_counter() - start, 2)
    return out


def overlapped_model(search: float, model_s: float, build: float, run: float, cores: int, train_total: float,
                     trials: int = 20000) -> dict:
    """Overlapped rounds: the driver searches and learns while the nodes measure, so one candidate costs
    t(N) = max(d, (b / c + r) / N), d = search + model update per candidate; the driver is the limit from
    N* = (b / c + r) / d on. train_total: LightGBM retraining over the whole run (retrained on all data each
    time the data grew 20%: about 6 x one training at the final size), spread over the trials."""
    d = search + model_s + train_total / trials
    per_node = build / cores + run
    hours = {n: round(trials * max(d, per_node / n) / 3600, 2) for n in (1, 2, 4, 8, 16, 32, 64)}
    return {"driver_s_per_cand": round(d, 4), "node_s_per_cand": round(per_node, 4),
            "n_star": round(per_node / d, 1) if d > 0 else None, "resnet50_hours_by_nodes": hours,
            "driver_bound_hours": round(trials * d / 3600, 2)}


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
    p.add_argument("--multi-trials", type=int, default=96, help="tune_tasks budget (three tasks); 0 skips")
    p.add_argument("--per-round", type=int, default=16, help="tune_tasks programs per round")
    p.add_argument("--model-sizes", default="1000,5000,20000", help="programs to time LightGBM training on")
    p.add_argument("--skip-single", action="store_true", help="only the several-task runs and the model")
    p.add_argument("--out", help="write the JSON here too")
    a = p.parse_args(argv)
    load_before = round(os.getloadavg()[0], 2)
    with tempfile.TemporaryDirectory(prefix="ansorc-rt-cache-") as cache:
        os.environ["ANSORC_CACHE_DIR"] = cache
        from ansorc import workloads
        tensors = workloads.matmul(a.n, a.n, a.n)
        rows = {} if a.skip_single else {"local": _tune(tensors, a.trials, a.seed)}
        for workers in () if a.skip_single else (1, 2):
            os.environ["ANSORC_CACHE_DIR"] = os.path.join(cache, f"driver{workers}")  # nothing built here
            rows[f"ray_{workers}_worker"] = _cluster_run(tensors, workers, a.trials, a.seed)
        multi = {}
        for workers in (1, 2) if a.multi_trials else ():
            for mode, flights in (("sequential", 1), ("overlapped", None)):
                os.environ["ANSORC_CACHE_DIR"] = os.path.join(cache, f"multi{workers}{mode}")
                multi[f"ray_{workers}_worker_{mode}"] = _multi_run(workers, a.multi_trials, a.per_round, a.seed,
                                                                   flights)
        training = model_training([int(x) for x in a.model_sizes.split(",") if x])
    result = {"workload": f"GMM {a.n}", "trials": a.trials, "cpus_here": os.cpu_count(),
              "load_avg_1m_before": load_before, "rows": rows, "multi_task": multi, "lgbm_train_s": training}
    local = rows.get("local")
    if local:
        result["model"] = model(local["search_s_per_cand"], local["build_s_per_cand"] * (os.cpu_count() or 1),
                                local["run_s_per_cand"], a.cores)
    over = multi.get("ray_2_worker_overlapped")
    if local and over:
        biggest = max(int(k) for k in training if k.isdigit())
        result["overlapped_model"] = overlapped_model(
            over["search_ms_per_candidate"] / 1e3, over["model_ms_per_candidate"] / 1e3,
            local["build_s_per_cand"] * (os.cpu_count() or 1), local["run_s_per_cand"], a.cores,
            6 * training[str(biggest)] * 20000 / biggest)
    text = json.dumps(result, indent=1)
    print(text)
    if a.out:
        Path(a.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
