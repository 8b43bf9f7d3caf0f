"""Trials to a result (issue 52): on the operators the shipped cost models never saw (docs/cost-model.md's
held-out split), how many trials the pretrained start needs to reach the program a cold start finds in
--cold-trials.

    python bench/trials_to_result.py --log-dir ~/ttr --out bench/results/trials_to_result.md

Each task is tuned cold (cost_model "none") for --cold-trials and pretrained for the largest checkpoint, one log
per task and start (<log-dir>/<op>_<shape>.<start>.jsonl; a log already holding its trials is not tuned again).
Then the best program of each log's first N records (what tuning with N trials would have delivered) is built
for the cold start's last checkpoint and every checkpoint of both, and all of one task's programs are timed
alternating in one process over several placements of their arrays, as bench/suite.py times a row. Reached: the
fewest pretrained trials whose program is no slower than the cold start's at --cold-trials (within --tolerance).
"""
from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# the held-out operators and shapes of the shipped models (ansorc/cost_model_data.py), MobileNetV2 aside
TASKS = ("C2D:1", "T2D:0", "T2D:2", "SFM:2")
CHECKPOINTS = (50, 100, 200, 400)


def tune_log(op: str, shape: int, start: str, trials: int, log: Path, seed: int) -> float:
    """Tune into `log` up to `trials` records; the seconds it took (0 when the log already had them)."""
    import ansorc
    from ansorc import workloads as W
    from ansorc.search.tuning import TuneOptions
    if log.exists() and len(read_lines(log)) >= trials:
        return 0.0
    t = time.time()
    opts = TuneOptions(trials=trials, seed=seed, cost_model=start, progress=False, retime_top=0)
    ansorc.tune(W.make(op, shape), log=str(log), options=opts)
    return time.time() - t


def read_lines(log: Path) -> list:
    return [ln for ln in log.read_text().splitlines() if ln.strip()]


def kernel_at(op: str, shape: int, lines: list, n: int, tmp: Path):
    """The kernel tuning with n trials delivered: the best of the log's first n records (`lines`)."""
    from ansorc import workloads as W
    from ansorc.autotune import apply_best
    prefix = tmp / f"first_{n}.jsonl"
    prefix.write_text("\n".join(lines[:n]) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return apply_best(str(prefix), W.make(op, shape))


def time_alternating(kernels: dict, rounds: int, placements: int) -> dict:
    """Median seconds of each kernel, as the paper table times a row (ansorc/suite/timing.py): alternating
    rounds with untimed warm calls before each block, over several placements of fresh arrays (a program's speed
    depends on where its arrays land), the median over placements of each placement's median."""
    from ansorc.measure.alternate import median_alternating
    from ansorc.suite.timing import WARM, placed
    first = next(iter(kernels.values()))
    rng = np.random.default_rng(0)
    values = [rng.standard_normal(a.shape).astype(np.float32) for a in first.args]
    per: dict = {}
    for _ in range(placements):
        fns = {}
        for k, kern in kernels.items():
            arrays = [placed(v, rng) for v in values]
            fns[k] = lambda kern=kern, arrays=arrays: kern(*arrays)
        for k, seconds in median_alternating(fns, rounds=rounds, min_time=0.05, warm=WARM).items():
            per.setdefault(k, []).append(seconds)
    return {k: float(np.median(v)) for k, v in per.items()}


def one_task(spec: str, args) -> dict:
    op, shape = spec.split(":")[0], int(spec.split(":")[1])
    logs = {s: Path(args.log_dir) / f"{op}_{shape}.{s}.jsonl" for s in ("none", "pretrained")}
    secs = {"none": tune_log(op, shape, "none", args.cold_trials, logs["none"], args.seed),
            "pretrained": tune_log(op, shape, "pretrained", max(args.checkpoints), logs["pretrained"], args.seed)}
    cold, warm = read_lines(logs["none"]), read_lines(logs["pretrained"])
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        kernels = {f"cold@{args.cold_trials}": kernel_at(op, shape, cold, args.cold_trials, tmp)}
        for n in args.checkpoints:
            kernels[f"cold@{n}"] = kernel_at(op, shape, cold, n, tmp)
            kernels[f"pretrained@{n}"] = kernel_at(op, shape, warm, n, tmp)
    times = time_alternating(kernels, args.rounds, args.placements)
    target = times[f"cold@{args.cold_trials}"] * (1 + args.tolerance)

    def first_reaching(start: str):   # the fewest checkpoint trials whose program is within the target
        return next((n for n in args.checkpoints if times[f"{start}@{n}"] <= target), None)
    row = {"task": f"{op} #{shape}", "times": times, "reached": first_reaching("pretrained"),
           "cold_reached": first_reaching("cold"), "tune_s": secs}
    print(row, flush=True)
    return row


def table(rows: list, args) -> str:
    cps = args.checkpoints
    head = ["task", f"cold@{args.cold_trials} us"] + [f"cold@{n}" for n in cps] + [f"pretrained@{n}" for n in cps]
    lines = [f"# Trials to a result: pretrained against cold on held-out operators ({time.strftime('%Y-%m-%d')})",
             "", f"`python bench/trials_to_result.py --cold-trials {args.cold_trials} --checkpoints "
             f"{' '.join(map(str, cps))}`. Each column: the program tuning with that many trials delivered, timed "
             f"against the others alternating in one process ({args.rounds} rounds, {args.placements} placements of "
             f"the arrays, medians, as bench/suite.py times a row), as a ratio of the "
             f"cold start's time at {args.cold_trials} trials (below 1: faster). Reached: the fewest pretrained "
             f"trials (of the checkpoints) no slower than cold at {args.cold_trials}, within "
             f"{args.tolerance:.0%}; \"cold reached\" the same for the cold start.", "",
             "| " + " | ".join(head + ["reached", "cold reached"]) + " |", "|" + " --- |" * (len(head) + 2)]
    for r in rows:
        base = r["times"][f"cold@{args.cold_trials}"]
        cells = [r["task"], f"{base * 1e6:.1f}"]
        cells += [f"{r['times'][f'cold@{n}'] / base:.2f}" for n in cps]
        cells += [f"{r['times'][f'pretrained@{n}'] / base:.2f}" for n in cps]
        cells += [str(r["reached"] or f">{max(cps)}"), str(r["cold_reached"] or f">{max(cps)}")]
        lines.append("| " + " | ".join(cells) + " |")
    got = [r["reached"] for r in rows if r["reached"]]
    lines += ["", f"Pretrained reached the cold {args.cold_trials}-trial program on {len(got)} of {len(rows)} tasks"
              + (f"; geometric mean of the trials it took there: {math.exp(np.mean(np.log(got))):.0f}." if got
                 else ".")]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", nargs="+", default=list(TASKS), help="OP:SHAPE_INDEX of ansorc.workloads")
    p.add_argument("--cold-trials", type=int, default=1000)
    p.add_argument("--checkpoints", type=int, nargs="+", default=list(CHECKPOINTS))
    p.add_argument("--tolerance", type=float, default=0.02, help="timing noise allowed in 'reached'")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--placements", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--log-dir", required=True)
    p.add_argument("--out", help="markdown table")
    a = p.parse_args(argv)
    Path(a.log_dir).mkdir(parents=True, exist_ok=True)
    rows = [one_task(t, a) for t in a.tasks]
    text = table(rows, a)
    print(text)
    if a.out:
        Path(a.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
