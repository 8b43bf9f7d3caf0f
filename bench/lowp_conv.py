"""int8 C2D (NHWC, u8 data x s8 weights -> int32, through the dot-product instruction) beside our float32 C2D of
the same shape and onnxruntime's ConvInteger (NCHW), timed alternating in one process, per thread count.
Prints GOPS (2 operations a multiply-add) and the median ratios.

    python bench/lowp_conv.py [--shape 1 56 56 64 64 3 1 1] [--threads 1 2] [--trials 0] [--rounds 7]

--shape is N H W CI CO K stride pad (default: ResNet's 56x56x64 3x3). --trials and --log-dir as in lowp_gemm.py.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ansorc  # noqa: E402
from ansorc import workloads  # noqa: E402
from ansorc.suite.lowp_peers import conv_integer  # noqa: E402

from lowp_gemm import _omp_threads, _ours, parser, time_and_report  # noqa: E402


def main(argv=None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--shape", type=int, nargs=8, default=[1, 56, 56, 64, 64, 3, 1, 1])
    args = ap.parse_args(argv)
    shape = tuple(args.shape)
    n, h, w, ci, co, k, stride, pad = shape
    rng = np.random.default_rng(0)
    x8 = ansorc.array(rng.integers(0, 256, (n, h, w, ci), dtype=np.uint8))
    w8 = ansorc.array(rng.integers(-128, 128, (k, k, ci, co), dtype=np.int8))
    x32 = ansorc.array(rng.standard_normal((n, h, w, ci), dtype=np.float32))
    w32 = ansorc.array(rng.standard_normal((k, k, ci, co), dtype=np.float32))
    logs = [os.path.join(args.log_dir, f"{kind}_c2d.jsonl") if args.log_dir else None for kind in ("int8", "fp32")]
    int8 = _ours(workloads.conv2d_u8s8(*shape), "kernel", args.trials, args.model, args.target, logs[0])
    fp32 = _ours(workloads.c2d(*shape), "kernel", args.trials, args.model, args.target, logs[1])
    got = np.asarray(int8(x8, w8))
    oh, ow = got.shape[1:3]
    ops = 2.0 * n * oh * ow * co * ci * k * k
    y8, y32 = ansorc.empty(got.shape, "int32"), ansorc.empty(got.shape, "float32")   # outputs written in place
    x_nchw = np.ascontiguousarray(np.asarray(x8).transpose(0, 3, 1, 2))
    path = "dot" if "ansorc_dot_" in int8.source else "no dot instruction"
    print(f"C2D {shape}, target {args.target} ({path})")
    for t in args.threads:
        _omp_threads(t)
        sess = conv_integer(np.asarray(w8), x_nchw, stride, pad, t)
        feed = {"X": x_nchw}
        want = sess.run(None, feed)[0].transpose(0, 2, 3, 1)   # exact: its int32 sums match numpy's
        assert np.array_equal(got, want), "int8 conv differs from onnxruntime's ConvInteger"
        time_and_report({"ours int8": lambda: int8(x8, w8, y8), "ours fp32": lambda: fp32(x32, w32, y32),
                         "ort ConvInteger": lambda: sess.run(None, feed)}, ops, t, args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
