"""TBG's logged best program (or its default) side by side with the same program computing K' (the transposed copy
of K) per head inside the scores' parallel head loop instead of in a parallel pass of its own, and PyTorch, in one
process (alternating rounds, medians), checked equal.

    python bench/copy_per_head.py IDX LOG [--rounds 9]      # IDX: TBG shape index; LOG `-`: the default program

Variants: `per head` is what the search can sample (K' at the scores' head loop, its j loop vectorized whole, the
copy in transposed blocks down the column, ir/transpose.py); `per head, d split 8` splits K's d by 8 first.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from programs_ab import checked_calls, program  # noqa: E402
from suite_timing import WARM, peer_calls, row_dag  # noqa: E402  (sets OMP_PROC_BIND)
from ansorc import workloads  # noqa: E402
from ansorc.ir.state import replay  # noqa: E402
from ansorc.ir.steps import Annotate, ComputeAt, FollowSplit, Fuse, Pragma, Reorder, Split  # noqa: E402
from ansorc.measure.alternate import median_alternating  # noqa: E402


def per_head(dag, best, d_split: int | None):
    """The best program's scores steps with their parallel loop over (b, h) only, and K' computed there."""
    steps = list(best.steps)
    own = [k for k, s in enumerate(steps) if getattr(s, "stage", None) == "key_T"]
    out = []
    for k, s in enumerate(steps):
        if k in own:
            continue
        if isinstance(s, FollowSplit):   # step numbers shift by K's steps taken out
            s = replace(s, src_step=s.src_step - sum(1 for j in own if j < s.src_step))
        if isinstance(s, Fuse) and s.stage == "scores":
            s = Fuse("scores", ("b", "h"))
        if isinstance(s, (Annotate, Pragma)) and s.stage == "scores" and s.iter.startswith("b@h@"):
            s = replace(s, iter="b@h")   # the parallel loop's annotation and pragmas
        out.append(s)
    out.append(ComputeAt("key_T", "scores", "b@h"))
    if d_split is None:
        return replay(dag, out + [Annotate("key_T", "j", "vectorize")])
    return replay(dag, out + [Split("key_T", "j", (8,)), Split("key_T", "d", (d_split,)),
                              Reorder("key_T", ("b", "h", "d.0", "j.0", "d.1", "j.1")),
                              Annotate("key_T", "j.1", "vectorize")])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("idx", type=int)
    ap.add_argument("log")
    ap.add_argument("--rounds", type=int, default=9)
    a = ap.parse_args(argv)
    dag = row_dag("TBG", a.idx)
    best = program(dag, a.log)
    states = {"best": best, "per head": per_head(dag, best, None), "per head, d split 8": per_head(dag, best, 8)}
    fns, values = checked_calls(dag, states)
    peers = peer_calls("TBG", workloads.WORKLOADS["TBG"][1][a.idx], values)
    fns.update({k: call for k, (call, _) in peers.items() if k == "torch"})
    med = median_alternating(fns, rounds=a.rounds, min_time=0.05, warm=WARM)
    base = med["best"]
    print(f"TBG {a.idx}: " + ", ".join(f"{k} {v * 1e6:.1f} us ({v / base:.3f})" for k, v in med.items()), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
