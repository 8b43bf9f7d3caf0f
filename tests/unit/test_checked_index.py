"""CheckedIndex (te.checked_index): a subscript read from data, in range 0..extent-1 or reported at run time.
Every layer: te and bounds, simplify, the numpy evaluator, the workload key, features, the C and CUDA renderers
and the vectorizer."""
import numpy as np
import pytest

from ansorc import te
from ansorc.codegen.c import STATUS_INDEX, codegen_c, status_message
from ansorc.targets.cuda.codegen_cuda import CudaRenderer
from ansorc.errors import ExpressionError
from ansorc.ir.program.bounds import BoundsError
from ansorc.ir.program.dag import ComputeDAG, is_strictly_inlinable
from ansorc.ir.program.evaluate import EvaluateError, evaluate, random_inputs
from ansorc.ir.program.expr import CheckedIndex, Const, Read, Var, walk
from ansorc.ir.lowering.lower import lower
from ansorc.ir.program.simplify import bound, simplify
from ansorc.ir.schedule.state import State
from ansorc.ir.schedule.steps import Annotate
from ansorc.ir.lowering.stmt import Buffer, For, PrimFunc, Store
from ansorc.ir.passes.verify import VerifyError, verify
from ansorc.ir.passes.vector import VLanes, VLoad, vwalk, walk_all, top_exprs
from ansorc.ir.passes.vectorize import vectorize_loops
from ansorc.codegen import simd
from ansorc.search.features import extract
from ansorc.search.features_access import _lin


def gather(n=5, rows=4, cols=16, dtype="int64", name="A"):
    A = te.placeholder((n, cols), name=name)
    B = te.placeholder((rows,), dtype=dtype, name="B")
    G = te.compute((rows, cols), lambda i, j: A[te.checked_index(B[i], n), j], name="G")
    return A, B, G


# ----------------------------------------------------------------------------- te and bounds

def test_checked_index_takes_an_integer_and_a_positive_extent():
    B = te.placeholder((3,), dtype="int32", name="B")
    F = te.placeholder((3,), name="F")
    assert isinstance(te.checked_index(B[0], 4), CheckedIndex)
    with pytest.raises(ExpressionError, match="integer index"):
        te.checked_index(F[0], 4)
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ExpressionError, match="positive int32 extent"):
            te.checked_index(B[0], bad)


def test_a_read_indexed_by_data_needs_a_checked_index():
    A = te.placeholder((5,), name="A")
    B = te.placeholder((4,), dtype="int32", name="B")
    with pytest.raises(BoundsError, match=r"cannot be proven .*use te.checked_index\(e, 5\) for an index read"):
        te.compute((4,), lambda i: A[B[i]], name="bad")
    te.compute((4,), lambda i: A[te.checked_index(B[i], 5)], name="ok")
    with pytest.raises(BoundsError, match="ranges over 0..5, outside 0..4"):
        te.compute((4,), lambda i: A[te.checked_index(B[i], 6)], name="wide")
    with pytest.raises(BoundsError, match="ranges over 1..5"):
        te.compute((4,), lambda i: A[te.checked_index(B[i], 5) + 1], name="shifted")
    with pytest.raises(BoundsError, match="B"):  # the read of the index tensor itself is checked as usual
        te.compute((5,), lambda i: A[te.checked_index(B[i], 5)], name="short")


# ----------------------------------------------------------------------------- simplify

def test_bound_is_the_extent_and_only_a_constant_in_range_folds():
    c = CheckedIndex(Var("x"), 7)
    assert bound(c, {}) == (0, 6)
    assert bound(c * 3 + 1, {}) == (1, 19)
    assert simplify(CheckedIndex(Const(4), 7)) == Const(4)
    assert isinstance(simplify(CheckedIndex(Const(9), 7)), CheckedIndex)     # stays: the kernel must report it
    assert isinstance(simplify(c, {"x": (0, 3)}), CheckedIndex)              # data may change: never folded
    assert simplify(CheckedIndex(Var("x") + 0, 7)) == c                     # its operand is simplified


# ----------------------------------------------------------------------------- evaluator

def test_evaluator_matches_numpy_fancy_indexing():
    A, B, G = gather()
    rng = np.random.default_rng(0)
    a = rng.standard_normal((5, 16)).astype(np.float32)
    b = rng.integers(0, 5, 4)
    np.testing.assert_array_equal(evaluate(G, {"A": a, "B": b})["G"], a[b])


def test_evaluator_names_the_tensor_the_index_and_the_range():
    A, B, G = gather(name="table")
    with pytest.raises(EvaluateError, match=r"index -3 out of range in table \(expected 0\.\.4\)"):
        evaluate(G, {"table": np.zeros((5, 16), np.float32), "B": np.array([0, 1, -3, 2])})


def test_evaluator_ignores_a_bad_index_in_a_lane_that_is_never_read():
    A = te.placeholder((5,), name="A")
    B = te.placeholder((4,), dtype="int32", name="B")
    G = te.compute((4,), lambda i: te.if_then_else(B[i] < 5, A[te.checked_index(B[i], 5)], -1.0), name="G")
    a = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(evaluate(G, {"A": a, "B": np.array([4, 9, 0, 7])})["G"], [4, -1, 0, -1])


def test_random_inputs_draw_index_tensors_in_range():
    A = te.placeholder((3, 4), name="A")
    B = te.placeholder((64,), dtype="int64", name="B")
    C = te.placeholder((64,), dtype="int32", name="C")
    G = te.compute((64, 4), lambda i, j: A[te.checked_index(B[i] - 1, 3), j]
                   + A[te.checked_index(te.if_then_else(C[i] < 0, C[i] + 3, C[i]), 3), j], name="G")
    x = random_inputs([A, B, C, G], seed=1)
    assert set(np.unique(x["B"])) == {1, 2, 3} and set(np.unique(x["C"])) == {0, 1, 2}
    evaluate(G, x)  # no index error
    a, m = te.placeholder((4, 4), name="a"), te.placeholder((4,), dtype="int32", name="m")
    plain = te.compute((4, 4), lambda i, j: a[i, j] * m[j].astype("float32"), name="p")
    both, only = random_inputs([a, m, plain], seed=3), random_inputs([a, m], seed=3)
    assert all(np.array_equal(both[k], only[k]) for k in only)  # other graphs draw exactly as before


def test_a_gather_is_inlinable_like_a_copy():
    A, B, G = gather()
    assert is_strictly_inlinable(G.op)
    C = te.placeholder((4, 4), name="C")
    R = te.compute((4, 16), lambda i, j: A[te.checked_index(B[i], 5), (j * 3) % 16] + C[i % 4, i % 4], name="R")
    assert not is_strictly_inlinable(R.op)  # the other subscripts still count


# ----------------------------------------------------------------------------- workload key, features

def test_the_extent_is_part_of_the_workload_key_and_names_are_not():
    k1 = ComputeDAG(list(gather(n=5))).workload_key
    assert ComputeDAG(list(gather(n=5, name="other"))).workload_key == k1
    A = te.placeholder((5, 16), name="A")
    B = te.placeholder((4,), dtype="int64", name="B")
    G = te.compute((4, 16), lambda i, j: A[te.checked_index(B[i], 4), j], name="G")  # same shapes, other extent
    assert ComputeDAG([A, B, G]).workload_key != k1


def test_features_see_a_non_affine_access_bounded_by_the_extent_and_the_index_read():
    c = CheckedIndex(Var("i"), 5)
    assert _lin(c) == ({}, (({"i": 1.0}, 4.0),))
    A, B, G = gather()
    rows = extract(lower(State.initial(ComputeDAG([A, B, G])), "g", passes=False))
    assert rows.shape[0] == 1 and np.isfinite(rows).all()
    A2 = te.placeholder((5, 16), name="A")
    plain = te.compute((4, 16), lambda i, j: A2[i, j], name="G")
    assert not np.array_equal(rows, extract(lower(State.initial(ComputeDAG([A2, plain])), "g", passes=False)))


# ----------------------------------------------------------------------------- C, CUDA

def test_c_reports_each_indexed_tensor_with_its_own_status():
    A, B, G = gather()
    C = te.placeholder((3, 16), name="C")
    H = te.compute((4, 16), lambda i, j: G[i, j] + C[te.checked_index(B[3 - i] + 1, 3), j], name="H")
    src = codegen_c(lower(State.initial(ComputeDAG([A, B, C, H])), "gh"), "generic")
    assert src.code.count("ansorc_checked_index(") >= 3 and "__atomic_store_n" in src.code
    # the meanings are data on the Source; the C says the same in comments, for its readers
    assert src.statuses == ((STATUS_INDEX, "index out of range in A"), (STATUS_INDEX + 1, "index out of range in C"))
    assert "/* ansorc_status gh 3: index out of range in C */" in src.code
    assert status_message(STATUS_INDEX, src.statuses) == "index out of range in A"
    assert status_message(STATUS_INDEX + 1, src.statuses) == "index out of range in C"
    assert status_message(STATUS_INDEX) == "index out of range"
    assert status_message(1) == "workspace allocation failed"
    assert "\n".join(text for _, text in src.parts) == src.code


def test_programs_without_checked_indices_keep_their_c():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] * 2.0, name="B")
    code = codegen_c(lower(State.initial(ComputeDAG([A, B])), "k"), "generic").code
    assert "ansorc_checked_index" not in code and "ANSORC_CHECKED_INDEX" not in code


def test_cuda_clamps_a_checked_index():
    A, B, G = gather()
    r = CudaRenderer(lower(State.initial(ComputeDAG([A, B, G])), "g"), 32)
    out = r.expr(CheckedIndex(Var("x"), 5))
    assert out == "ansorc_clamp_index(x, 5)"


# ----------------------------------------------------------------------------- vectorizer

def _vectorized(G, dag, isa="avx2"):
    st = State.initial(dag)
    st = st.apply(Annotate("G", st.stage("G").iters[-1].name, "vectorize"))
    return vectorize_loops(lower(st, "g", passes=False), simd.caps(isa))


def _nodes(func):
    return [n for s in walk_all(func.body) for e in top_exprs(s) for n in vwalk(e)]


def test_a_gathered_row_is_one_contiguous_load_behind_a_scalar_check():
    A, B, G = gather(cols=16)
    loads = [n for n in _nodes(_vectorized(G, ComputeDAG([A, B, G]))) if isinstance(n, VLoad) and n.buffer == "A"]
    assert loads and all(any(isinstance(x, CheckedIndex) for x in walk(ld.index)) for ld in loads)


def test_an_index_that_changes_with_the_lane_is_checked_per_lane():
    A = te.placeholder((5,), name="A")
    B = te.placeholder((16,), dtype="int32", name="B")
    G = te.compute((16,), lambda j: A[te.checked_index(B[j], 5)], name="G")
    nodes = _nodes(_vectorized(G, ComputeDAG([A, B, G])))
    assert not [n for n in nodes if isinstance(n, VLoad) and n.buffer == "A"]
    lanes = [n for n in nodes if isinstance(n, VLanes)]
    assert lanes and sum(isinstance(x, CheckedIndex) for n in lanes for e in n.elems for x in walk(e)) >= 8


# ----------------------------------------------------------------------------- verifier

def _func(extent: int) -> PrimFunc:
    args = (Buffer("A", (5,), "float32", "arg"), Buffer("B", (4,), "int32", "arg"), Buffer("G", (4,), "float32", "arg"))
    idx = CheckedIndex(Read("B", (Var("i"),), "int32"), extent)
    return PrimFunc("k", args, 2, For("i", 4, "serial", Store("G", (Var("i"),), Read("A", (idx,), "float32"))))


def test_the_verifier_bounds_a_checked_index_by_its_extent():
    verify(_func(5))
    with pytest.raises(VerifyError, match="check_in_bounds"):
        verify(_func(6))


def test_lowered_and_vectorized_gathers_pass_the_verifier():
    A, B, G = gather(cols=16)
    verify(_vectorized(G, ComputeDAG([A, B, G])))
