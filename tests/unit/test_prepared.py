"""Constant inputs (ComputeDAG.constants) and prepared stages: the root stages computed from constants alone run
under `if (<buffer>_stale)` on a buffer kept between calls, and the cost model's features leave them out."""
from __future__ import annotations

import pytest

from ansorc.codegen.pipeline import render
from ansorc.ir.program import te
from ansorc.ir.program.dag import ComputeDAG, DagError
from ansorc.ir.lowering.lower import lower
from ansorc.ir.lowering.prepared import MAX_CONSTANTS
from ansorc.ir.schedule.state import State
from ansorc.ir.lowering.stmt import Allocate, IfThenElse, walk_stmt
from ansorc.search.features import extract
from tests.kernel_text import body_of


def _matmul_transposed(n=16, k=32, m=24):
    """C = A @ W through WT, a transposed copy of W (a root stage reading W only), and S = A + 1 (A only)."""
    a = te.placeholder((n, k), name="A")
    w = te.placeholder((k, m), name="W")
    wt = te.compute((m, k), lambda j, r: w[r, j], name="WT")
    r = te.reduce_axis((0, k), name="r")
    c = te.compute((n, m), lambda i, j: te.sum(a[i, r] * wt[j, r], axis=r), name="C")
    return [a, w, c], (a, w, wt, c)


def test_constants_change_the_workload_key_and_only_then():
    tensors, (a, w, _, _) = _matmul_transposed()
    plain = ComputeDAG(tensors)
    assert ComputeDAG(tensors, constants=()).workload_key == plain.workload_key
    by_name, by_tensor = ComputeDAG(tensors, constants=["W"]), plain.with_constants([w])
    assert by_name.workload_key == by_tensor.workload_key != plain.workload_key
    assert ComputeDAG(tensors, constants=["A"]).workload_key not in (plain.workload_key, by_name.workload_key)
    assert by_name.constants == frozenset({"W"})


def test_a_constant_must_be_an_input():
    tensors, _ = _matmul_transposed()
    with pytest.raises(DagError, match="constant 'C' is not an input"):
        ComputeDAG(tensors, constants=["C"])
    with pytest.raises(DagError, match="constant 'Q' is not an input"):
        ComputeDAG(tensors, constants=["Q"])
    many = [te.placeholder((4,), name=f"P{i}") for i in range(MAX_CONSTANTS + 1)]
    out = te.compute((4,), lambda i: sum((p[i] for p in many[1:]), many[0][i]), name="O")
    with pytest.raises(DagError, match=f"at most {MAX_CONSTANTS}"):
        ComputeDAG(many + [out], constants=[p.name for p in many])


def _prepared_ifs(func):
    return [s for s in walk_stmt(func.body) if isinstance(s, IfThenElse) and s.prepare]


def test_the_stage_made_from_constants_alone_is_prepared():
    tensors, _ = _matmul_transposed()
    func = lower(State.initial(ComputeDAG(tensors, constants=["W"])), "k")
    assert func.constants == ("W",) and [b for b, _ in func.prepared] == ["WT"]
    (branch,) = _prepared_ifs(func)
    assert branch.cond.name == func.prepared[0][1]
    scopes = {s.buffer.name: s.buffer.scope for s in walk_stmt(func.body) if isinstance(s, Allocate)}
    assert scopes == {"WT": "prepared"}
    plain = lower(State.initial(ComputeDAG(tensors)), "k")
    assert not plain.prepared and not _prepared_ifs(plain)


def test_stages_reading_a_variable_input_or_written_out_are_not_prepared():
    a = te.placeholder((8, 8), name="A")
    w = te.placeholder((8, 8), name="W")
    mixed = te.compute((8, 8), lambda i, j: a[i, j] * w[j, i], name="M")
    doubled = te.compute((8, 8), lambda i, j: w[i, j] * 2.0, name="D")   # an output: the caller reads it
    out = te.compute((8, 8), lambda i, j: mixed[i, j] + 1.0, name="O")
    func = lower(State.initial(ComputeDAG([a, w, out, doubled], constants=["W"])), "k")
    assert func.prepared == () and not _prepared_ifs(func)


def test_rendered_c_keeps_the_copy_and_exports_constants_changed():
    tensors, _ = _matmul_transposed()
    dag = ComputeDAG(tensors, constants=["W"])
    src = render(dag, State.initial(dag), "mm", "avx2")
    assert src.prepared
    code = src.code
    assert "static ansorc_prepared mm_prepared_0;" in code and "void mm_constants_changed(void)" in code
    assert "ansorc_prepared_take(&mm_prepared_0, 3072u, WT_keys, 1, &WT_stale)" in code
    assert "if (WT_stale) {" in code and "ansorc_workspace_take" not in body_of(code, "mm")
    assert not render(tensors, State.initial(ComputeDAG(tensors)), "mm", "avx2").prepared


def test_a_user_name_does_not_clash_with_the_copies_file_scope_names():
    a = te.placeholder((8, 8), name="mm_prepared_0")
    w = te.placeholder((8, 8), name="mm_constants_changed")
    wt = te.compute((8, 8), lambda i, j: w[j, i], name="T")
    out = te.compute((8, 8), lambda i, j: a[i, j] + wt[i, j], name="O")
    dag = ComputeDAG([a, w, out], constants=[w])
    func = lower(State.initial(dag), "mm")
    assert {b.name for b in func.args}.isdisjoint({"mm_prepared_0", "mm_constants_changed"})


def test_features_leave_out_the_prepared_stage():
    tensors, _ = _matmul_transposed()
    with_constants = extract(lower(State.initial(ComputeDAG(tensors, constants=["W"])), "k", passes=False))
    plain = extract(lower(State.initial(ComputeDAG(tensors)), "k", passes=False))
    assert plain.shape[0] == with_constants.shape[0] + 1   # WT's one store


def test_cuda_targets_refuse_constants_with_one_clear_error():
    import ansorc
    from ansorc.errors import AnsorcError
    tensors, (_, w, _, _) = _matmul_transposed()
    with pytest.raises(AnsorcError, match=r"constant inputs \['W'\]: not supported on CUDA targets yet"):
        ansorc.compile(tensors, trials=0, target="cuda", constants=[w])
