"""`make run`: tune the bundled example (examples/matmul_relu.te) with a small budget, then time the tuned
kernel and numpy side by side in this process and print both."""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from .autotune import compile as compile_kernel
from .frontend import load
from .kernel import array, empty
from .measure.alternate import median_alternating

ROOT = Path(__file__).resolve().parents[1]


def side_by_side(ours, theirs, rounds: int = 7, min_round: float = 0.1, warm: float = 0.25) -> tuple:
    """Median seconds per call of each, alternating round by round so both see the same machine state, each
    block after `warm` seconds of untimed calls (measure/alternate.py says why)."""
    med = median_alternating({"ours": ours, "theirs": theirs}, rounds, min_round, warm)
    return med["ours"], med["theirs"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--file", default=str(ROOT / "examples" / "matmul_relu.te"))
    ap.add_argument("--trials", type=int, default=64)
    ap.add_argument("--log", default=str(ROOT / "out" / "demo_log.jsonl"))
    ap.add_argument("-D", dest="defines", action="append", default=[])
    args = ap.parse_args(argv)
    from .frontend import parse_defines
    prog = load(args.file, parse_defines(args.defines))
    Path(args.log).parent.mkdir(parents=True, exist_ok=True)
    print(f"tuning {args.file} ({', '.join(f'{k}={v}' for k, v in prog.params.items())}) for {args.trials} trials;"
          f" log: {args.log}")
    t0 = time.time()
    kern = compile_kernel(prog.tensors, trials=args.trials, log=args.log, name="matmul_relu")
    print(f"tuned in {time.time() - t0:.0f} s")
    (a_t, b_t), out_t = prog.inputs, prog.outputs[0]
    rng = np.random.default_rng(0)
    # 64-byte aligned, as the tuner measured (plain numpy arrays are only 16-byte aligned; numpy's BLAS packs its
    # operands, so this costs numpy nothing).
    a = array(rng.standard_normal(a_t.shape, dtype=np.float32))
    b = array(rng.standard_normal(b_t.shape, dtype=np.float32))
    out = empty(out_t.shape, np.float32)
    kern(a, b, out)
    np.testing.assert_allclose(out, np.maximum(a @ b, 0), rtol=1e-3, atol=1e-3)
    t_ours, t_np = side_by_side(lambda: kern(a, b, out), lambda: np.maximum(a @ b, 0, out=out))
    flop = kern.spec.dag.flop_count
    print(f"matmul+relu {a.shape[0]}x{b.shape[1]}x{a.shape[1]}: ansorc {flop / t_ours / 1e9:7.1f} GFLOP/s   "
          f"numpy {flop / t_np / 1e9:7.1f} GFLOP/s   ansorc/numpy speed ratio {t_np / t_ours:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
