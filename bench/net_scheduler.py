"""Gradient vs round-robin task scheduling on a model's tasks at the same budget: the curve of weighted latency
(sum of weight x best task latency) for each, a PNG of both, and how many trials gradient needs to reach
round-robin's final latency.

    python bench/net_scheduler.py --model resnet18 --trials 1000 --out bench/results/net/sched

With --seeding on,off it compares instead the gradient strategy with and without seeding each task's first round
from similar tasks (TuneOptions.seeding, search/seeding.py): the estimated latency, and the tasks whose first round
beat their default program (and those that got seeds), e.g. on the prior's held-out network:

    python bench/net_scheduler.py --model ~/.cache/ansorc/corpus/mobilenet_v2.onnx --trials 300 --per-round 64 \
        --seeding on,off --out bench/results/net/seeding

--model is a zoo name or an .onnx path. Each strategy (or seeding mode) tunes from an empty log of its own
(<out>_gradient.jsonl, <out>_round-robin.jsonl, <out>_seed-on.jsonl; resumed when they exist), with the same
seed and the same round sizes (the scheduler's: at most --per-round, small enough that the warm-up takes at most
a quarter of the budget). Weights are timed cold, as network tuning does by default.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def run(strategy: str, net, args, seeding: bool = True, name: str = "") -> dict:
    from ansorc.net.tune import tune_network
    from ansorc.search.tuning import TuneOptions
    log = f"{args.out}_{name or strategy}.jsonl"
    first: dict = {}   # task's workload key -> what its first round found
    t0 = time.perf_counter()
    res = tune_network(net, args.trials, log, strategy=strategy, callbacks=(first_round(first),),
                       options=TuneOptions(per_round=args.per_round, seed=args.seed, progress=False,
                                           seeding=seeding))
    wall = time.perf_counter() - t0
    return {"strategy": strategy, "seeding": seeding, "wall_s": wall, "curve": res.result.curve,
            "rounds": res.result.rounds, "final": res.result.estimated_latency, "tasks": len(res.tasks),
            "first_rounds": list(first.values())}


def first_round(seen: dict):
    """A tuner callback noting each task's first batch: its default program's time, the best of the others, how
    many seeds it measured and the prior's tau on it."""
    from ansorc.measure.record import steps_key
    from ansorc.search.tuning import canonical_steps

    def note(tuner, recs):
        key = tuner.task.workload_key
        if key in seen or tuner.resumed:
            return
        default = tuner.default_state
        dkey = steps_key(canonical_steps(tuner.task, default)) if default is not None else None
        times = {r.steps_json: r.median for r in recs if r.ok and not r.lower_bound}
        others = [t for k, t in times.items() if k != dkey]
        seeded = {steps_key(canonical_steps(tuner.task, st)) for st in tuner.seeded}
        seen[key] = {"default_s": times.get(dkey), "best_other_s": min(others, default=None),
                     "seeds": len(tuner.seeded), "best_seed_s": min((times[k] for k in seeded if k in times),
                                                                   default=None),
                     "prior_tau": tuner.prior_tau}
    return note


def summarize_seeding(runs: dict, args) -> dict:
    def beat(r):
        return sum(1 for f in r["first_rounds"] if f["default_s"] and f["best_other_s"]
                   and f["best_other_s"] < f["default_s"])
    on, off = runs["seed-on"], runs["seed-off"]
    taus = [f["prior_tau"] for f in on["first_rounds"] if f["prior_tau"] is not None]
    return {"model": args.model, "tasks": on["tasks"], "trials": args.trials,
            "estimated_ms": {k: v["curve"][-1][1] * 1e3 for k, v in runs.items()},
            "after_retiming_ms": {k: v["final"] * 1e3 for k, v in runs.items()},
            "on_over_off": on["curve"][-1][1] / off["curve"][-1][1],
            "first_round_beats_default": {k: beat(v) for k, v in runs.items()},
            "tasks_seeded": sum(1 for f in on["first_rounds"] if f["seeds"]),
            "seed_is_first_round_best": sum(1 for f in on["first_rounds"] if f["best_seed_s"] is not None
                                            and f["best_seed_s"] <= f["best_other_s"]),
            "prior_tau_mean": sum(taus) / len(taus) if taus else None,
            "wall_s": {k: round(v["wall_s"], 1) for k, v in runs.items()}}


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
    p.add_argument("--seeding", default="", help="on,off: compare seeding (gradient strategy) instead of strategies")
    p.add_argument("--strategies", default="round-robin,gradient",
                   help="run only these (two processes can then run one each, side by side under the same load); "
                        "the summary is written once both results exist")
    args = p.parse_args(argv)
    from ansorc.net import zoo
    from ansorc.net.importer import import_model
    from ansorc.net.tune import curve_png
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    net = import_model(args.model if args.model.endswith(".onnx") else getattr(zoo, args.model)())
    if args.seeding:
        return compare_seeding(net, args)
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


def compare_seeding(net, args) -> int:
    for mode in args.seeding.split(","):
        name = f"seed-{mode}"
        Path(f"{args.out}_{name}.json").write_text(json.dumps(run("gradient", net, args, mode == "on", name),
                                                              indent=1))
    parts = {f"seed-{m}": Path(f"{args.out}_seed-{m}.json") for m in ("on", "off")}
    if not all(f.exists() for f in parts.values()):
        return 0
    runs = {s: json.loads(f.read_text()) for s, f in parts.items()}
    summary = summarize_seeding(runs, args)
    Path(f"{args.out}.json").write_text(json.dumps({"summary": summary, "runs": runs}, indent=1))
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
