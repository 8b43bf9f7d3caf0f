"""Plain transposes b = a.T (a: R x C float32) as ansorc kernels, copied by gathers or by blocks transposed in
registers (ir/transpose.py), in two loop orders, side by side in one process, alternating, checked equal; numpy's
copying transpose beside. The blocks are forced on even where transpose_copies keeps the gathers (destination rows
a multiple of CONFLICT_BYTES apart), to show why it does.

    python bench/transpose_square.py [R C ...] [--lanes 8] [--rounds 9]     # default: 1024 1024 1000 1000 512 512

Orders: "rows": for j.0, for i, vector j.1 (the block loop walks along a's rows); "cols": for i.0, for j.0, for
i.1, vector j.1 (one block per (i.0, j.0), walking down a's columns).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ansorc  # noqa: E402
from ansorc import te  # noqa: E402
from ansorc.codegen import c as c_codegen  # noqa: E402
from ansorc.ir import transpose as transpose_pass  # noqa: E402
from ansorc.ir.state import State  # noqa: E402
from ansorc.ir.steps import Annotate, Reorder, Split  # noqa: E402
from ansorc.measure.alternate import median_alternating  # noqa: E402

ORDERS = {"rows": ("j.0", "i", "j.1"), "cols": ("i.0", "j.0", "i.1", "j.1")}


def kernel(rows: int, cols: int, lanes: int, order: str, blocks: bool):
    a = te.placeholder((rows, cols), "float32", "a")
    b = te.compute((cols, rows), lambda i, j: a[j, i], name="b")
    st = State.initial(ansorc.ComputeDAG([a, b])).apply(Split("b", "j", (lanes,)))
    if order == "cols":
        st = st.apply(Split("b", "i", (lanes,)))
    st = st.apply(Reorder("b", ORDERS[order])).apply(Annotate("b", "j.1", "vectorize"))
    passes, conflict = c_codegen.CODEGEN_PASSES, transpose_pass.CONFLICT_BYTES
    c_codegen.CODEGEN_PASSES = passes if blocks else tuple(p for p in passes if p is not c_codegen.transpose)
    transpose_pass.CONFLICT_BYTES = (1 << 40, 1 << 40)   # blocks wherever the pattern allows
    try:
        kern = ansorc.build([a, b], st, name=f"t{rows}_{cols}_{order}_{int(blocks)}")
    finally:
        c_codegen.CODEGEN_PASSES, transpose_pass.CONFLICT_BYTES = passes, conflict
    assert ("_transpose_" in kern.source.split(f"int t{rows}_{cols}_{order}_{int(blocks)}(")[1]) == blocks
    return kern


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("shape", type=int, nargs="*", default=[1024, 1024, 1000, 1000, 512, 512])
    ap.add_argument("--lanes", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=9)
    a = ap.parse_args(argv)
    for rows, cols in zip(a.shape[::2], a.shape[1::2]):
        x = ansorc.array(np.random.default_rng(0).standard_normal((rows, cols)).astype(np.float32))
        fns = {}
        for order in ORDERS:
            for blocks in (False, True):
                kern, out = kernel(rows, cols, a.lanes, order, blocks), ansorc.empty((cols, rows))
                kern(x, out)
                np.testing.assert_array_equal(out, x.T)
                fns[f"{order}, {'blocks' if blocks else 'gathers'}"] = lambda k=kern, o=out: k(x, o)
        fns["numpy"] = lambda: np.ascontiguousarray(x.T)
        med = median_alternating(fns, rounds=a.rounds, min_time=0.05, warm=0.1)
        print(f"{rows} x {cols}: " + ", ".join(f"{k} {v * 1e6:.1f}" for k, v in med.items()) + " us", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
