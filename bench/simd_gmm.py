"""GMM 1024 (float32): hand-written ansorc schedules vs numpy matmul, timed side by side in one process.

    python bench/simd_gmm.py [--n 1024] [--rounds 7] [--calls 10] [--wait-idle 300] [--peak] [--target native]

Every contender (numpy first, then each schedule) runs a block of `calls` timed calls per round, after one
warm-up call and a short pause (idle OpenMP/BLAS threads keep spinning after a call and would slow the next
contender); a round's figure is the block median, the reported figure the median over rounds. Correctness is
checked against numpy before timing. The schedules are Ansor's CPU sketch (cache_write + SSRSRS tiling,
parallel outer tiles, vectorized j.3, unrolled i.3) with register tiles of i.3 x j.3 and, optionally, a packed
copy of the B panel per k.0 block (cache_read), which removes the 4 KiB row stride of B from the inner loop.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import ansorc  # noqa: E402
from ansorc import workloads  # noqa: E402
from ansorc.ir.steps import (Annotate, CacheRead, CacheWrite, ComputeAt, FollowSplit, Fuse, Pragma, Reorder,  # noqa
                             Split)
from ansorc.codegen.target import Target  # noqa: E402
from peak_fma import busy_cpus, measure_peak, wait_until_idle  # noqa: E402


def ssrsrs(i_tiles, j_tiles, k1, unroll=512, pack_b=False) -> list:
    """C.local tiled i.0 j.0 i.1 j.1 k.0 i.2 j.2 k.1 i.3 j.3 at C's j.1; register tile i.3 x j.3."""
    steps = [CacheWrite("C", "local")]
    if pack_b:
        steps.append(CacheRead("B", "local", ("C.local",)))
    si = len(steps)   # FollowSplit names the split steps by position
    steps += [Split("C.local", "i", i_tiles), Split("C.local", "j", j_tiles), Split("C.local", "k", (k1,)),
              Reorder("C.local", ("i.0", "j.0", "i.1", "j.1", "k.0", "i.2", "j.2", "k.1", "i.3", "j.3")),
              FollowSplit("C", "i", si, 2), FollowSplit("C", "j", si + 1, 2),
              Reorder("C", ("i.0", "j.0", "i.1", "j.1", "i.2", "j.2")), ComputeAt("C.local", "C", "j.1"),
              Fuse("C", ("i.0", "j.0")), Annotate("C", "i.0@j.0", "parallel"),
              Annotate("C.local", "j.3", "vectorize"), Annotate("C", "j.2", "vectorize"),
              Pragma("C.local", "i.0", "auto_unroll_max_step", unroll)]
    if pack_b:
        steps += [ComputeAt("B.local", "C.local", "k.0"), Annotate("B.local", "ax1", "vectorize")]
    return steps


# name -> (steps, codegen target); i_tiles/j_tiles are the inner split lengths (i.1, i.2, i.3), i.0 is implied
SCHEDULES = {
    "8x32 regs, k1=64": (ssrsrs((4, 4, 8), (4, 4, 32), 64), None),
    "8x32 regs, k1=32, i2=2": (ssrsrs((8, 2, 8), (4, 4, 32), 32), None),
    "8x32 regs, k1=128, packed B": (ssrsrs((4, 4, 8), (4, 4, 32), 128, pack_b=True), None),
    "4x16 regs (test default)": (ssrsrs((2, 8, 4), (4, 1, 16), 8, unroll=64), None),
    # the same best schedule rendered as before explicit SIMD (`#pragma omp simd` loops), compiled -march=native
    "8x32, k1=64, pragma-simd C": (ssrsrs((4, 4, 8), (4, 4, 32), 64), "generic"),
}


def timed_block(fn, calls: int) -> float:
    fn()
    ts = []
    for _ in range(calls):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--pause", type=float, default=0.2, help="seconds between contenders (spinning threads settle)")
    ap.add_argument("--wait-idle", type=float, default=0.0, help="wait up to this many seconds for an idle machine")
    ap.add_argument("--peak", action="store_true", help="also run the FMA peak microbenchmark")
    ap.add_argument("--target", default="native")
    a = ap.parse_args(argv)
    n = a.n
    A, B, C = workloads.matmul(n, n, n)
    dag = ansorc.ComputeDAG([A, B, C])
    rng = np.random.default_rng(0)
    x, y = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    ref = x @ y
    out = np.empty((n, n), np.float32)
    contenders = {"numpy": lambda: np.matmul(x, y, out=out)}
    native_flags = Target.from_name(a.target).flags
    for name, (steps, codegen) in SCHEDULES.items():
        kern = ansorc.build([A, B, C], ansorc.replay(dag, steps), target=codegen or a.target, name="gmm",
                            flags=native_flags)
        kern(x, y, out)
        np.testing.assert_allclose(out, ref, rtol=1e-3, atol=1e-2 * n / 1024, err_msg=name)
        contenders[name] = (lambda k: lambda: k(x, y, out))(kern)
    busy = wait_until_idle(a.wait_idle) if a.wait_idle else busy_cpus()
    times = {k: [] for k in contenders}
    for _ in range(a.rounds):
        for name, fn in contenders.items():
            time.sleep(a.pause)
            times[name].append(timed_block(fn, a.calls))
    flops = 2.0 * n ** 3
    gf = {k: flops / statistics.median(v) / 1e9 for k, v in times.items()}
    print(f"GMM {n}x{n}x{n} float32, target {a.target}; busy CPUs before {busy}, after {busy_cpus()}")
    for name, g in gf.items():
        spread = [flops / t / 1e9 for t in (min(times[name]), max(times[name]))]
        print(f"  {name:32s} {g:7.1f} GFLOP/s  ({g / gf['numpy']:.2f}x numpy; rounds {spread[1]:.0f}-{spread[0]:.0f})")
    if a.peak:
        print(f"  FMA peak (2 threads, independent chains): {measure_peak(a.target):.0f} GFLOP/s")


if __name__ == "__main__":
    main()
