"""A vectorized loop that folds into one element (`x = max(x, a[i, k])` along k) keeps vector accumulators and
folds them horizontally once after the loop; a division by a value that is the same for every lane multiplies by
its reciprocal. Both checked against numpy on every ISA this machine runs, lengths with and without a tail."""
import numpy as np
import pytest

import ansorc
from ansorc import te
from ansorc.codegen.target import host_isas
from ansorc.ir.schedule.state import State
from ansorc.ir.schedule.steps import Annotate, ComputeAt
from tests.kernel_text import body_of

VECTOR_ISAS = [isa for isa in host_isas() if isa in ("avx512", "avx2", "neon")]
pytestmark = pytest.mark.skipif(not VECTOR_ISAS, reason="no vector ISA on this machine")

FOLDS = {"max": (te.max, np.max), "min": (te.min, np.min), "sum": (te.sum, np.sum)}


def _fold_kernel(kind: str, rows: int, n: int, isa: str):
    a = te.placeholder((rows, n), "float32", "a")
    k = te.reduce_axis((0, n), "k")
    out = te.compute((rows,), lambda i: FOLDS[kind][0](a[i, k], axis=k), name="fold")
    st = State.initial(ansorc.ComputeDAG([a, out])).apply(Annotate("fold", "k", "vectorize"))
    return ansorc.build([a, out], st, target=isa, name=f"fold_{kind}_{n}_{isa}")


@pytest.mark.parametrize("isa", VECTOR_ISAS)
@pytest.mark.parametrize("kind", sorted(FOLDS))
@pytest.mark.parametrize("n", [512, 100, 7 * 16 + 3, 48])
def test_a_folding_loop_uses_vector_accumulators(isa, kind, n):
    kern = _fold_kernel(kind, 5, n, isa)
    body = body_of(kern.source, f"fold_{kind}_{n}_{isa}")
    assert "fold_acc" in body                       # vector accumulators ...
    assert body.count("ansorc_reduce_") <= 3        # ... folded once per row (plus one per narrower piece)
    if isa != "neon":                               # ... by shuffles in registers, log2(lanes) steps
        assert "_mm_movehdup_ps" in kern.source and "float t[" not in kern.source
    a = np.random.default_rng(n).standard_normal((5, n)).astype(np.float32) * 10
    out = ansorc.empty((5,))
    kern(ansorc.array(a), out)
    np.testing.assert_allclose(out, FOLDS[kind][1](a, axis=1), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("isa", VECTOR_ISAS)
def test_folds_keep_infinities_and_nan(isa):
    kern = _fold_kernel("max", 3, 64, isa)
    a = np.zeros((3, 64), np.float32)
    a[0, 37] = np.inf
    a[1, :] = -np.inf
    a[2, 5] = np.nan
    out = ansorc.empty((3,))
    kern(ansorc.array(a), out)
    assert out[0] == np.inf and out[1] == -np.inf
    kern_sum = _fold_kernel("sum", 3, 64, isa)
    kern_sum(ansorc.array(a), out)
    assert out[0] == np.inf and out[1] == -np.inf and np.isnan(out[2])


@pytest.mark.parametrize("isa", VECTOR_ISAS)
def test_division_by_a_lane_invariant_value_multiplies_by_its_reciprocal(isa):
    a = te.placeholder((6, 80), "float32", "a")
    s = te.placeholder((6,), "float32", "s")
    q = te.compute((6, 80), lambda i, j: a[i, j] / s[i], name="q")
    st = State.initial(ansorc.ComputeDAG([a, s, q])).apply(Annotate("q", "j", "vectorize"))
    kern = ansorc.build([a, s, q], st, target=isa, name=f"recip_{isa}")
    assert "div_ps" not in kern.source and "vdivq" not in kern.source
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 80)).astype(np.float32)
    d = np.array([3.0, -7.5, 1e-3, 1e30, 0.0, 1.0], np.float32)
    out = ansorc.empty((6, 80))
    kern(ansorc.array(x), ansorc.array(d), out)
    with np.errstate(divide="ignore"):
        want = x / d[:, None]
    np.testing.assert_allclose(out[:4], want[:4], rtol=3e-7)
    assert np.array_equal(np.sign(out[4]), np.sign(want[4])) and np.isinf(out[4]).all()
    np.testing.assert_array_equal(out[5], x[5])


@pytest.mark.parametrize("isa", VECTOR_ISAS)
def test_a_stage_computed_at_a_vectorized_loop_builds_and_is_right(isa):
    """b computed at c's vectorized axis allocates inside that loop (a network's embedding sum, sampled by the
    search): the loop runs scalar, and the program builds and computes c (it failed with a KeyError before)."""
    a = te.placeholder((6, 40), "float32", "a")
    s = te.placeholder((40,), "float32", "s")
    b = te.compute((6, 40), lambda i, j: a[i, j] * 2.0, name="b")
    c = te.compute((6, 40), lambda i, j: b[i, j] + s[j], name="c")
    st = State.initial(ansorc.ComputeDAG([a, s, c])).apply(ComputeAt("b", "c", "j"))
    st = st.apply(Annotate("c", "j", "vectorize"))
    kern = ansorc.build([a, s, c], st, target=isa, name=f"attached_vec_{isa}")
    x, y = (np.random.default_rng(1).standard_normal(shape).astype(np.float32) for shape in ((6, 40), (40,)))
    np.testing.assert_allclose(kern(ansorc.array(x), ansorc.array(y)), x * 2 + y, rtol=1e-6)
