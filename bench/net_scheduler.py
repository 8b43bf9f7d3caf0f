"""Gradient vs round-robin task scheduling on a model's tasks at the same budget: the curve of weighted latency
(sum of weight x best task latency) for each, a PNG of both, and how many trials gradient needs to reach
round-robin's final latency.

    python bench/net_scheduler.py --model resnet18 --trials 1000 --out bench/results/net/sched

Each strategy tunes from an empty log of its own (<out>_gradient.jsonl, <out>_round-robin.jsonl; resumed when
they exist), with the same seed and the same round sizes (the scheduler's: at most --per-round, small enough that
the warm-up takes at most a quarter of the budget). Weights are timed cold, as network tuning does by default.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def run(strategy: str, net, args) -> dict:
    from ansorc.net.tune import tune_network
    from ansorc.search.tuning import TuneOptions
    log = f"{args.out}_{strategy}.jsonl"
    t0 = time.perf_counter()
    res = tune_network(net, args.trials, log, strategy=strategy,
                       options=TuneOptions(per_round=args.per_round, seed=args.seed, progress=False))
    wall = time.perf_counter() - t0
    return {"strategy": strategy, "wall_s": wall, "curve": res.result.curve, "rounds": res.result.rounds,
            "final": res.result.estimated_latency, "tasks": len(res.tasks)}


def trials_to_reach(curve, value: float):
    return next((t for t, v in curve if v <= value), None)


def summarize(runs: dict, args) -> dict:
    """Curve against curve (the scheduler's estimate during tuning); the final re-timing of each task's top
    programs is reported beside it, since it re-measures and so moves both ends."""
    rr, gr = runs["round-robin"], runs["gradient"]
    rr_trials, rr_final = rr["curve"][-1]
    reach = trials_to_reach(gr["curve"], rr_final)
    return {"model": args.model, "tasks": gr["tasks"], "trials": args.trials, "per_round": args.per_round,
            "warmup_trials": gr["curve"][gr["tasks"] - 1][0],
            "round_robin_final_ms": rr_final * 1e3, "gradient_final_ms": gr["curve"][-1][1] * 1e3,
            "gradient_trials_to_reach_round_robin_final": reach,
            "share_of_round_robin_trials": None if reach is None else reach / rr_trials,
            "after_retiming_ms": {k: v["final"] * 1e3 for k, v in runs.items()},
            "wall_s": {k: round(v["wall_s"], 1) for k, v in runs.items()}}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="resnet18")
    p.add_argument("--trials", type=int, default=2000)
    p.add_argument("--per-round", type=int, default=64, help="most programs per round")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="bench/results/net/sched")
    p.add_argument("--strategies", default="round-robin,gradient",
                   help="run only these (two processes can then run one each, side by side under the same load); "
                        "the summary is written once both results exist")
    args = p.parse_args(argv)
    from ansorc.net import zoo
    from ansorc.net.importer import import_model
    from ansorc.net.tune import curve_png
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    net = import_model(getattr(zoo, args.model)())
    for s in args.strategies.split(","):
        Path(f"{args.out}_{s}.json").write_text(json.dumps(run(s, net, args), indent=1))
    parts = {s: Path(f"{args.out}_{s}.json") for s in ("round-robin", "gradient")}
    if not all(f.exists() for f in parts.values()):
        return 0
    runs = {s: json.loads(f.read_text()) for s, f in parts.items()}
    summary = summarize(runs, args)
    Path(f"{args.out}.json").write_text(json.dumps({"summary": summary, "runs": runs}, indent=1))
    curve_png({k: v["curve"] for k, v in runs.items()}, f"{args.out}.png",
              title=f"{args.model}: estimated latency, gradient vs round-robin "
                    f"({summary['warmup_trials'] // summary['tasks']}/round)")
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
