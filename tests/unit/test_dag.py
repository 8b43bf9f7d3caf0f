"""ComputeDAG: golden workload keys, flop counts, and the access analyses the sketch rules use."""
import pytest

from ansorc import ComputeDAG, te, workloads
from ansorc.ir.program.dag import (DagError, has_single_elementwise_consumer, is_strictly_inlinable,
                                   needs_multi_level_tiling, needs_rfactor)

# Golden keys: a change here means every existing tuning log stops matching. Only change them on purpose.
GOLDEN_KEYS = {
    "matmul64": (lambda: workloads.matmul(64, 64, 64), "88456a1c41dc1a8d7081d1f82b855240"),
    "c2d_small": (lambda: workloads.c2d(1, 14, 14, 16, 32, 3, 1, 1), "ba9c6c7619027e76b4717a2f835b1cfd"),
    "sfm256": (lambda: workloads.sfm(256, 256), "4ea76b92dda821af1ec3848b8fa95412"),
}


@pytest.mark.parametrize("name", sorted(GOLDEN_KEYS))
def test_golden_workload_keys(name):
    make, key = GOLDEN_KEYS[name]
    assert ComputeDAG(make()).workload_key == key


def test_key_ignores_names_but_not_shapes_or_math():
    def mm(n, a="A", b="B", c="C", add=False):
        A, B = te.placeholder((n, n), name=a), te.placeholder((n, n), name=b)
        k = te.reduce_axis((0, n), name="kk")
        body = (lambda i, j: te.sum(A[i, k] * B[k, j] + 1.0, axis=k)) if add else \
            (lambda i, j: te.sum(A[i, k] * B[k, j], axis=k))
        return [A, B, te.compute((n, n), body, name=c)]
    base = ComputeDAG(mm(64)).workload_key
    assert ComputeDAG(mm(64, "X", "Y", "Z")).workload_key == base
    assert ComputeDAG(mm(32)).workload_key != base
    assert ComputeDAG(mm(64, add=True)).workload_key != base


def test_flops():
    assert ComputeDAG(workloads.matmul(64, 32, 16)).flop_count == 2 * 64 * 32 * 16
    dag = ComputeDAG(workloads.c2d(1, 14, 14, 16, 32, 3, 1, 1))
    assert dag.flop_count == 2 * 14 * 14 * 32 * 3 * 3 * 16  # padding has no arithmetic


def test_analyses():
    A, B, R = workloads.matmul_relu(64, 64, 64)
    dag = ComputeDAG([A, B, R])
    C = dag.op_by_name["C"]
    assert needs_multi_level_tiling(C) and not needs_multi_level_tiling(R.op)
    assert is_strictly_inlinable(R.op) and not is_strictly_inlinable(C)
    assert has_single_elementwise_consumer(dag, C) == "relu"
    assert not needs_rfactor(C, 2)
    nrm = ComputeDAG(workloads.nrm(1, 256, 256))
    assert needs_rfactor(nrm.op_by_name["sq_sum"], 2)
    pad = ComputeDAG(workloads.c2d(1, 8, 8, 4, 4, 3, 1, 1)).op_by_name["pad"]
    assert not is_strictly_inlinable(pad)  # has a select


def test_bad_graphs_are_clear_errors():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    with pytest.raises(DagError, match="not in the argument list"):
        ComputeDAG([B])
    A2 = te.placeholder((4,), name="A")
    C = te.compute((4,), lambda i: A[i] + A2[i], name="C")
    with pytest.raises(DagError, match="both named 'A'"):
        ComputeDAG([A, A2, C])


def test_integer_multiply_accumulates_count_as_operations():
    """Issue 53: an int8 GEMM counted 0 FLOPs (so no parallel loop by default, no scheduler weight)."""
    from ansorc import workloads
    from ansorc.search.default_schedule import default_cpu_schedule
    m, n, k = 64, 48, 37
    assert ComputeDAG(workloads.matmul_u8s8(m, n, k)).flop_count == 2 * m * n * k
    assert ComputeDAG(workloads.matmul(m, n, k)).flop_count == 2 * m * n * k
    # the pad stage's bounds tests and the strided subscripts are addressing, not work
    conv = ComputeDAG(workloads.conv2d_u8s8(1, 14, 14, 16, 32, 3, 2, 1))
    assert conv.flop_count == 2 * 7 * 7 * 32 * 3 * 3 * 16
    dag = ComputeDAG(workloads.matmul_u8s8(256, 256, 256), constants=["B"])
    assert "parallel" in str(default_cpu_schedule(dag, "avx2"))


def test_integer_work_is_reported_in_operations_not_flops():
    from ansorc import workloads
    assert ComputeDAG(workloads.matmul_u8s8(32, 32, 32)).rate_unit == "GOP/s"
    assert ComputeDAG(workloads.conv2d_u8s8(1, 8, 8, 4, 8, 3, 1, 1)).rate_unit == "GOP/s"
    assert ComputeDAG(workloads.matmul(32, 32, 32)).rate_unit == "GFLOP/s"
    assert ComputeDAG(workloads.matmul_bf16(32, 32, 32)).rate_unit == "GFLOP/s"
