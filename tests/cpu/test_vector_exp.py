"""The float32 vector exp (codegen/simd.py) against numpy on every x86 ISA this machine runs, including the edges,
and the fused softmax program (every stage inside the output's row loop) against numpy."""
import numpy as np
import pytest

import ansorc
from ansorc import te, workloads
from ansorc.codegen.target import host_isas
from ansorc.ir.schedule.state import State
from ansorc.ir.schedule.steps import Annotate, ComputeAt, Split
from tests.kernel_text import body_of

X86 = [isa for isa in host_isas() if isa in ("avx512", "avx2")]
pytestmark = pytest.mark.skipif(not X86, reason="the vector exp is x86 only")

EDGES = [-np.inf, -1000.0, -88.0, -87.5, -87.0, -86.0, -20.0, -1e-30, 0.0, 1e-30, 0.5, 1.0, 20.0, 80.0, 88.0,
         88.7, 88.75, 1000.0, np.inf, np.nan]


def _exp_kernel(n: int, isa: str):
    a = te.placeholder((n,), "float32", "a")
    b = te.compute((n,), lambda i: te.exp(a[i]), name="b")
    st = State.initial(ansorc.ComputeDAG([a, b])).apply(Annotate("b", "i", "vectorize"))
    return ansorc.build([a, b], st, target=isa, name=f"vexp_{isa}")


@pytest.mark.parametrize("isa", X86)
def test_vector_exp_matches_numpy(isa):
    rng = np.random.default_rng(0)
    x = np.concatenate([np.array(EDGES, np.float32), rng.uniform(-90, 89, 4076).astype(np.float32)])
    kern = _exp_kernel(x.size, isa)
    assert "ansorc_exp_m" in kern.source
    out = ansorc.empty(x.shape)
    kern(ansorc.array(x), out)
    with np.errstate(over="ignore"):
        want = np.exp(x.astype(np.float64))
    finite = np.isfinite(want) & (want < 3.4e38)
    np.testing.assert_allclose(out[finite], want[finite], rtol=1.2e-7, atol=3e-38)   # measured: 7.5e-8
    assert np.isnan(out[np.isnan(x)]).all()
    assert (out[x == np.inf] == np.inf).all() and (out[x == 1000.0] == np.inf).all()
    assert (out[x == -np.inf] == 0).all() and (out[x == -1000.0] == 0).all()


def test_softmax_with_every_stage_inside_the_row_loop():
    tensors = workloads.sfm(16, 96)
    dag = ansorc.ComputeDAG(tensors)
    st = State.initial(dag)
    for red in ("row_max", "row_sum"):
        st = st.apply(Split(red, "k", (16,)))
    for name in ("row_sum", "exp", "row_max"):     # exp and row_max are not read by softmax itself
        st = st.apply(ComputeAt(name, "softmax", "i"))
    st = st.apply(Annotate("softmax", "i", "parallel")).apply(Annotate("exp", "j", "vectorize"))
    st = st.apply(Annotate("softmax", "j", "vectorize"))
    kern = ansorc.build(tensors, st, name="sfm_fused")
    assert "ansorc_workspace_take" not in body_of(kern.source, "sfm_fused")   # no heap intermediate
    a = np.random.default_rng(1).standard_normal((16, 96)).astype(np.float32) * 4
    out = ansorc.empty((16, 96))
    kern(ansorc.array(a), out)
    e = np.exp(a - a.max(1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)
