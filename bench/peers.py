"""Tuned ansorc kernels against the best peer per operator, measured side by side in this one process:
GMM 1024 against numpy's matmul, C2D (1,56,56,64,64,3,1,1) and DEP (1,112,112,32,3,1,1) against PyTorch CPU.

    pip install torch==2.13.0          # the CPU build; not a dependency of ansorc
    python bench/peers.py --trials 512 --log-dir bench/results

Each workload is tuned (resuming bench/results/<name>.jsonl.gz, the committed log, through an uncompressed
working copy <name>.jsonl that git ignores; the .gz is rewritten afterwards), the best few programs are re-timed
side by side, then the winner and the peer are timed in alternating rounds (median of rounds). Also reports the
machine's fp32 FMA peak (bench/peak_fma.py) and each kernel's fraction of it. Writes bench/results/peers.md.
"""
from __future__ import annotations

import argparse
import gzip
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ansorc  # noqa: E402
from ansorc import workloads  # noqa: E402
from ansorc.api import build  # noqa: E402
from ansorc.ir.dag import ComputeDAG  # noqa: E402
from ansorc.ir.state import replay  # noqa: E402
from ansorc.ir.steps import steps_from_json  # noqa: E402
from ansorc.measure.alternate import median_alternating  # noqa: E402
from ansorc.measure.record import RETIME_NOTE, best, load  # noqa: E402
from ansorc.search.task import SearchTask  # noqa: E402
from ansorc.search.tuner import tune  # noqa: E402


def _torch_conv(kind: str):
    import torch
    torch.set_num_threads(2)
    if kind == "C2D":
        x = torch.randn(1, 64, 56, 56)
        w = torch.randn(64, 64, 3, 3)
        return lambda: torch.nn.functional.conv2d(x, w, padding=1)
    x = torch.randn(1, 32, 112, 112)
    w = torch.randn(32, 1, 3, 3)
    return lambda: torch.nn.functional.conv2d(x, w, padding=1, groups=32)


CASES = {
    "GMM": (lambda: workloads.gmm(1, 1024, 1024, 1024), "numpy"),
    "C2D": (lambda: workloads.c2d(1, 56, 56, 64, 64, 3, 1, 1), "torch"),
    "DEP": (lambda: workloads.dep(1, 112, 112, 32, 3, 1, 1), "torch"),
}


def working_log(out: Path, name: str) -> Path:
    """<name>.jsonl to tune into, unpacked from the committed <name>.jsonl.gz when there is no copy yet."""
    log = out / f"{name}.jsonl"
    packed = log.with_name(log.name + ".gz")
    if packed.exists() and not log.exists():
        log.write_bytes(gzip.decompress(packed.read_bytes()))
    return log


def pack_log(log: Path) -> None:
    """Write log.gz from the working copy (mtime 0: the same records give the same bytes)."""
    if log.exists():
        log.with_name(log.name + ".gz").write_bytes(gzip.compress(log.read_bytes(), mtime=0))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=512)
    ap.add_argument("--cases", nargs="*", default=list(CASES))
    ap.add_argument("--log-dir", default="bench/results")
    ap.add_argument("--top", type=int, default=4, help="re-time this many best programs side by side")
    args = ap.parse_args(argv)
    out = Path(args.log_dir)
    out.mkdir(parents=True, exist_ok=True)
    try:
        sys.path.insert(0, str(Path(__file__).parent))
        from peak_fma import measure_peak
        peak = measure_peak()
    except Exception as e:  # noqa: BLE001 - the peak is context, not the result
        print(f"peak microbenchmark unavailable: {e}")
        peak = None
    rows = []
    for name in args.cases:
        make, peer = CASES[name]
        tensors = make()
        dag = ComputeDAG(tensors)
        log = working_log(out, name.lower())
        t0 = time.time()
        if args.trials:
            tune(SearchTask(dag), trials=args.trials, log=str(log), progress=True)
            pack_log(log)
        tuning = time.time() - t0
        recs = best(load(log), dag.workload_key, "native", k=args.top)
        kernels = {f"#{i}": build(dag, replay(dag, steps_from_json(r.steps)), name=f"{name.lower()}_{i}")
                   for i, r in enumerate(recs)}
        rng = np.random.default_rng(0)
        # Both sides get the same 64-byte aligned arrays (numpy's own large arrays start 16 bytes into a page).
        inputs = [ansorc.array(rng.standard_normal(t.shape, dtype=np.float32)) for t in dag.inputs]
        outs = [ansorc.empty(t.shape, np.float32) for t in dag.outputs]
        fns = {k: (lambda kk=kern: kk(*inputs, *outs)) for k, kern in kernels.items()}
        if peer == "numpy":
            a, b = inputs[0][0], inputs[1][0]
            fns["peer"] = lambda: np.matmul(a, b)
        else:
            fns["peer"] = _torch_conv(name)
        med = median_alternating(fns, rounds=15, min_time=0.05, warm=0.1)
        ours_key = min((k for k in med if k != "peer"), key=med.get)
        gf = dag.flop_count / 1e9
        row = {"op": name, "peer": peer, "ours_gflops": gf / med[ours_key], "peer_gflops": gf / med["peer"],
               "ratio": med["peer"] / med[ours_key], "trials": sum(r.note != RETIME_NOTE for r in load(log)),
               "tuning_s": tuning}
        rows.append(row)
        print(f"{name}: ansorc {row['ours_gflops']:.1f} GFLOP/s, {peer} {row['peer_gflops']:.1f} GFLOP/s, "
              f"ratio {row['ratio']:.2f} ({row['trials']} trials)", flush=True)
    lines = ["| op | peer | ansorc GFLOP/s | peer GFLOP/s | ansorc/peer | ansorc % of peak | trials |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        frac = f"{r['ours_gflops'] / peak:.0%}" if peak else "-"
        lines.append(f"| {r['op']} | {r['peer']} | {r['ours_gflops']:.1f} | {r['peer_gflops']:.1f} | "
                     f"{r['ratio']:.2f} | {frac} | {r['trials']} |")
    if peak:
        lines.append(f"\nfp32 FMA peak measured: {peak:.0f} GFLOP/s (2 threads)")
    (out / "peers.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
