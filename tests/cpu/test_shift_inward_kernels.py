"""Pure stages whose last tile shifts back inside their axis (ir/relations.py, shift_inward) compute what numpy does:
a vectorized elementwise stage over 100 in parallel tiles of 16, and a matmul's copy out of clamped 6 x 16 register
tiles over 130 rows (the tiles of two threads overlap, rewriting equal values). With and without the last tile
peeled into a narrower copy (ir/peel.py)."""
import re

import numpy as np
import pytest

import ansorc
from ansorc import te
from ansorc.ir.state import State
from ansorc.ir.steps import Annotate, Fuse, Split
import ansorc.ir.peel as peel
from tests.unit.test_shift_inward import tiled_matmul


@pytest.fixture(params=[False, True], ids=["shifted", "peeled"])
def peeled(request, monkeypatch):
    monkeypatch.setattr(peel, "ENABLED", request.param)
    return request.param


def test_an_elementwise_stage_in_shifted_vector_tiles_matches_numpy(peeled):
    a = te.placeholder((3, 100), "float32", "a")
    b = te.compute((3, 100), lambda r, i: te.max(a[r, i], 0.0) * 2.0, name="b")
    st = State.initial(ansorc.ComputeDAG([a, b]))
    for step in (Split("b", "i", (16,)), Fuse("b", ("r", "i.0")), Annotate("b", "r@i.0", "parallel"),
                 Annotate("b", "i.1", "vectorize")):
        st = st.apply(step)
    kern = ansorc.build([a, b], st, name=f"shift_relu_{int(peeled)}")
    x = np.random.default_rng(1).standard_normal((3, 100)).astype(np.float32)
    np.testing.assert_array_equal(kern(x), np.maximum(x, 0) * 2)


def test_a_matmul_copying_out_of_shifted_register_tiles_matches_numpy(peeled):
    tensors, st = tiled_matmul(130, 40, vectorize=True)
    kern = ansorc.build(tensors, st, name=f"shift_mm_{int(peeled)}")
    shifted = re.search(r"ansorc_min_i32\((?!int32_t)", kern.source)   # a call, not the prelude's definition
    assert bool(shifted) != peeled
    rng = np.random.default_rng(2)
    x = rng.standard_normal((130, 64)).astype(np.float32)
    y = rng.standard_normal((64, 40)).astype(np.float32)
    np.testing.assert_allclose(kern(x, y), x @ y, rtol=1e-4, atol=1e-4)
