"""Tune GPU cases for a time budget each on this machine's GPU, resuming (and appending to) their logs.

    python bench/gpu_tune.py --cases GMM-1024,C2D-56x64,DEP-112x32 --seconds 60 --logs data/records/gpu/h200

One cost model is shared by the cases (and warm-started from the logs); search and nvcc use this machine's
cores; every candidate is checked against numpy's answer on the GPU. Prints, per case, trials, time, the best
program's time and TFLOP/s after re-timing the best few.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpu_cases import tensors  # noqa: E402

from ansorc.measure.record import RecordLog  # noqa: E402
from ansorc.search.evolution import SearchParams  # noqa: E402
from ansorc.search.task import SearchTask  # noqa: E402
from ansorc.search.tuner import local_backend  # noqa: E402
from ansorc.search.tuning import TaskTuner, TuneOptions, make_cost_model  # noqa: E402


def tune_case(case, seconds, log, model, backend, options) -> dict:
    task = SearchTask(tensors(case), options.target)
    t0 = time.time()
    tuner = TaskTuner(task, options.tune, model, backend, RecordLog(log))
    start_trials = tuner.done
    while time.time() - t0 < seconds and not tuner.exhausted:
        recs = tuner.step(options.tune.per_round)
        ok = sum(r.ok for r in recs)
        r = tuner.result
        print(f"  {case}: {tuner.done} trials ({ok}/{len(recs)} ok in the last round), best "
              f"{r.best_seconds * 1e6:.1f} us = {r.best_gflops / 1e3:.2f} TFLOP/s, {time.time() - t0:.0f} s "
              f"(search {r.overhead_seconds:.0f} s, nvcc {r.build_seconds:.0f} s, GPU {r.run_seconds:.0f} s)",
              flush=True)
    tuner.retime()
    r = tuner.result
    row = {"case": case, "trials": tuner.done, "new_trials": tuner.done - start_trials,
           "seconds": round(time.time() - t0, 1), "best_us": r.best_seconds * 1e6,
           "tflops": r.best_gflops / 1e3, "search_s": round(r.overhead_seconds, 1),
           "nvcc_s": round(r.build_seconds, 1), "gpu_s": round(r.run_seconds, 1)}
    print(f"{case}: best {row['best_us']:.1f} us ({row['tflops']:.2f} TFLOP/s) after {row['trials']} trials "
          f"({row['new_trials']} new, {row['seconds']} s)", flush=True)
    return row


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="GMM-1024,C2D-56x64,DEP-112x32", help="CASE[:SECONDS],...")
    ap.add_argument("--seconds", type=float, default=60.0, help="tuning budget per case")
    ap.add_argument("--logs", default="data/records/gpu/h200")
    ap.add_argument("--target", default="cuda")
    ap.add_argument("--per-round", type=int, default=64)
    ap.add_argument("--population", type=int, default=256)
    ap.add_argument("--json")
    args = ap.parse_args()
    Path(args.logs).mkdir(parents=True, exist_ok=True)
    tune = TuneOptions(per_round=args.per_round, progress=False, retime_top=4, retime_rounds=3,
                       params=SearchParams(population=args.population, generations=3))
    opts = argparse.Namespace(target=args.target, tune=tune)
    model = make_cost_model(tune)
    backend = local_backend(args.target, tune)   # the CUDA plug-in's backend
    rows = []
    try:
        for item in args.cases.split(","):   # CASE or CASE:SECONDS
            case, _, secs = item.partition(":")
            log = str(Path(args.logs) / f"{case.lower()}.jsonl")
            rows.append(tune_case(case, float(secs) if secs else args.seconds, log, model, backend, opts))
    finally:
        backend.close()
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
