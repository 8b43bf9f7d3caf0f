"""Ablation in the spirit of the Ansor paper's Figure 7: best GFLOP/s against measured trials for
(a) random sampling, (b) evolution with a random model, (c) evolution with LightGBM, (d) (c) plus crossover.

    python bench/search_ablation.py --trials 256 --out bench/results/ablation

writes <out>.png (one panel per workload) and <out>.md (the table). All variants run in this one process,
one after the other, on the same machine state.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ansorc import workloads  # noqa: E402
from ansorc.search.evolution import SearchParams  # noqa: E402
from ansorc.search.task import SearchTask  # noqa: E402
from ansorc.search.tuner import tune  # noqa: E402

VARIANTS = {
    "random sampling": dict(search="random", model="random"),
    "evolution + random model": dict(search="evolution", model="random"),
    "evolution + LightGBM": dict(search="evolution", model="lgbm"),
    "evolution + LightGBM + crossover": dict(search="evolution", model="lgbm",
                                             params=SearchParams(crossover_prob=0.3)),
}
TASKS = {"GMM 1024": lambda: workloads.gmm(1, 1024, 1024, 1024),
         "C2D 56x56x64->64 3x3": lambda: workloads.c2d(1, 56, 56, 64, 64, 3, 1, 1)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=256)
    ap.add_argument("--per-round", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tasks", nargs="*", default=list(TASKS))
    ap.add_argument("--variants", nargs="*", default=list(VARIANTS))
    ap.add_argument("--out", default="bench/results/ablation")
    ap.add_argument("--log-dir", default="bench/results/ablation_logs", help="one tuning log per run (read "
                    "by bench/model_quality.py; not committed)")
    ap.add_argument("--replot", action="store_true", help="redraw <out>.png and <out>.md from <out>.json")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if args.replot:
        saved = json.loads(out.with_suffix(".json").read_text())
        _write({tuple(k.split(" | ")): v for k, v in saved.items()}, args, out)
        return 0
    results = {}
    for tname in args.tasks:
        for vname in args.variants:
            t0 = time.time()
            Path(args.log_dir).mkdir(parents=True, exist_ok=True)
            log = Path(args.log_dir) / f"{tname.split()[0].lower()}_{vname.replace(' + ', '_').replace(' ', '_')}.jsonl"
            log.unlink(missing_ok=True)  # each variant starts from nothing
            res = tune(SearchTask(TASKS[tname]()), trials=args.trials, seed=args.seed, per_round=args.per_round,
                       progress=False, log=str(log), **VARIANTS[vname])
            wall = time.time() - t0
            results[(tname, vname)] = {"curve": res.curve, "best_gflops": res.best_gflops, "wall": wall,
                                       "build": res.build_seconds, "run": res.run_seconds,
                                       "overhead": res.overhead_seconds}
            print(f"{tname:24} {vname:34} best {res.best_gflops:7.1f} GFLOP/s  wall {wall:6.0f}s "
                  f"(build {res.build_seconds:.0f}s, run {res.run_seconds:.0f}s, search {res.overhead_seconds:.0f}s)",
                  flush=True)
    _write(results, args, out)
    return 0


def _write(results, args, out: Path) -> None:
    lines = [f"# Search ablation ({args.trials} trials, {args.per_round} per round, seed {args.seed})", "",
             "| workload | variant | best GFLOP/s | at 1/4 trials | at 1/2 | wall s | search overhead |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for (t, v), r in results.items():
        def at(frac):
            pts = [g for n, g in r["curve"] if n <= args.trials * frac]
            return f"{pts[-1]:.1f}" if pts else "-"
        share = r["overhead"] / r["wall"] if r["wall"] else 0
        lines.append(f"| {t} | {v} | {r['best_gflops']:.1f} | {at(0.25)} | {at(0.5)} | {r['wall']:.0f} | "
                     f"{share:.0%} |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    out.with_suffix(".json").write_text(json.dumps({f"{t} | {v}": r for (t, v), r in results.items()}, indent=1))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: table only")
        return
    tasks = sorted({t for t, _ in results})
    fig, axes = plt.subplots(1, len(tasks), figsize=(6 * len(tasks), 4), squeeze=False)
    for ax, t in zip(axes[0], tasks):
        for (tt, v), r in results.items():
            if tt == t and r["curve"]:
                xs, ys = zip(*r["curve"])
                ax.plot(xs, ys, label=v, marker=".")
        ax.set_title(t)
        ax.set_xlabel("measured trials")
        ax.set_ylabel("best GFLOP/s")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out.with_suffix(".png"), dpi=110)


if __name__ == "__main__":
    raise SystemExit(main())
