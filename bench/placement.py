"""How much a kernel's speed depends on where its arrays land: the best program of a suite log, timed on the same
arguments carved from a 64-byte aligned buffer with different gaps between them (every start stays aligned),
alternating the placements in one process (medians).

    python bench/placement.py C2D:1 bench/results/suite_zen3/t300_s31/c2d_1.jsonl.gz

Session s31 found the 1x1 conv rows 1.7-1.9x slower in the suite process that had just tuned them than in a fresh
one; here one program on the same arrays ran 148-212 us depending on the gaps, and which gaps were slow changed
from process to process (bench/results/suite_notes.md, session s31).
"""
from __future__ import annotations

import argparse
import gzip
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ansorc  # noqa: E402
from ansorc import workloads  # noqa: E402
from ansorc.ir.dag import ComputeDAG  # noqa: E402
from ansorc.measure.alternate import median_alternating  # noqa: E402

GAPS = (0, 64, 4096, 65536, 1 << 20, 790080, 49728, 3200000)   # bytes between consecutive arguments


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("row", help="OP:shape index, e.g. C2D:1")
    ap.add_argument("log", help="a tuning log (.jsonl or .jsonl.gz) of that row")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    op, idx = args.row.split(":")
    tensors = workloads.make(op.upper(), int(idx))
    dag = ComputeDAG(tensors)
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "log.jsonl"
        opener = gzip.open if args.log.endswith(".gz") else open
        with opener(args.log, "rb") as src, open(log, "wb") as dst:
            shutil.copyfileobj(src, dst)
        kern = ansorc.compile(tensors, trials=0, log=str(log), name="placed")
    shapes = [t.shape for t in dag.inputs] + [t.shape for t in dag.outputs]
    sizes = [int(np.prod(s)) for s in shapes]
    rng = np.random.default_rng(0)
    values = [rng.standard_normal(s, dtype=np.float32) for s in shapes[:len(dag.inputs)]]
    fns = {}
    for gap in GAPS:
        big = ansorc.empty((sum(sizes) + len(sizes) * gap // 4,))   # one buffer per placement: none overlaps
        offset, args_ = 0, []
        for shape, n in zip(shapes, sizes):
            args_.append(big[offset:offset + n].reshape(shape))
            offset += n + gap // 4
        for a, v in zip(args_, values):
            a[...] = v
        fns[f"gap {gap} B"] = lambda a=args_: kern(*a)
        fns[f"gap {gap} B"]()
    med = median_alternating(fns, rounds=args.rounds, min_time=0.05, warm=0.1)
    for name, seconds in med.items():
        print(f"{op.upper()}:{idx} {name:>14}: {seconds * 1e6:9.1f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
