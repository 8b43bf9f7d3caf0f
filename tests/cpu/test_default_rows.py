"""Default schedules of row-wise chains over several leading axes (search/default_rows.py): an attention
softmax (batch, heads, queries) x keys is computed row by row in one parallel loop, its reductions in vector
accumulators, with a guarded last piece where no piece divides the row."""
import ansorc
from ansorc import te
from ansorc.search.default_schedule import default_cpu_schedule

from .helpers import check_kernel
from .test_default_schedule import AVX2, annotations


def test_an_attention_softmax_fuses_its_rows_over_all_leading_axes():
    # (batch, heads, queries) x keys, as ONNX models write attention: the rows are the fused leading axes
    x = te.placeholder((2, 3, 16, 64), name="x")
    k1, k2 = te.reduce_axis((0, 64), "k1"), te.reduce_axis((0, 64), "k2")
    mx = te.compute((2, 3, 16), lambda b, h, i: te.max(x[b, h, i, k1], axis=k1), name="y_max")
    ex = te.compute(x.shape, lambda b, h, i, j: te.exp(x[b, h, i, j] - mx[b, h, i]), name="y_exp")
    sm = te.compute((2, 3, 16), lambda b, h, i: te.sum(ex[b, h, i, k2], axis=k2), name="y_sum")
    y = te.compute(x.shape, lambda b, h, i, j: ex[b, h, i, j] / sm[b, h, i], name="y")
    state = default_cpu_schedule(ansorc.ComputeDAG([x, y]), hw=AVX2)
    assert annotations(state, "parallel") == [("y", "b@h@i")]
    assert {s.name for s in state.stages if s.compute_at == "attached"} >= {"y_max.rf", "y_exp", "y_sum.rf"}
    check_kernel([x, y], state, rtol=1e-5, atol=1e-6)


def test_rows_no_vector_piece_divides_reduce_in_vectors_with_a_guarded_last_piece():
    # ViT's softmax over 197 keys: the guarded piece's reads are masked loads (ir/passes/masks.py)
    x = te.placeholder((4, 12, 197), name="x")
    k1, k2 = te.reduce_axis((0, 197), "k1"), te.reduce_axis((0, 197), "k2")
    mx = te.compute((4, 12), lambda b, i: te.max(x[b, i, k1], axis=k1), name="y_max")
    ex = te.compute(x.shape, lambda b, i, j: te.exp(x[b, i, j] - mx[b, i]), name="y_exp")
    sm = te.compute((4, 12), lambda b, i: te.sum(ex[b, i, k2], axis=k2), name="y_sum")
    y = te.compute(x.shape, lambda b, i, j: ex[b, i, j] / sm[b, i], name="y")
    state = default_cpu_schedule(ansorc.ComputeDAG([x, y]), hw=AVX2)
    assert {("y_max.rf", "k1.1.v"), ("y_sum.rf", "k2.1.v")} <= set(annotations(state, "vectorize"))
    check_kernel([x, y], state, rtol=1e-5, atol=1e-6)
