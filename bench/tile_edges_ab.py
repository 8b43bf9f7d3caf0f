"""A table row's best program with its tap loops written out (ansorc/ir/tile_edges.py) and without, side by side.

    python bench/tile_edges_ab.py LOG_DIR C2D:3 DIL:3 C2D:2

LOG_DIR holds the rows' logs (<op>_<shape index>.jsonl, as bench/suite.py writes them). Both programs are built
from the same best record, checked equal, then timed in alternating rounds in this process (medians).
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import ansorc  # noqa: E402
from ansorc.ir import tile_edges  # noqa: E402
from suite_timing import row_dag  # noqa: E402


def _median_call(kern, args) -> float:
    kern(*args)
    t0 = time.perf_counter()
    kern(*args)
    calls = max(3, int(0.05 / max(time.perf_counter() - t0, 1e-6)))
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        kern(*args)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def compare(log_dir: Path, op: str, idx: int, rounds: int = 7) -> str:
    log = str(log_dir / f"{op.lower()}_{idx}.jsonl")
    kerns = []
    for enabled in (False, True):
        tile_edges.ENABLED = enabled
        kerns.append(ansorc.compile(row_dag(op, idx), trials=0, log=log, name=f"{op.lower()}_{idx}_{int(enabled)}"))
    tile_edges.ENABLED = True
    if kerns[0].source.replace(f"_{idx}_0", f"_{idx}_1") == kerns[1].source:
        return f"{op} {idx}: same program"
    dag = row_dag(op, idx)
    values = [np.random.default_rng(0).standard_normal(t.shape, dtype=np.float32) for t in dag.inputs]
    args = [ansorc.array(v) for v in values] + [ansorc.empty(t.shape, t.dtype) for t in dag.outputs]
    outs = []
    for k in kerns:
        k(*args)
        outs.append(np.array(args[-1]).copy())
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-4, atol=1e-3)
    times = [[], []]
    for _ in range(rounds):
        for t, k in zip(times, kerns):
            t.append(_median_call(k, args))
    before, after = (statistics.median(t) for t in times)
    return f"{op} {idx}: {before * 1e6:.1f} us before, {after * 1e6:.1f} us written out, ratio {after / before:.3f}"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    for row in argv[1:]:
        op, idx = row.split(":")
        print(compare(Path(argv[0]), op, int(idx)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
