"""Hand-made variants of two rows' logged best programs, side by side with it: paired ratios of alternating rounds.

    python bench/tile_variants.py C3D 3 D/c3d_3.jsonl --c3d-2-log D/c3d_2.jsonl   # C3D 7x7x512
    python bench/tile_variants.py DIL 0 D/dil_0.jsonl                            # DIL 224 stem

C3D 7x7x512 (its best: a 7-column x 2-vector tile over 256 channels, depth outermost): depth split so that one
16 KB weights chunk serves 2 or 4 depths; the channel-chunk loop outside depth (the weights chunk then stays in
L2); and C3D 14x14x256's best structure (a 4-depth x 2-vector tile) replayed on this shape, also with its
reduction over channels split by 256 / 128, and a 2-depth x 4-vector tile (session s47). DIL 224 stem (109
output columns in 6-column tiles, 114 computed): 5-, 4- and 7-column tiles. Each variant is checked equal to the
best; per round, each variant's time is divided by the best's time of the same round (the VM's phases last
longer than a round), and the median and quartiles of those ratios are printed (session s46, suite_notes.md).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from programs_ab import checked_calls, program  # noqa: E402
from suite_timing import WARM, row_dag  # noqa: E402
from ansorc.ir.state import replay  # noqa: E402
from ansorc.ir.steps import ComputeAt, FollowSplit, Reorder, Split  # noqa: E402
from ansorc.measure.alternate import alternating_rounds  # noqa: E402

LOCAL = "conv.local"


def c3d_depth_split(dag, steps, d1: int):
    steps = list(steps)
    i = next(k for k, s in enumerate(steps) if isinstance(s, Reorder) and s.stage == LOCAL)
    steps[i:i + 1] = [Split(LOCAL, "d", (d1,)),
                      Reorder(LOCAL, ("co.0", "n", "d.0", "h.0", "w.0", "rd", "rh", "rw", "rc.0", "d.1", "h.1",
                                      "w.1", "rc.1", "w.2", "co.1"))]
    j = next(k for k, s in enumerate(steps) if isinstance(s, Reorder) and s.stage == "conv")
    steps[j:j + 1] = [FollowSplit("conv", "d", i, 1),
                      Reorder("conv", ("co.0", "n", "d.0", "h.0", "w.0", "d.1", "h.1", "w.1", "co.1"))]
    return replay(dag, steps)


def c3d_channels_outside(dag, steps, rc1: int):
    order = ("co.0", "n", "h.0", "w.0", "rc.0", "d", "rd", "rh", "rw", "h.1", "w.1", "rc.1", "w.2", "co.1")

    def swap(s):
        if isinstance(s, Split) and s.stage == LOCAL and s.iter == "rc":
            return Split(LOCAL, "rc", (rc1,))
        if isinstance(s, Reorder) and s.stage == LOCAL:
            return Reorder(LOCAL, order)
        if isinstance(s, ComputeAt) and s.stage == LOCAL:
            return ComputeAt(LOCAL, "conv", "co.0")   # the tile spans all depths: rc.0 can go outside them
        return s
    return replay(dag, [swap(s) for s in steps])


def c3d_depth_tile(dag, c3d2_steps, rc1: int = 0, depths: int = 4, co: int = 16):
    """C3D 14x14x256's best structure (a depths x co/8-vector tile, 0.75 loads a FMA at 4 x 2), its reduction over
    the channels split by rc1 when given (a 512-channel tap's 32 KB weights panel then fits L1 in 16 KB pieces)."""
    lengths = {"w": (7,), "d": (1, depths), "co": (co,)}
    out = []
    for s in c3d2_steps:
        if isinstance(s, Split) and s.stage == LOCAL:
            out.append(Split(LOCAL, s.iter, lengths[s.iter]))
            if s.iter == "co" and rc1:   # inserted after the last split: the FollowSplits' step indices hold
                out.append(Split(LOCAL, "rc", (rc1,)))
        elif isinstance(s, Reorder) and s.stage == LOCAL and rc1:
            out.append(Reorder(LOCAL, ("co.0", "n", "d.0", "h", "w.0", "rd", "rh", "rw", "rc.0", "w.1", "d.1",
                                       "rc.1", "d.2", "co.1")))
        else:
            out.append(s)
    return replay(dag, out)


def columns(dag, steps, w: int):
    return replay(dag, [Split(LOCAL, "w", (w,)) if isinstance(s, Split) and s.stage == LOCAL and s.iter == "w"
                        else s for s in steps])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("op", choices=("C3D", "DIL"))
    ap.add_argument("idx", type=int)
    ap.add_argument("log")
    ap.add_argument("--c3d-2-log", help="C3D 14x14x256's log: its best's structure becomes one more variant")
    ap.add_argument("--rounds", type=int, default=21)
    a = ap.parse_args(argv)
    dag = row_dag(a.op, a.idx)
    best = program(dag, a.log)
    states = {"best": best}
    if a.op == "C3D":
        states.update({f"depth split {d}": c3d_depth_split(dag, best.steps, d) for d in (2, 4)})
        states.update({f"channels outside depth, {c}": c3d_channels_outside(dag, best.steps, c) for c in (128, 64)})
        if a.c3d_2_log:
            c3d2 = program(row_dag("C3D", 2), a.c3d_2_log).steps
            states["4-depth tile"] = c3d_depth_tile(dag, c3d2)
            states.update({f"4-depth tile, channels by {c}": c3d_depth_tile(dag, c3d2, c) for c in (256, 128)})
            states["2-depth x 4-vector tile, channels by 256"] = c3d_depth_tile(dag, c3d2, 256, 2, 32)
    else:
        states.update({f"{w} columns": columns(dag, best.steps, w) for w in (5, 4, 7)})
    fns, _ = checked_calls(dag, states)
    times = alternating_rounds(fns, a.rounds, min_time=0.05, warm=WARM)
    base = np.array(times["best"])
    for k, v in times.items():
        r = np.array(v) / base
        print(f"{a.op} {a.idx} {k}: median {np.median(v) * 1e3:.2f} ms, min {min(v) * 1e3:.2f} ms, paired ratio "
              f"{np.median(r):.3f} (quartiles {np.quantile(r, 0.25):.3f}-{np.quantile(r, 0.75):.3f})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
