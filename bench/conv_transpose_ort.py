"""Strided ConvTranspose layers as one-node ONNX models: ansorc's program (default, or tuned with --trials) against
onnxruntime, side by side in one process (alternating rounds, medians), results checked equal.

    python bench/conv_transpose_ort.py              # default programs
    python bench/conv_transpose_ort.py --trials 64  # each model tuned first (logs in a temporary folder)

GFLOP/s count the useful multiply-adds: every input pixel times every kernel tap once (the zero-insertion form
multiplies s^2 times as many).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ansorc.net  # noqa: E402
from ansorc.measure.alternate import median_alternating  # noqa: E402

# (input N, C, H, W), output channels, kernel, stride, pad: DCGAN / U-Net style upsampling layers
CASES = [((1, 256, 8, 8), 128, 4, 2, 1), ((1, 128, 16, 16), 64, 4, 2, 1), ((1, 64, 32, 32), 32, 4, 2, 1),
         ((1, 64, 28, 28), 32, 3, 2, 1)]


def one_node(xs, co, k, s, p, rng, folder: Path) -> tuple:
    w = rng.standard_normal((xs[1], co, k, k)).astype(np.float32) * 0.05
    b = rng.standard_normal(co).astype(np.float32)
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[s, s], pads=[p] * 4, name="deconv")
    oh, ow = [(n - 1) * s - 2 * p + k for n in xs[2:]]
    g = helper.make_graph([node], "deconv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, xs)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, (xs[0], co, oh, ow))],
                          [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    path = folder / f"deconv_{xs[1]}x{xs[2]}_{k}.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    return path, 2 * xs[0] * xs[1] * xs[2] * xs[3] * co * k * k   # every input pixel times every tap, once


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trials", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=11)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        for xs, co, k, s, p in CASES:
            path, flops = one_node(xs, co, k, s, p, rng, Path(tmp))
            x = rng.standard_normal(xs).astype(np.float32)
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = 2
            sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
            log = Path(tmp) / f"{path.stem}.jsonl" if args.trials else None
            model = ansorc.net.compile(str(path), trials=args.trials, log=log)
            np.testing.assert_allclose(model(x)[0], sess.run(None, {"x": x})[0], rtol=1e-3, atol=1e-3)
            med = median_alternating({"ansorc": lambda: model(x), "ort": lambda: sess.run(None, {"x": x})},
                                     args.rounds, 0.05, 0.1)
            print(f"{xs[1]}x{xs[2]}x{xs[3]} -> {co}, {k}x{k} s{s} p{p}: ansorc {med['ansorc'] * 1e6:.0f} us "
                  f"({flops / med['ansorc'] / 1e9:.0f} GFLOP/s), onnxruntime {med['ort'] * 1e6:.0f} us, "
                  f"onnxruntime / ansorc {med['ort'] / med['ansorc']:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
