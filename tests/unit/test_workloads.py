"""The benchmark table and the structure of each workload's graph (numerics are in test_evaluate.py)."""
import pytest

from ansorc import workloads as W
from ansorc.ir.program.te import ComputeOp, PlaceholderOp

NAMES = ["GMM", "C1D", "C2D", "C3D", "GRP", "DIL", "DEP", "T2D", "CAP", "NRM", "CBR", "TBG", "SFM"]


def conv_out(size, k, s, p, d=1):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def expected_output_shape(name, a):
    """Output shapes straight from workloads.md."""
    if name == "GMM":
        return (a[0], a[1], a[2])
    if name == "C1D":
        return (a[0], conv_out(a[1], a[4], a[5], a[6]), a[3])
    if name in ("C2D", "GRP", "DIL", "CBR"):
        d = 2 if name == "DIL" else 1
        return (a[0], conv_out(a[1], a[5], a[6], a[7], d), conv_out(a[2], a[5], a[6], a[7], d), a[4])
    if name == "C3D":
        return (a[0],) + tuple(conv_out(x, a[6], a[7], a[8]) for x in a[1:4]) + (a[5],)
    if name == "DEP":
        return (a[0], conv_out(a[1], a[4], a[5], a[6]), conv_out(a[2], a[4], a[5], a[6]), a[3])
    if name == "T2D":
        return (a[0], (a[1] - 1) * a[6] - 2 * a[7] + a[5], (a[2] - 1) * a[6] - 2 * a[7] + a[5], a[4])
    if name == "CAP":
        return (a[0], conv_out(a[1], a[5], a[6], a[7]), conv_out(a[2], a[5], a[6], a[7]), 4, 4, a[4])
    if name == "NRM":
        return (a[0],)
    if name == "TBG":
        return (a[0], a[2], a[1], a[1])
    if name == "SFM":
        return a
    raise AssertionError(name)


def compute_ops(tensors):
    seen, stack = {}, [t.op for t in tensors]
    while stack:
        op = stack.pop()
        if isinstance(op, ComputeOp) and op.name not in seen:
            seen[op.name] = op
            stack.extend(t.op for t in op.inputs)
    return seen


def test_table_has_every_benchmark_with_four_shapes():
    assert list(W.WORKLOADS) == NAMES
    for name, (fn, shapes) in W.WORKLOADS.items():
        assert callable(fn) and len(shapes) == 4 and len(set(shapes)) == 4, name
    assert W.WORKLOADS["GMM"][1][0] == (1, 128, 128, 128)
    assert W.WORKLOADS["DIL"][1] == W.WORKLOADS["C2D"][1]
    assert W.WORKLOADS["T2D"][1][3] == (1, 32, 32, 64, 3, 4, 2, 1)
    assert W.WORKLOADS["SFM"][1][3] == (2048, 2048)


@pytest.mark.parametrize("name", NAMES)
def test_every_shape_builds_with_inputs_then_output(name):
    fn, shapes = W.WORKLOADS[name]
    for args in shapes:
        ts = fn(*args)
        assert all(isinstance(t.op, PlaceholderOp) for t in ts[:-1]), name
        assert isinstance(ts[-1].op, ComputeOp) and ts[-1].dtype == "float32"
        assert ts[-1].shape == expected_output_shape(name, args), (name, args)
        assert len({t.name for t in ts}) == len(ts)
        # every placeholder the output depends on is an argument, and every argument is used
        ops = compute_ops(ts[-1:])
        used = {t.name for op in ops.values() for t in op.inputs if isinstance(t.op, PlaceholderOp)}
        assert used == {t.name for t in ts[:-1]}


def test_argument_names_and_stages():
    assert [t.name for t in W.gmm(1, 2, 3, 4)] == ["A", "B", "C"]
    assert [t.name for t in W.matmul_relu(2, 3, 4)] == ["A", "B", "relu"]
    ts = W.c2d(1, 8, 8, 3, 4, 3, 1, 1)
    assert [t.name for t in ts] == ["data", "kernel", "conv"] and set(compute_ops(ts)) == {"pad", "conv"}
    assert set(compute_ops(W.c2d(1, 8, 8, 3, 4, 1, 1, 0))) == {"conv"}  # no padding, no pad stage
    ts = W.cbr(1, 8, 8, 3, 4, 3, 1, 1)
    assert [t.name for t in ts] == ["data", "kernel", "bias", "bn_scale", "bn_offset", "relu"]
    assert set(compute_ops(ts)) == {"pad", "conv", "bias_add", "bn_mul", "bn_add", "relu"}
    ts = W.sfm(4, 5)
    assert set(compute_ops(ts)) == {"row_max", "exp", "row_sum", "softmax"}
    assert compute_ops(ts)["row_max"].combiner == "max" and compute_ops(ts)["row_sum"].combiner == "sum"
    ts = W.nrm(2, 3, 4)
    assert set(compute_ops(ts)) == {"sq_sum", "norm"} and [t.name for t in ts] == ["A", "norm"]
    ts = W.tbg(1, 8, 2, 4)
    assert [t.name for t in ts] == ["query", "key", "scores"]
    assert set(compute_ops(ts)) == {"query_T", "key_T", "scores"}
    assert compute_ops(ts)["query_T"].shape == (1, 2, 8, 4)


def test_reduce_axes_and_weight_shapes():
    data, kernel, conv = W.grp(1, 8, 8, 16, 8, 3, 1, 1)
    assert kernel.shape == (3, 3, 4, 8) and [a.extent for a in conv.op.reduce_axes] == [3, 3, 4]
    data, kernel, conv = W.dep(1, 8, 8, 6, 3, 2, 1)
    assert kernel.shape == (1, 3, 3, 6) and [a.extent for a in conv.op.reduce_axes] == [3, 3]
    data, kernel, conv = W.cap(1, 8, 8, 5, 6, 3, 1, 1)
    assert data.shape == (1, 8, 8, 4, 4, 5) and kernel.shape == (3, 3, 4, 4, 5, 6)
    assert [a.extent for a in conv.op.reduce_axes] == [3, 3, 4, 5]
    data, kernel, conv = W.c3d(1, 4, 5, 6, 2, 3, 3, 1, 1)
    assert kernel.shape == (3, 3, 3, 2, 3) and conv.shape == (1, 4, 5, 6, 3)
    data, kernel, conv = W.t2d(1, 4, 4, 8, 3, 4, 2, 1)
    assert kernel.shape == (4, 4, 8, 3) and conv.shape == (1, 8, 8, 3)


def test_dtype_and_dilation_keywords():
    assert all(t.dtype == "float64" for t in W.c2d(1, 8, 8, 2, 2, 3, 1, 1, dtype="float64"))
    assert W.gmm(1, 2, 3, 4, dtype="int32")[-1].dtype == "int32"
    assert W.dil(1, 14, 14, 2, 2, 3, 1, 1)[-1].shape == (1, 12, 12, 2)
    assert W.c1d(1, 17, 2, 2, 3, 1, 0, dilation=3)[-1].shape == (1, 11, 2)


def test_invalid_parameters_raise():
    with pytest.raises(ValueError, match="groups"):
        W.grp(1, 8, 8, 6, 8, 3, 1, 1)
    with pytest.raises(ValueError, match="no output"):
        W.c2d(1, 2, 2, 1, 1, 5, 1, 0)
    with pytest.raises(ValueError, match="no output"):
        W.t2d(1, 1, 1, 1, 1, 2, 1, 1)
    with pytest.raises(KeyError, match="unknown workload"):
        W.smallest("XYZ")


def test_smallest_and_make():
    for name in NAMES:
        fn, shapes = W.WORKLOADS[name]
        args = W.smallest_args(name)
        assert args in shapes and W.work(fn(*args)) == min(W.work(fn(*s)) for s in shapes)
        assert W.smallest(name)[-1].shape == fn(*args)[-1].shape
    assert W.smallest_args("C2D") == (1, 56, 56, 64, 64, 1, 1, 0)
    assert W.smallest_args("T2D") == (1, 32, 32, 64, 3, 4, 2, 1)
    assert W.smallest_args("gmm") == (1, 128, 128, 128)  # case-insensitive
    assert W.make("SFM", 3)[-1].shape == (2048, 2048)
    assert W.make("GMM", 1)[-1].shape == (1, 512, 32)
    assert W.work(W.matmul(4, 5, 6)) == 4 * 5 * 6


def test_low_precision_table_builds_narrow_inputs_and_names_its_weights():
    assert list(W.LOW_PRECISION) == ["GMM-I8", "GMM-BF16", "C2D-I8"]
    assert not set(W.LOW_PRECISION) & set(W.WORKLOADS) and list(W.ALL_WORKLOADS)[-3:] == list(W.LOW_PRECISION)
    for name, (fn, shapes) in W.LOW_PRECISION.items():
        assert len(shapes) == 4
        ts = W.make(name, 0)
        assert {t.dtype for t in ts[:-1]} <= {"uint8", "int8", "bfloat16"}
        assert ts[-1].dtype == ("float32" if name == "GMM-BF16" else "int32")
    assert W.weights(W.make("GMM-I8", 0), "GMM-I8") == ["B"] and W.weights(W.make("GMM", 0), "GMM") == []
    assert W.weights(W.make("C2D-I8", 1), "c2d-i8") == ["kernel"]
    assert W.smallest_args("GMM-BF16") == (128, 128, 128)
