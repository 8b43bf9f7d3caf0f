"""Default programs under changed constants, timed side by side in one process (alternating rounds, medians).

    python bench/default_variants.py GMM:2 'TILE_ACCUMULATORS=8' 'CONFLICT_STRIDE=1073741824'
    python bench/default_variants.py C2D:0 --gcc-flags ''          # gcc without -fno-predictive-commoning
    python bench/default_variants.py CAP:0 --unpinned               # also without ir/pin.py's pinned operands
    python bench/default_variants.py C3D:2 --unskipped              # also computing the padding taps

Each VARIANT is NAME=VALUE[;NAME=VALUE...]: a module constant of ansorc.search.default_schedule set to a Python
literal while that variant's default program is made (the first row is the program as is). --gcc-flags replaces
the gcc flags of target.COMPILER_FLAGS for the variants (space-separated). Every program is checked against
numpy first; figures are GFLOP/s of the median over rounds of the best of 5 calls.
"""
from __future__ import annotations

import argparse
import ast
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ansorc  # noqa: E402
from ansorc import workloads  # noqa: E402
from ansorc.codegen import simd, target  # noqa: E402
from ansorc.ir import skip  # noqa: E402
from ansorc.ir.evaluate import evaluate, random_inputs  # noqa: E402
from ansorc.search import default_schedule as ds  # noqa: E402


def _settings(text: str) -> dict:
    out = {}
    for item in filter(None, text.split(";")):
        name, _, value = item.partition("=")
        if not name.isupper() or not hasattr(ds, name):
            raise SystemExit(f"default_variants: {name!r} is not a constant of default_schedule")
        out[name] = ast.literal_eval(value)
    return out


def build(tensors, dag, settings: dict, gcc_flags, pinned: bool = True, skipping: bool = True):
    skip.ENABLED = skipping
    saved = {k: getattr(ds, k) for k in settings}
    flags = target.COMPILER_FLAGS["gcc"]
    pins = dict(simd.PIN)
    if not pinned:
        simd.PIN.clear()
    simd.table.cache_clear()
    simd.caps.cache_clear()
    try:
        for k, v in settings.items():
            setattr(ds, k, v)
        if gcc_flags is not None:
            target.COMPILER_FLAGS["gcc"] = gcc_flags
        return ansorc.build(tensors, ds.default_cpu_schedule(dag))
    finally:
        for k, v in saved.items():
            setattr(ds, k, v)
        target.COMPILER_FLAGS["gcc"] = flags
        simd.PIN.update(pins)
        skip.ENABLED = True
        simd.table.cache_clear()
        simd.caps.cache_clear()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("workload", help="NAME:INDEX of ansorc.workloads")
    ap.add_argument("variants", nargs="*")
    ap.add_argument("--gcc-flags", help="gcc flags of the variants instead of target.COMPILER_FLAGS['gcc']")
    ap.add_argument("--unpinned", action="store_true", help="add the program built without pinned operands")
    ap.add_argument("--unskipped", action="store_true",
                    help="add the program that computes the steps ir/skip.py skips (padding taps)")
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args(argv)
    name, _, index = args.workload.partition(":")
    tensors = workloads.make(name, int(index or 0))
    dag = ansorc.ComputeDAG(tensors)
    inputs = random_inputs(dag.inputs, 0)
    expected = evaluate(list(dag.outputs), inputs)[dag.outputs[-1].name]
    bufs = [ansorc.array(inputs[t.name]) for t in dag.inputs] + [ansorc.empty(t.shape, t.dtype) for t in dag.outputs]
    gcc = tuple(args.gcc_flags.split()) if args.gcc_flags is not None else None
    variants = [("as is", {}, None, True, True)] + [(v or "as is", _settings(v), gcc, True, True)
                                                    for v in args.variants]
    if args.unpinned:
        variants.append(("unpinned", {}, None, False, True))
    if args.unskipped:
        variants.append(("unskipped", {}, None, True, False))
    if gcc is not None and not args.variants:
        variants.append((f"gcc flags {args.gcc_flags!r}", {}, gcc, True, True))
    kernels = {}
    for label, settings, flags, pinned, skipping in variants:
        k = build(tensors, dag, settings, flags, pinned, skipping)
        k(*bufs)
        np.testing.assert_allclose(bufs[-1], expected, rtol=1e-3, atol=1e-3, err_msg=label)
        kernels[label] = k
    times = {label: [] for label in kernels}
    for _ in range(args.rounds):
        for label, k in kernels.items():
            best = []
            for _ in range(5):
                t = time.perf_counter()
                k(*bufs)
                best.append(time.perf_counter() - t)
            times[label].append(min(best))
    for label, ts in times.items():
        t = statistics.median(ts)
        print(f"{args.workload:8s} {label[:60]:60s} {t * 1e3:9.3f} ms {dag.flop_count / t / 1e9:7.1f} GFLOP/s")


if __name__ == "__main__":
    main()
