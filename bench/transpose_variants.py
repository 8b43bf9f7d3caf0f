"""A tuned row's best logged program rendered with and without transpose_copies (ir/transpose.py: a copy that
gathers a column per vector, turned into blocks transposed in registers), and the row's peers, side by side in
one process, alternating, checked equal; repeated in `--blocks` blocks, since this VM's speed moves by the minute.

    python bench/transpose_variants.py OP IDX LOG [--rounds 7] [--blocks 3]     # e.g. TBG 2 LOG
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import ansorc  # noqa: E402
from suite_timing import WARM, peer_calls, row_parser, tuned_row  # noqa: E402  (sets OMP_PROC_BIND)
from transpose_square import codegen_variant  # noqa: E402
from ansorc.measure.alternate import median_alternating  # noqa: E402


def without_transpose(op: str, idx: int, log):
    """The row's kernel built from its best program with the codegen passes before transpose_copies."""
    with codegen_variant(blocks=False):
        return tuned_row(op, idx, log)[0]


def main(argv=None) -> int:
    ap = row_parser(__doc__)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--blocks", type=int, default=3)
    a = ap.parse_args(argv)
    kern, dag, args, values, zeros = tuned_row(a.op, a.idx, a.log)
    old = without_transpose(a.op, a.idx, a.log)
    if old.source_obj.code == kern.source_obj.code:
        raise SystemExit(f"{a.op} {a.idx}: the best program has no transposing copy; nothing to compare")
    kernels = {"ours": kern, "ours, gathers": old}
    ins = [ansorc.array(v) for v in values]
    outs = {k: [ansorc.array(z) for z in zeros] for k in kernels}
    fns = {k: (lambda k=k: kernels[k](*ins, *outs[k])) for k in kernels}
    fns.update({k: call for k, (call, _) in peer_calls(a.op, args, values).items()})
    for fn in fns.values():
        fn()
    np.testing.assert_array_equal(outs["ours, gathers"][0], outs["ours"][0])
    for b in range(a.blocks):
        med = median_alternating(fns, rounds=a.rounds, min_time=0.05, warm=WARM)
        print(f"{a.op} {a.idx} block {b}: " + ", ".join(f"{k} {v * 1e6:.1f} us" for k, v in med.items()), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
