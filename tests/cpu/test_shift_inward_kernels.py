"""Pure stages whose last tile shifts back inside their axis (relations.py, shift_inward) compute what numpy does:
a vectorized elementwise stage over 100 in parallel tiles of 16, and a matmul's copy out of clamped 6 x 16 register
tiles over 130 rows (the tiles of two threads overlap, rewriting equal values). With and without the last tile
peeled into a narrower copy (ir/lowering/peel.py)."""
import re
from dataclasses import replace

import numpy as np
import pytest

import ansorc
from ansorc import te
from ansorc.ir.schedule.state import State
from ansorc.ir.schedule.steps import Annotate, Fuse, Split
from ansorc.api import build_spec
from ansorc.codegen.target import Target
from ansorc.ir.lowering.lower import LowerOptions
from ansorc.spec import KernelSpec
from tests.unit.test_shift_inward import tiled_matmul


@pytest.fixture(params=[False, True], ids=["shifted", "peeled"])
def peeled(request):
    return request.param


def build(tensors, st, name: str, peeled: bool):
    spec = KernelSpec.of(ansorc.ComputeDAG(tensors), st, Target.from_name("native"))
    return build_spec(replace(spec, lower_options=LowerOptions(peel=peeled)), name)


def test_an_elementwise_stage_in_shifted_vector_tiles_matches_numpy(peeled):
    a = te.placeholder((3, 100), "float32", "a")
    b = te.compute((3, 100), lambda r, i: te.max(a[r, i], 0.0) * 2.0, name="b")
    st = State.initial(ansorc.ComputeDAG([a, b]))
    for step in (Split("b", "i", (16,)), Fuse("b", ("r", "i.0")), Annotate("b", "r@i.0", "parallel"),
                 Annotate("b", "i.1", "vectorize")):
        st = st.apply(step)
    kern = build([a, b], st, f"shift_relu_{int(peeled)}", peeled)
    x = np.random.default_rng(1).standard_normal((3, 100)).astype(np.float32)
    np.testing.assert_array_equal(kern(x), np.maximum(x, 0) * 2)


def test_a_matmul_copying_out_of_shifted_register_tiles_matches_numpy(peeled):
    tensors, st = tiled_matmul(130, 40, vectorize=True)
    kern = build(tensors, st, f"shift_mm_{int(peeled)}", peeled)
    shifted = re.search(r"ansorc_min_i32\((?!int32_t)", kern.source)   # a call, not the prelude's definition
    assert bool(shifted) != peeled
    rng = np.random.default_rng(2)
    x = rng.standard_normal((130, 64)).astype(np.float32)
    y = rng.standard_normal((64, 40)).astype(np.float32)
    np.testing.assert_allclose(kern(x, y), x @ y, rtol=1e-4, atol=1e-4)
