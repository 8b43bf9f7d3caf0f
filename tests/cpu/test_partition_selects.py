"""partition_selects (ir/passes/partition.py): a concat's select chain over a tiled, vectorized axis becomes one
direct read per piece of the tile loop; where an input's boundary falls inside a tile that piece keeps its
selects. Every case matches numpy and reads nothing outside its buffers (sanitized)."""
import numpy as np
import pytest

import ansorc
from ansorc import te
from ansorc.api import generate_source
from ansorc.codegen.target import host_isas
from ansorc.ir.schedule.steps import Annotate, Fuse, Split

from .helpers import check_sanitized

ISA = next((isa for isa in ("avx512", "avx2") if isa in host_isas()), None)
pytestmark = pytest.mark.skipif(ISA is None, reason="this CPU runs neither AVX2 nor AVX-512 kernels")


def concat(rows: int, widths: tuple, tile: int):
    """y[i, j, c] = the c-th channel of x0 | x1 | ... (the select chain net/ops/shape.py builds), scaled by 2, with
    the channel axis in tiles of `tile` vectorized lanes; (tensors, steps)."""
    xs = [te.placeholder((rows, 3, w), name=f"x{k}") for k, w in enumerate(widths)]
    offsets = np.cumsum((0,) + widths)

    def body(i, j, c):
        out = te.const(0.0, "float32")
        for k in reversed(range(len(xs))):
            lo, hi = int(offsets[k]), int(offsets[k + 1])
            conds = ([c >= lo] if k else []) + ([c < hi] if k < len(xs) - 1 else [])
            here = xs[k][i, j, c - lo]
            out = te.if_then_else(te.all(*conds), here, out) if conds else here
        return out * 2.0
    y = te.compute((rows, 3, int(offsets[-1])), body, name="y")
    steps = [Split("y", "c", (tile,)), Fuse("y", ("i", "j")), Annotate("y", "i@j", "parallel"),
             Annotate("y", "c.1", "vectorize")]
    return [*xs, y], steps


CASES = {"aligned": ((64, 32, 32), 32), "overhang": ((64, 32, 20), 32), "inside a tile": ((40, 24, 16), 16)}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_concat_reads_each_input_directly_and_matches_numpy(case):
    widths, tile = CASES[case]
    tensors, steps = concat(5, widths, tile)
    state = ansorc.replay(ansorc.ComputeDAG(tensors), steps)
    source = generate_source(tensors, state, target=ISA)
    code = source.code
    body = code[code.index("static void kernel_par0"):]
    assert "(const float[" not in body               # no lane-by-lane select chain
    if case == "aligned":                            # one loop per input, each a plain copy
        assert body.count("for (int32_t y_c_0") == 3 and "?" not in body
    rng = np.random.default_rng(len(widths) + tile)
    xs = [rng.standard_normal((5, 3, w)).astype(np.float32) for w in widths]
    want = np.concatenate(xs, axis=2) * 2.0
    kern = ansorc.build(tensors, state, target=ISA, name=f"concat_{case.replace(' ', '_')}")
    out = ansorc.empty(want.shape)
    kern(*[ansorc.array(x) for x in xs], out)
    np.testing.assert_array_equal(out, want)
    dag = ansorc.ComputeDAG(tensors)
    check_sanitized(dag, source, {t.name: x for t, x in zip(tensors, xs)}, {"y": want}, case)


def test_padding_is_left_alone():
    """A select with a constant arm (padding) is no choice of source: the loop stays one loop."""
    x = te.placeholder((4, 30), name="x")
    y = te.compute((4, 32), lambda i, j: te.if_then_else(te.all(j >= 1, j < 31), x[i, j - 1], 0.0), name="y")
    state = ansorc.replay(ansorc.ComputeDAG([x, y]), [Split("y", "j", (8,)), Annotate("y", "j.1", "vectorize")])
    code = generate_source([x, y], state, target=ISA).code
    assert code.count("for (int32_t y_j_0 = 0;") == 1
