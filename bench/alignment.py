"""How much a tuned kernel loses on misaligned arrays: the best programs of a log, timed from Python on 64-byte
aligned arrays and on arrays starting 16 and 32 bytes past a 64-byte boundary (numpy guarantees only 16).

    python bench/alignment.py [--log out/demo_log.jsonl] [--file examples/matmul_relu.te] [--top 4]

Run `make run` first for the default log. Every figure is the median of rounds alternating the three layouts.
"""
from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import ansorc  # noqa: E402
from ansorc.frontend import load  # noqa: E402
from ansorc.ir.state import replay  # noqa: E402
from ansorc.ir.steps import steps_from_json  # noqa: E402
from ansorc.measure.alternate import median_alternating  # noqa: E402
from ansorc.measure.record import best  # noqa: E402
from ansorc.measure.record import load as load_log  # noqa: E402


def placed(data: np.ndarray, offset: int) -> np.ndarray:
    """A copy of data starting `offset` bytes past a 64-byte boundary."""
    raw = np.empty(data.nbytes + 128, np.uint8)
    start = (-raw.ctypes.data) % 64 + offset
    out = raw[start:start + data.nbytes].view(data.dtype).reshape(data.shape)
    out[...] = data
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log", default=str(ROOT / "out" / "demo_log.jsonl"))
    ap.add_argument("--file", default=str(ROOT / "examples" / "matmul_relu.te"))
    ap.add_argument("--top", type=int, default=4)
    a = ap.parse_args(argv)
    prog = load(a.file, {})
    dag = ansorc.ComputeDAG(prog.tensors)
    rng = np.random.default_rng(0)
    data = [rng.standard_normal(t.shape, dtype=np.float32) for t in dag.inputs]
    data += [np.zeros(t.shape, np.float32) for t in dag.outputs]
    gflop = dag.flop_count / 1e9
    for k, rec in enumerate(best(load_log(a.log), dag.workload_key, k=a.top)):
        kern = ansorc.build(dag, replay(dag, steps_from_json(rec.steps)), name=f"top_{k}")
        layouts = {off: [placed(d, off) for d in data] for off in (0, 16, 32)}
        fns = {off: (lambda args=args: kern(*args)) for off, args in layouts.items()}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ansorc.AlignmentWarning)  # misaligned on purpose
            med = median_alternating(fns, rounds=7, min_time=0.1, warm=0.1)
        print(f"#{k}: " + "   ".join(f"offset {off:2d} B: {gflop / med[off]:6.1f} GFLOP/s" for off in med)
              + f"   aligned/offset-16 speed ratio {med[16] / med[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
