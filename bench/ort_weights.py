"""onnxruntime's conv with its weights as initializers (packed once, when the session is made: the table's peer)
and as graph inputs (packed on every call, as ansorc's kernels and PyTorch take them), side by side with ours.
Shows what onnxruntime's lead on a row owes to packing constant weights ahead of time. LOG: tuned with the
weights per call (`bench/suite.py --per-call-weights`); with --kept LOG2 (tuned with the weights declared
constant, the table's default) also ours keeping what it computes from the weights (ir/prepared.py).

    python bench/ort_weights.py OP IDX LOG [--kept LOG2]   (OP a conv-family workload: C2D, GRP, T2D, CBR, ...)
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_PROC_BIND", "true")   # as bench/suite_timing.py times the table


sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import ansorc  # noqa: E402
import suite_onnx  # noqa: E402
from ansorc.measure.affinity import all_process_cpus  # noqa: E402
from ansorc.measure.alternate import median_alternating  # noqa: E402
from suite_timing import WARM, check, row_parser, tuned_row  # noqa: E402


def weights_as_inputs(session):
    """suite_onnx._session with the initializer "w" moved to the graph's inputs."""
    def make(nodes, feeds, inits, rank):
        inits = dict(inits)
        return session(nodes, {**feeds, "w": inits.pop("w")}, inits, rank)
    return make


def contenders(op: str, idx: int, log: str, kept_log: str | None = None) -> dict:
    kern, _, args, values, zeros = tuned_row(op, idx, log, constant_weights=False)
    ins, outs = [ansorc.array(v) for v in values], [ansorc.array(z) for z in zeros]
    kern(*ins, *outs)
    fns = {"ours": lambda: kern(*ins, *outs)}
    if kept_log:
        kept, kept_outs = tuned_row(op, idx, kept_log)[0], [ansorc.array(z) for z in zeros]
        kept(*ins, *kept_outs)   # makes the copy it keeps
        if not check(outs[0], kept_outs[0]):
            raise SystemExit(f"ours with kept weights differs from ours on {op} {idx}")
        fns["ours, weights kept"] = lambda: kept(*ins, *kept_outs)
    session = suite_onnx._session
    with all_process_cpus():   # the pools' threads on every core (bench/suite_timing.py, peer_calls)
        fns["ort, w initializer"], back = suite_onnx.ort_fns(op, args, ins)["onnxruntime"]
        try:
            suite_onnx._session = weights_as_inputs(session)
            fns["ort, w input"], _ = suite_onnx.ort_fns(op, args, ins)["onnxruntime"]
        finally:
            suite_onnx._session = session
    for name in ("ort, w initializer", "ort, w input"):
        if not check(outs[0], back(fns[name]())):
            raise SystemExit(f"{name} differs from ours on {op} {idx}")
    return fns


def main(argv=None) -> int:
    ap = row_parser(__doc__)
    ap.add_argument("--kept", help="a log of the row tuned with its weights declared constant")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args(argv)
    med = median_alternating(contenders(a.op, a.idx, a.log, a.kept), rounds=a.rounds, min_time=0.05, warm=WARM)
    print(f"{a.op} {a.idx}: " + ", ".join(f"{k} {v * 1e6:.1f} us" for k, v in med.items()), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
