"""Low-precision GEMM: ours beside our float32 GEMM and a peer, timed alternating in one process
(measure/alternate.py), per thread count. Prints GOPS (2 * N^3 operations a call) and the median ratios.
--kind int8: u8 x s8 -> int32 through the target's dot-product instruction (codegen/dot.py), against
onnxruntime's MatMulInteger; --kind bf16: bf16 x bf16 -> float32, against PyTorch's bf16 matmul (oneDNN).

    python bench/lowp_gemm.py [--kind int8|bf16] [--n 1024] [--threads 1 2] [--trials 0] [--rounds 7]

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
from ansorc.suite.lowp_peers import matmul_integer  # noqa: E402


def _omp_threads(n: int) -> None:
    """Our kernels' OpenMP thread count from here on (the calling thread's, which runs every kernel)."""
    lib = ctypes.CDLL(ctypes.util.find_library("gomp") or "libgomp.so.1")
    lib.omp_set_num_threads(ctypes.c_int(n))


def _ours(tensors, weights: str, trials: int, model: str, target: str, log: str | None = None):
    """Our kernel: the default program, or the best of `trials` tuned into `log` (a log already there is reused)."""
    dag = ComputeDAG(tensors, constants=[weights])
    if trials <= 0:
        return ansorc.build(dag, default_cpu_schedule(dag, target), target=target)
    log = log or os.path.join(tempfile.mkdtemp(), "log.jsonl")
    if not os.path.exists(log):
        ansorc.tune(tensors, trials=trials, log=log, target=target,
                    options=ansorc.TuneOptions(per_round=min(trials, 16), model=model, progress=False))
    return ansorc.compile(tensors, trials=trials, log=log, target=target, constants=[weights])


def _int8_case(n, rng, args):
    a8 = ansorc.array(rng.integers(0, 256, (n, n), dtype=np.uint8))
    b8 = ansorc.array(rng.integers(-128, 128, (n, n), dtype=np.int8))
    kern = _ours(workloads.matmul_u8s8(n, n, n), "B", args.trials, args.model, args.target,
                 _log(args, f"int8_{n}"))
    want = np.asarray(a8).astype(np.int64) @ np.asarray(b8).astype(np.int64)
    assert np.array_equal(np.asarray(kern(a8, b8)), want), "int8 kernel differs from numpy"

    def peer(t):
        feed = {"A": np.asarray(a8)}
        sess = matmul_integer(np.asarray(b8), feed["A"], t)
        got = sess.run(None, feed)[0].astype(np.int64)
        if not np.array_equal(got, want):   # its AVX2 kernel lets vpmaddubsw's int16 pair sums saturate
            print(f"   onnxruntime differs from numpy in {np.count_nonzero(got != want)} of {want.size} outputs "
                  f"(at most {np.abs(got - want).max()})")
        return "ort MatMulInteger", lambda: sess.run(None, feed)
    out = ansorc.empty((n, n), "int32")   # written in place: no fresh 4 MB (page faults) a call
    return kern, (lambda: kern(a8, b8, out)), peer


def _bf16_case(n, rng, args):
    import torch
    a, b = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
    a16, b16 = ansorc.array(ansorc.to_bfloat16(a)), ansorc.array(ansorc.to_bfloat16(b))
    kern = _ours(workloads.matmul_bf16(n, n, n), "B", args.trials, args.model, args.target,
                 _log(args, f"bf16_{n}"))
    want = ansorc.from_bfloat16(a16).astype(np.float64) @ ansorc.from_bfloat16(b16).astype(np.float64)
    got = np.asarray(kern(a16, b16))
    err = np.abs(got - want).max() / np.abs(want).max()
    assert err < 1e-4, f"bf16 kernel differs from float64 by {err:.2g} of the largest output"
    ta, tb = (torch.from_numpy(ansorc.from_bfloat16(x)).to(torch.bfloat16) for x in (a16, b16))

    def peer(t):
        torch.set_num_threads(t)
        return "torch bf16 matmul", lambda: torch.matmul(ta, tb)
    out = ansorc.empty((n, n), "float32")
    return kern, (lambda: kern(a16, b16, out)), peer


def time_and_report(fns: dict, ops: float, threads: int, rounds: int) -> None:
    """Times fns {ours low-precision, "ours fp32", peer} alternating and prints GOPS, then ours against the
    other two (the first entry is ours)."""
    med = median_alternating(fns, rounds=rounds, min_time=0.3, warm=0.1)
    row = ", ".join(f"{k} {ops / v / 1e9:.1f} GOPS ({v * 1e3:.3f} ms)" for k, v in med.items())
    print(f"{threads} thread{'s' if threads > 1 else ''}: {row}")
    mine, peer = list(med)[0], list(med)[-1]
    print(f"   {mine} / fp32 speed {med['ours fp32'] / med[mine]:.2f}x, {mine} / {peer} {med[peer] / med[mine]:.2f}x")


def parser(doc: str) -> argparse.ArgumentParser:
    """The options every low-precision bench takes: threads, tuning (trials, model, target, logs), rounds."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--trials", type=int, default=0)
    ap.add_argument("--model", default="random")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--target", default="native")
    ap.add_argument("--log-dir", help="keep (and reuse) the tuning logs here")
    return ap


def _log(args, name: str) -> str | None:
    return os.path.join(args.log_dir, f"{name}.jsonl") if args.log_dir else None


def main(argv=None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--kind", choices=("int8", "bf16"), default="int8")
    ap.add_argument("--n", type=int, default=1024)
    args = ap.parse_args(argv)
    n = args.n
    rng = np.random.default_rng(0)
    kern, ours, peer = (_int8_case if args.kind == "int8" else _bf16_case)(n, rng, args)
    a32 = ansorc.array(rng.standard_normal((n, n), dtype=np.float32))
    b32 = ansorc.array(rng.standard_normal((n, n), dtype=np.float32))
    c32 = ansorc.empty((n, n), "float32")
    fp32 = _ours(workloads.matmul(n, n, n), "B", args.trials, args.model, args.target, _log(args, f"fp32_{n}"))
    path = "dot" if "ansorc_dot_" in kern.source else "no dot instruction"
    used = sorted({w.split("(")[0] for w in kern.source.split() if w.startswith("ansorc_dot_")})
    print(f"{args.kind} GEMM {n}^3, target {args.target} ({path}: {', '.join(used)})")
    ops = 2.0 * n ** 3
    for t in args.threads:
        _omp_threads(t)
        name, call = peer(t)
        mine = f"ours {args.kind}"
        time_and_report({mine: ours, "ours fp32": lambda: fp32(a32, b32, c32), name: call}, ops, t, args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
