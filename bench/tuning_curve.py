"""Measured end-to-end latency against tuning wall time, cold against pretrained cost model (issue 52's "wall
time to parity"): a corpus model tuned by the task scheduler for --minutes with each cost-model start, then the
model built from what each log held at every checkpoint, all timed with onnxruntime alternating in one process
(2 threads, medians).

    python bench/tuning_curve.py --model mobilenet_v2 --minutes 10 --log-dir ~/curve-logs \\
        --out bench/results/curve_mobilenet_v2

Logs: <log-dir>/<model>.<mode>.jsonl and .json (the tuning's start time and trials); a mode already tuned is
not tuned again, so a second run only times. Checkpoints cut the log by its records' timestamps. Writes
<out>.md (the table) and <out>.png (latency against minutes, onnxruntime's as a line).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.corpus import example_inputs, export  # noqa: E402

MODES = ("none", "pretrained")
CHECKPOINTS = (0, 0.5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30)


def tune(model: str, mode: str, minutes: float, log_dir: Path) -> dict:
    from ansorc.net.tune import tune_network
    from ansorc.search.tuning import TuneOptions
    log, meta = log_dir / f"{model}.{mode}.jsonl", log_dir / f"{model}.{mode}.json"
    if not meta.exists():
        start = time.time()
        run = tune_network(str(export(model)), 1_000_000, str(log), time_budget=60 * minutes,
                           options=TuneOptions(cost_model=mode, progress=False))
        meta.write_text(json.dumps({"start": start, "seconds": round(time.time() - start, 1), "minutes": minutes,
                                    "trials": sum(r.trials for r in run.result.results)}))
    return json.loads(meta.read_text())


def cut(log: Path, until: float, tmp: Path) -> Path:
    """The log's records stamped before `until` (seconds since the epoch)."""
    out = tmp / f"{log.stem}_{until:.0f}.jsonl"
    with open(log) as src, open(out, "w") as dst:
        dst.writelines(line for line in src if json.loads(line).get("timestamp", 0) <= until)
    return out


def curves(model: str, metas: dict, log_dir: Path, rounds: int) -> tuple:
    """({mode: [(minutes, seconds, trials by then)]}, onnxruntime's seconds), timed alternating in one process."""
    import ansorc.net
    from ansorc.net.profile import alternate, ort_session
    path, feeds = export(model), example_inputs(model)
    sess = ort_session(str(path), 2)
    fns, points = {"onnxruntime": lambda: sess.run(None, feeds)}, {}
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")   # early checkpoints leave most tasks untuned: that is the point
        for mode, meta in metas.items():
            for m in (c for c in CHECKPOINTS if c <= meta["minutes"]):
                log = cut(log_dir / f"{model}.{mode}.jsonl", meta["start"] + 60 * m, Path(tmp))
                compiled = ansorc.net.compile(str(path), trials=0, log=str(log))
                fns[(mode, m)] = lambda c=compiled: c(*feeds.values())
                points.setdefault(mode, []).append((m, len(log.read_text().splitlines())))
        times = alternate(fns, rounds)
    return ({mode: [(m, times[(mode, m)], n) for m, n in ms] for mode, ms in points.items()},
            times["onnxruntime"])


def write(model: str, curves_: dict, ort: float, metas: dict, out: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    label = {"none": "cold", "pretrained": "pretrained"}
    lines = [f"# {model}: measured latency against tuning wall time", "",
             "2 threads, alternating in one process with onnxruntime (medians); ratio: onnxruntime's time / "
             "ansorc's. Trials in all: " + ", ".join(f"{label[k]} {v['trials']}" for k, v in metas.items()), "",
             "| minutes | " + " | ".join(f"{label[k]} trials | {label[k]} ms | {label[k]} ratio" for k in curves_)
             + " |", "| --- |" + " --- | --- | --- |" * len(curves_)]
    by_minute = [{p[0]: p for p in pts} for pts in curves_.values()]   # a mode may have tuned longer
    for m in sorted({p[0] for pts in curves_.values() for p in pts}):
        cells = [f"{p[2]} | {1e3 * p[1]:.2f} | {ort / p[1]:.2f}" if (p := pts.get(m)) else " | | "
                 for pts in by_minute]
        lines.append(f"| {m:g} | " + " | ".join(cells) + " |")
    lines.append(f"\nonnxruntime: {1e3 * ort:.2f} ms")
    Path(out + ".md").write_text("\n".join(lines) + "\n")
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for mode, pts in curves_.items():
        ax.plot([p[0] for p in pts], [1e3 * p[1] for p in pts], "o-", label=label[mode])
    ax.axhline(1e3 * ort, color="gray", linestyle="--", label="onnxruntime")
    ax.set_xlabel("tuning wall time (minutes)")
    ax.set_ylabel("end-to-end latency (ms)")
    ax.set_title(f"{model}: cold against pretrained cost model")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out + ".png", dpi=110)
    print("\n".join(lines))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="mobilenet_v2")
    p.add_argument("--minutes", type=float, default=10.0)
    p.add_argument("--modes", default=",".join(MODES), help="cost-model starts, comma-separated")
    p.add_argument("--log-dir", required=True)
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--out", required=True, help="path without suffix: .md and .png are written")
    a = p.parse_args(argv)
    log_dir = Path(a.log_dir).expanduser()
    log_dir.mkdir(parents=True, exist_ok=True)
    metas = {mode: tune(a.model, mode, a.minutes, log_dir) for mode in a.modes.split(",")}
    curves_, ort = curves(a.model, metas, log_dir, a.rounds)
    write(a.model, curves_, ort, metas, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
