"""int8 GEMM: ours (u8 x s8 -> int32 through the target's dot-product instruction, codegen/dot.py) beside our
float32 GEMM and onnxruntime's MatMulInteger, timed alternating in one process (measure/alternate.py), per
thread count. Prints GOPS (2 * N^3 operations a call) and the median ratios.

    OMP_NUM_THREADS=1 python bench/lowp_gemm.py [--n 1024] [--threads 1 2] [--trials 0] [--rounds 7]

--trials 0 runs the default programs; more tunes each of ours that many trials first (model "random" unless
--model). The weights are constant for every contender (our kept copies, onnxruntime's initializer), as in a
model. Noisy machines: compare the ratios of one run, not figures across runs.
"""
from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ansorc  # noqa: E402
from ansorc import workloads  # noqa: E402
from ansorc.ir.program.dag import ComputeDAG  # noqa: E402
from ansorc.measure.alternate import median_alternating  # noqa: E402
from ansorc.search.default_schedule import default_cpu_schedule  # noqa: E402


def _omp_threads(n: int) -> None:
    """Our kernels' OpenMP thread count from here on (the calling thread's, which runs every kernel)."""
    lib = ctypes.CDLL(ctypes.util.find_library("gomp") or "libgomp.so.1")
    lib.omp_set_num_threads(ctypes.c_int(n))


def _ours(tensors, weights: str, trials: int, model: str, target: str):
    dag = ComputeDAG(tensors, constants=[weights])
    if trials <= 0:
        return ansorc.build(dag, default_cpu_schedule(dag, target), target=target)
    log = os.path.join(tempfile.mkdtemp(), "log.jsonl")
    ansorc.tune(tensors, trials=trials, log=log, target=target,
                options=ansorc.TuneOptions(per_round=min(trials, 16), model=model, progress=False))
    return ansorc.compile(tensors, trials=trials, log=log, target=target, constants=[weights])


def _ort(b: np.ndarray, threads: int):
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["A", "B"], ["Y"])], "mmi",
        [helper.make_tensor_value_info("A", TensorProto.UINT8, [None, b.shape[0]])],
        [helper.make_tensor_value_info("Y", TensorProto.INT32, [None, b.shape[1]])],
        [numpy_helper.from_array(b, "B")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads, opts.inter_op_num_threads = threads, 1
    onnx.checker.check_model(model)
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--trials", type=int, default=0)
    ap.add_argument("--model", default="random")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--target", default="native")
    args = ap.parse_args(argv)
    n = args.n
    rng = np.random.default_rng(0)
    a8 = ansorc.array(rng.integers(0, 256, (n, n), dtype=np.uint8))
    b8 = ansorc.array(rng.integers(-128, 128, (n, n), dtype=np.int8))
    a32 = ansorc.array(rng.standard_normal((n, n), dtype=np.float32))
    b32 = ansorc.array(rng.standard_normal((n, n), dtype=np.float32))
    int8 = _ours(workloads.matmul_u8s8(n, n, n), "B", args.trials, args.model, args.target)
    fp32 = _ours(workloads.matmul(n, n, n), "B", args.trials, args.model, args.target)
    want = np.asarray(a8).astype(np.int64) @ np.asarray(b8).astype(np.int64)
    assert np.array_equal(np.asarray(int8(a8, b8)), want), "int8 kernel differs from numpy"
    path = "dot" if "ansorc_dot_" in int8.source else "no dot instruction"
    used = sorted({w.split("(")[0] for w in int8.source.split() if w.startswith("ansorc_dot_")})
    print(f"GEMM {n}^3, target {args.target} ({path}: {', '.join(used)})")
    ops = 2.0 * n ** 3
    for t in args.threads:
        _omp_threads(t)
        sess = _ort(np.asarray(b8), t)
        feed = {"A": np.asarray(a8)}
        got = sess.run(None, feed)[0].astype(np.int64)
        if not np.array_equal(got, want):   # its AVX2 kernel lets vpmaddubsw's int16 pair sums saturate
            print(f"   onnxruntime differs from numpy in {np.count_nonzero(got != want)} of {want.size} outputs "
                  f"(at most {np.abs(got - want).max()})")
        fns = {"ours int8": lambda: int8(a8, b8), "ours fp32": lambda: fp32(a32, b32),
               "ort MatMulInteger": lambda: sess.run(None, feed)}
        med = median_alternating(fns, rounds=args.rounds, min_time=0.3, warm=0.1)
        row = ", ".join(f"{k} {ops / v / 1e9:.1f} GOPS ({v * 1e3:.2f} ms)" for k, v in med.items())
        print(f"{t} thread{'s' if t > 1 else ''}: {row}")
        print(f"   int8 / fp32 speed {med['ours fp32'] / med['ours int8']:.2f}x, "
              f"int8 / ort {med['ort MatMulInteger'] / med['ours int8']:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
