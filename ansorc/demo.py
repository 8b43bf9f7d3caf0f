"""`make run`: compile the bundled example and print what it achieved next to numpy, measured in one run."""
from __future__ import annotations

import argparse
import time

import numpy as np

from . import workloads
from .api import build
from .ir.dag import ComputeDAG
from .ir.steps import Annotate, ComputeAt, FollowSplit, Fuse, Pragma, Reorder, Split


def _median_seconds(fn, repeat: int = 15) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size", type=int, default=512)
    args = ap.parse_args(argv)
    n = args.size
    tensors = workloads.matmul_relu(n, n, n)
    dag = ComputeDAG(tensors)
    # A fixed Ansor-style tiling (multi-level tiling with fusion) until the tuner picks one.
    steps = [Split("C", "i", (1, 4, 4)), Split("C", "j", (1, 4, 16)), Split("C", "k", (4,)),
             Reorder("C", ("i.0", "j.0", "i.1", "j.1", "k.0", "i.2", "j.2", "k.1", "i.3", "j.3")),
             FollowSplit("relu", "i", 0, 1), FollowSplit("relu", "j", 1, 1),
             Reorder("relu", ("i.0", "j.0", "i.1", "j.1")), ComputeAt("C", "relu", "j.0"),
             Fuse("relu", ("i.0", "j.0")), Annotate("relu", "i.0@j.0", "parallel"),
             Annotate("C", "j.3", "vectorize"), Annotate("relu", "j.1", "vectorize"),
             Pragma("C", "i.0", "auto_unroll_max_step", 64)]
    kern = build(tensors, steps, name="matmul_relu")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    out = np.empty((n, n), np.float32)
    kern(a, b, out)
    np.testing.assert_allclose(out, np.maximum(a @ b, 0), rtol=1e-3, atol=1e-3)
    t_ours = _median_seconds(lambda: kern(a, b, out))
    t_np = _median_seconds(lambda: np.maximum(a @ b, 0))
    gf = dag.flop_count / 1e9
    print(f"matmul+relu {n}x{n}x{n}: ansorc {gf / t_ours:7.1f} GFLOP/s   numpy {gf / t_np:7.1f} GFLOP/s   "
          f"ratio {t_np / t_ours:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
