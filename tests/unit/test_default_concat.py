"""The default program inlines a Concat into the element-wise stages that read it (search/default_loops.py
concat_into_elementwise), and only there: padding is no concat, and a reduction reading a concat keeps it
materialized (inlined, the select chain would run once per reduction step)."""
from ansorc import te
from ansorc.ir.program.dag import ComputeDAG
from ansorc.ir.schedule.steps import ComputeInline
from ansorc.search.default_schedule import default_cpu_schedule


def concat(widths=(64, 32, 16)):
    xs = [te.placeholder((2, 5, w), name=f"x{k}") for k, w in enumerate(widths)]
    offsets = [sum(widths[:k]) for k in range(len(widths) + 1)]

    def body(i, j, c):
        out = te.const(0.0, "float32")
        for k in reversed(range(len(xs))):
            conds = ([c >= offsets[k]] if k else []) + ([c < offsets[k + 1]] if k < len(xs) - 1 else [])
            here = xs[k][i, j, c - offsets[k]]
            out = te.if_then_else(te.all(*conds), here, out) if conds else here
        return out
    return xs, te.compute((2, 5, offsets[-1]), body, name="cat")


def inlined(tensors) -> set:
    state = default_cpu_schedule(ComputeDAG(tensors), "avx2")
    return {s.stage for s in state.steps if isinstance(s, ComputeInline)}


def test_a_concat_read_by_an_element_wise_stage_is_inlined():
    xs, cat = concat()
    relu = te.compute(cat.shape, lambda i, j, c: te.max(cat[i, j, c] * 0.5, 0.0), name="relu")
    assert "cat" in inlined([*xs, relu])


def test_padding_and_a_concat_under_a_reduction_stay_materialized():
    x = te.placeholder((2, 5, 30), name="x")
    pad = te.compute((2, 5, 32), lambda i, j, c: te.if_then_else(c < 30, x[i, j, c], 0.0), name="pad")
    doubled = te.compute(pad.shape, lambda i, j, c: pad[i, j, c] * 2.0, name="doubled")
    assert "pad" not in inlined([x, doubled])
    xs, cat = concat()
    k = te.reduce_axis((0, cat.shape[2]), "k")
    total = te.compute((2, 5), lambda i, j: te.sum(cat[i, j, k], axis=k), name="total")
    assert "cat" not in inlined([*xs, total])
