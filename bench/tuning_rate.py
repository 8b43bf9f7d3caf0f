"""Tuning throughput: trials per minute of a real tuning run, split into build, run and search time.

    python bench/tuning_rate.py --trials 256            # GMM 1024, tuner defaults, empty build cache
    python bench/tuning_rate.py --op C2D --trials 192   # C2D 1,56,56,64,64,3,1,1 (56x56x64->64, 3x3)
    python bench/tuning_rate.py --model resnet18 --trials 300   # a corpus model, task scheduler (tests/corpus.py)

CPU seconds per trial (this process and its children: search workers, compilers, the timed kernels) are printed
too: unlike trials per minute they hardly move when other jobs share the machine, so two versions of the tuner
compare by them on a busy machine.

Every build is real (a fresh temporary ANSORC_CACHE_DIR), so the figure compares with a tuner that compiles every
candidate. For scale: TVM MetaSchedule builds and runs 64 GMM 1024 candidates in about 56 s on the 2-core dev VM.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _cpu_seconds() -> float:
    import resource
    return sum(u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_SELF),
                                                  resource.getrusage(resource.RUSAGE_CHILDREN)))


def _tune_model(model: str, trials: int, seed: int, tmp: str):
    """The model's tasks tuned together; returns one object with the summed times (TuneResult's names)."""
    from types import SimpleNamespace

    from ansorc.net.tune import tune_network
    from ansorc.search.tuning import TuneOptions
    from tests.corpus import export
    run = tune_network(str(export(model)), trials, os.path.join(tmp, "log.jsonl"),
                       options=TuneOptions(seed=seed, progress=False))
    rs = run.result.results
    total = {k: sum(getattr(r, k) for r in rs) for k in ("build_seconds", "run_seconds", "overhead_seconds",
                                                         "retime_seconds", "model_seconds")}
    return SimpleNamespace(**total, best_gflops=0.0, curve=[(t, 1e3 * v) for t, v in run.result.curve])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trials", type=int, default=256)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--op", choices=("GMM", "C2D"), default="GMM")
    p.add_argument("--n", type=int, default=1024, help="GMM size (n x n x n)")
    p.add_argument("--model", help="a corpus model (tests/corpus.py) tuned with the task scheduler instead")
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ansorc-rate-") as tmp:
        os.environ["ANSORC_CACHE_DIR"] = tmp  # before the import: the builder reads it per call, but be explicit
        import ansorc
        from ansorc import workloads
        if a.op == "GMM":
            name, tensors = f"GMM {a.n}", workloads.matmul(a.n, a.n, a.n)
        else:
            name, tensors = "C2D 1,56,56,64,64,3,1,1", workloads.WORKLOADS["C2D"][0](1, 56, 56, 64, 64, 3, 1, 1)
        start, cpu0 = time.perf_counter(), _cpu_seconds()
        if a.model:
            name, r = a.model, _tune_model(a.model, a.trials, a.seed, tmp)
        else:
            r = ansorc.tune(tensors, trials=a.trials, log=os.path.join(tmp, "log.jsonl"),
                            options=ansorc.TuneOptions(seed=a.seed, progress=False))
        from ansorc.search.parallel import close_pool
        close_pool()   # its workers' CPU time counts once they are joined
        wall, cpu = time.perf_counter() - start, _cpu_seconds() - cpu0
    print(json.dumps({"workload": name, "trials": a.trials, "seed": a.seed, "wall_s": round(wall, 1),
                      "cpu_s_per_trial": round(cpu / a.trials, 3),
                      "build_s": round(r.build_seconds, 1), "run_s": round(r.run_seconds, 1),
                      "search_s": round(r.overhead_seconds, 1), "retime_s": round(r.retime_seconds, 1),
                      "model_s": round(r.model_seconds, 1),
                      "best_gflops_retimed": round(r.best_gflops, 1),
                      "trials_per_min_build_and_run": round(60 * a.trials / (r.build_seconds + r.run_seconds), 1),
                      "trials_per_min_wall": round(60 * a.trials / wall, 1),
                      "curve": [(t, round(g, 1)) for t, g in r.curve][-8:]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
