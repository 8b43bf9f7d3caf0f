"""Sketch generation: golden printed sketches (state + steps) per workload, and the sketch counts."""
import os
from pathlib import Path

import pytest

from ansorc import te, workloads
from ansorc.ir.program.dag import transposed_axes
from ansorc.search.rules import APPLY_AND_SKIP_REST, SKIP, Rule
from ansorc.search.sketch import generate_sketches, print_sketches
from ansorc.search.task import HardwareParams, SearchTask

GOLDEN = Path(__file__).parent / "golden"
HW = HardwareParams(num_cores=2)  # golden output must not depend on the machine running the tests


def example2():
    """The seed's example 2: B = relu(A) 8x400, C = B zero-padded to 8x512, E = C x D with D 512x4."""
    A = te.placeholder((8, 400), name="A")
    D = te.placeholder((512, 4), name="D")
    B = te.compute((8, 400), lambda i, j: te.max(A[i, j], 0.0), name="B")
    C = te.compute((8, 512), lambda i, j: te.if_then_else(j < 400, B[i, te.min(j, 399)], 0.0), name="C")
    k = te.reduce_axis((0, 512), name="k")
    E = te.compute((8, 4), lambda i, j: te.sum(C[i, k] * D[k, j], axis=k), name="E")
    return [A, D, E]


CASES = {
    "gmm": (lambda: workloads.matmul(512, 512, 512), 3),
    "gmm_relu": (lambda: workloads.matmul_relu(512, 512, 512), 3),
    "c2d_pad": (lambda: workloads.c2d(1, 56, 56, 64, 64, 3, 1, 1), 3),
    "nrm": (lambda: workloads.nrm(1, 1024, 1024), 3),
    "example2": (example2, 5),
    "tbg": (lambda: workloads.tbg(1, 32, 2, 16), 6),   # the key transpose: tiled and untiled sketches
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_sketches(name):
    make, count = CASES[name]
    sketches = generate_sketches(SearchTask(make(), hw=HW))
    text = print_sketches(sketches) + "\n"
    path = GOLDEN / f"sketch_{name}.txt"
    if os.environ.get("ANSORC_UPDATE_GOLDEN") == "1":
        path.write_text(text)
    assert path.exists(), f"{path.name} is missing: run with ANSORC_UPDATE_GOLDEN=1 to write it, then review it"
    assert text == path.read_text(), "sketches changed: if intended, rerun with ANSORC_UPDATE_GOLDEN=1 and review"
    assert len(sketches) == count


def test_example2_has_rfactor_and_tiling_sketches():
    sketches = generate_sketches(SearchTask(example2(), hw=HW))
    kinds = [{type(s).__name__ for s in sk.steps} for sk in sketches]
    assert any("Rfactor" in k for k in kinds)
    assert any("Split" in k and "Rfactor" not in k for k in kinds)


def test_sketches_leave_split_lengths_undecided():
    for sk in generate_sketches(SearchTask(workloads.matmul(256, 256, 256), hw=HW)):
        splits = [s for s in sk.steps if type(s).__name__ == "Split"]
        assert splits and all(all(x is None for x in s.lengths) for s in splits)


def test_custom_rule_runs_first():
    class OnlyInline(Rule):
        name = "custom"

        def condition(self, task, state, i):
            return APPLY_AND_SKIP_REST if state.stages[i].name == "C" else SKIP

        def apply(self, task, state, i):
            return [(state, i - 1)]  # claim C: leave it untiled

    sketches = generate_sketches(SearchTask(workloads.matmul(64, 64, 64), hw=HW), custom_rules=(OnlyInline(),))
    assert len(sketches) == 1 and sketches[0].steps == ()


def test_transposed_axes_finds_copies_across_a_transposition_only():
    A = te.placeholder((4, 8, 16), name="A")
    perm = te.compute((16, 4, 8), lambda c, a, b: A[a, b, c], name="P")          # written along b, read along c
    assert transposed_axes(perm.op) == ("b", "c")
    same = te.compute((8, 4, 16), lambda b, a, c: A[a, b, c] * 2.0, name="S")    # innermost stays innermost
    assert transposed_axes(same.op) is None
    k = te.reduce_axis((0, 16), name="k")
    red = te.compute((8, 4), lambda b, a: te.sum(A[a, b, k], axis=k), name="R")  # a reduction is not a copy
    assert transposed_axes(red.op) is None
    col = te.compute((4, 1), lambda a, one: A[a, 0, 0], name="C")                # an axis of extent 1
    assert transposed_axes(col.op) is None
