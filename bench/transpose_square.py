"""Plain transposes as ansorc kernels, copied by gathers or by blocks transposed in registers (ir/transpose.py),
side by side in one process, alternating, checked equal; numpy's copying transpose beside.

    python bench/transpose_square.py [CASE ...] [--lanes 8] [--rounds 9]    # default: 1024x1024 1000x1000 512x512
    python bench/transpose_square.py 1000x768 96x2000 128x12x64:1,2,0       # CASE: RxC, or a shape and its perm

Orders for RxC (b = a.T): "rows": for j.0, for i, vector j.1 (the block loop walks along a's rows); "cols": for
i.0, for j.0, for i.1, vector j.1 (one block per (i.0, j.0), walking down a's columns), both with the blocks forced
on even where transpose_copies keeps the gathers (CONFLICT_BYTES), to show why it does; "default": the default
program (ansorc.search.default_schedule), the pass as it ships. Other perms: the default program only.
"""
from __future__ import annotations

import argparse
import sys
from contextlib import contextmanager
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
from ansorc.search.default_schedule import default_cpu_schedule  # noqa: E402

ORDERS = {"rows": ("j.0", "i", "j.1"), "cols": ("i.0", "j.0", "i.1", "j.1"), "default": None}


@contextmanager
def codegen_variant(blocks: bool, forced: bool = False):
    """Render with the codegen passes as they ship (blocks), or without transpose_copies (gathers); `forced`: blocks
    wherever the pattern allows, the stride rule (CONFLICT_BYTES) off."""
    passes, conflict = c_codegen.CODEGEN_PASSES, transpose_pass.CONFLICT_BYTES
    c_codegen.CODEGEN_PASSES = passes if blocks else tuple(p for p in passes if p is not c_codegen.transpose)
    if forced:
        transpose_pass.CONFLICT_BYTES = (1 << 40, 1 << 40)
    try:
        yield
    finally:
        c_codegen.CODEGEN_PASSES, transpose_pass.CONFLICT_BYTES = passes, conflict


def parse_case(text: str) -> tuple:
    """"RxC" (b = a.T) or "AxBxC:p0,p1,p2" (b = a.transpose(p)) -> (shape, perm)."""
    dims, _, perm = text.partition(":")
    shape = tuple(int(d) for d in dims.split("x"))
    return shape, tuple(int(p) for p in perm.split(",")) if perm else tuple(reversed(range(len(shape))))


def kernel(shape: tuple, perm: tuple, lanes: int, order: str, blocks: bool):
    """The copy under `order` ("rows"/"cols": 2-D with the steps above, blocks forced wherever the pattern allows;
    "default": the default program, the pass as it ships), by gathers or (blocks=True) by blocks."""
    a = te.placeholder(shape, "float32", "a")
    inv = [perm.index(k) for k in range(len(shape))]
    if order == "default":
        b = te.compute(tuple(shape[p] for p in perm), lambda *ix: a[tuple(ix[inv[k]] for k in range(len(shape)))],
                       name="b")
    else:                                          # 2-D, axes named i, j for the steps
        b = te.compute((shape[1], shape[0]), lambda i, j: a[j, i], name="b")
    dag = ansorc.ComputeDAG([a, b])
    if order == "default":
        st = default_cpu_schedule(dag)
    else:
        st = State.initial(dag).apply(Split("b", "j", (lanes,)))
        if order == "cols":
            st = st.apply(Split("b", "i", (lanes,)))
        st = st.apply(Reorder("b", ORDERS[order])).apply(Annotate("b", "j.1", "vectorize"))
    name = f"t{'_'.join(map(str, shape))}_{order}_{int(blocks)}"
    with codegen_variant(blocks, forced=order != "default"):
        kern = ansorc.build([a, b], st, name=name)
    if blocks and "_transpose_" not in kern.source.split(f"int {name}(")[1]:
        print(f"  ({order}: the pass leaves this copy's gathers)")
    return kern


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("case", nargs="*", default=["1024x1024", "1000x1000", "512x512"],
                    help="RxC, or AxBxC:perm for a default program's copy (e.g. 128x12x64:1,2,0)")
    ap.add_argument("--lanes", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=9)
    a = ap.parse_args(argv)
    for shape, perm in map(parse_case, a.case):
        x = ansorc.array(np.random.default_rng(0).standard_normal(shape).astype(np.float32))
        want = np.ascontiguousarray(np.transpose(x, perm))
        fns = {}
        for order in ORDERS if len(shape) == 2 and perm == (1, 0) else ["default"]:
            for blocks in (False, True):
                kern, out = kernel(shape, perm, a.lanes, order, blocks), ansorc.empty(want.shape)
                kern(x, out)
                np.testing.assert_array_equal(out, want)
                fns[f"{order}, {'blocks' if blocks else 'gathers'}"] = lambda k=kern, o=out: k(x, o)
        fns["numpy"] = lambda: np.ascontiguousarray(np.transpose(x, perm))
        med = median_alternating(fns, rounds=a.rounds, min_time=0.05, warm=0.1)
        print(f"{'x'.join(map(str, shape))} {perm}: " + ", ".join(f"{k} {v * 1e6:.1f}" for k, v in med.items())
              + " us", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
