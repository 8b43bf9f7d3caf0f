"""ONNX Gather / GatherElements lowered to te (ansorc/net/ops/gather.py), checked with the numpy evaluator against
numpy's take / take_along_axis (ONNX's own reference formulas)."""
import numpy as np
import pytest

from ansorc import te
from ansorc.ir.program.evaluate import EvaluateError, evaluate
from ansorc.ir.program.expr import CheckedIndex, walk
from ansorc.net.network import NetError, UnsupportedError
from ansorc.net.ops.common import LowerContext, Node
from ansorc.net.ops.gather import OPS
from ansorc.net.ops import SUPPORT


def node(op, data_shape, idx_shape, out_shape, axis=None, dtype="float32", idx_dtype="int64"):
    attrs = {} if axis is None else {"axis": axis}
    return Node(op, "g1", attrs, (tuple(data_shape), tuple(idx_shape)), (dtype, idx_dtype), (tuple(out_shape),),
                (dtype,), model="m")


def lower(n, data, idx, runtime_data=True, runtime_idx=True):
    """Lower with each input either a te placeholder (run time) or the array itself (constant); evaluate."""
    ctx = LowerContext()
    feeds = {}
    ins = []
    for arr, runtime, name in ((data, runtime_data, "data"), (idx, runtime_idx, "idx")):
        if runtime:
            t = te.placeholder(arr.shape if arr.ndim else (1,), str(arr.dtype), name=name)
            feeds[name] = arr.reshape(t.shape)
            ins.append(t)
        else:
            ins.append(arr)
    [out] = OPS[n.op_type].lower(n, ins, ctx)
    if isinstance(out, np.ndarray):
        return out, out
    feeds.update(ctx.weights)
    got = evaluate(out, feeds)[out.name]
    return out, got.reshape(n.out_shapes[0])


MODES = [(True, True), (True, False), (False, True), (False, False)]


@pytest.mark.parametrize("runtime", MODES)
@pytest.mark.parametrize("axis,idx", [(0, [0, 1, 3]), (1, [[0, 1], [1, 2]]), (-1, [1, 0, 1]), (0, [-1, -5, 2]),
                                      (2, [[2, 2, 0]]), (0, [4, 0, 3, 1])])
def test_gather_matches_numpy_take(axis, idx, runtime):
    rng = np.random.default_rng(0)
    data = rng.standard_normal((5, 4, 3)).astype(np.float32)
    idx = np.array(idx, dtype=np.int64)
    ref = np.take(data, idx, axis=axis)
    _, got = lower(node("Gather", data.shape, idx.shape, ref.shape, axis), data, idx, *runtime)
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("runtime_idx", [True, False])
def test_gather_scalar_index_drops_the_axis(runtime_idx):
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    idx = np.array(-2, dtype=np.int64)
    ref = np.take(data, idx, axis=1)
    out, got = lower(node("Gather", data.shape, (), ref.shape, 1), data, idx, True, runtime_idx)
    assert out.shape == (2, 4)
    np.testing.assert_array_equal(got, ref)


def test_gather_of_a_vector_by_a_scalar_is_rank_0_held_as_shape_1():
    data = np.array([3, 5, 7], dtype=np.int32)
    out, got = lower(node("Gather", (3,), (), (), 0, dtype="int32", idx_dtype="int32"), data,
                     np.array(2, dtype=np.int32))
    assert out.shape == (1,) and got.reshape(()) == 7


def test_constant_indices_that_step_evenly_need_no_run_time_check():
    data = np.random.default_rng(1).standard_normal((6, 2)).astype(np.float32)
    for idx in ([5, 3, 1], [2], 4):
        idx = np.array(idx)
        out, got = lower(node("Gather", data.shape, idx.shape, np.take(data, idx, 0).shape, 0), data, idx,
                         runtime_idx=False)
        assert not any(isinstance(n, CheckedIndex) for n in walk(out.op.body))
        np.testing.assert_array_equal(got, np.take(data, idx, 0))


def test_run_time_indices_are_checked_and_out_of_range_fails_naming_the_tensor():
    data = np.zeros((4, 2), np.float32)
    idx = np.array([1, 4])
    with pytest.raises(EvaluateError, match=r"index 4 out of range in data \(expected 0\.\.3\)"):
        lower(node("Gather", data.shape, idx.shape, (2, 2), 0), data, idx)
    with pytest.raises(EvaluateError, match=r"index -1 out of range"):  # -5 wraps to -1: still outside
        lower(node("Gather", data.shape, idx.shape, (2, 2), 0), data, np.array([0, -5]))


def test_constant_indices_out_of_range_fail_at_import_naming_node_and_model():
    data = np.zeros((4, 2), np.float32)
    for runtime_data in (True, False):
        with pytest.raises(NetError, match=r"node 'g1' \(Gather\) of model 'm': index 7 is out of range for axis 0 "
                                           r"of size 4"):
            lower(node("Gather", data.shape, (2,), (2, 2), 0), data, np.array([1, 7]), runtime_data, False)


def test_bad_axis_and_index_dtype_are_one_line_errors():
    data = np.zeros((4, 2), np.float32)
    with pytest.raises(NetError, match="axis 2 is out of range for data of rank 2"):
        lower(node("Gather", data.shape, (2,), (2, 2), 2), data, np.array([0, 1]))
    for runtime_idx in (True, False):
        with pytest.raises(UnsupportedError, match="indices of dtype float32"):
            lower(node("Gather", data.shape, (2,), (2, 2), 0), data, np.array([0.0, 1.0], np.float32),
                  runtime_idx=runtime_idx)


@pytest.mark.parametrize("runtime", MODES)
@pytest.mark.parametrize("axis,idx", [(1, [[0, 0], [1, 0]]), (0, [[1, 2, 0], [2, 0, 0]]), (0, [[-1, 0, -3]]),
                                      (-1, [[2], [0], [1]])])
def test_gather_elements_matches_take_along_axis(axis, idx, runtime):
    data = np.arange(9, dtype=np.float32).reshape(3, 3) * 1.5
    idx = np.array(idx, dtype=np.int64)
    ref = np.empty(idx.shape, np.float32)
    for at in np.ndindex(*idx.shape):  # ONNX: out[i][j] = data[idx[i][j]][j] (axis 0), data[i][idx[i][j]] (axis 1)
        src = list(at)
        src[axis] = idx[at] % 3
        ref[at] = data[tuple(src)]
    _, got = lower(node("GatherElements", data.shape, idx.shape, ref.shape, axis), data, idx, *runtime)
    np.testing.assert_array_equal(got, ref)


def test_gather_elements_rejects_indices_larger_than_data_off_the_axis():
    with pytest.raises(NetError, match="do not fit data of shape"):
        lower(node("GatherElements", (2, 2), (3, 2), (3, 2), 1), np.zeros((2, 2), np.float32),
              np.zeros((3, 2), np.int64))


def test_gather_is_in_the_support_table():
    assert SUPPORT["Gather"] is OPS["Gather"] and "axis" in SUPPORT["Gather"].attrs
    assert "int64" in OPS["Gather"].dtypes and "GatherElements" in SUPPORT


@pytest.mark.slow
def test_onnx_backend_node_cases_for_gather():
    """ONNX's own node test cases (built in memory by onnx 1.23), lowered with run-time inputs."""
    import warnings

    from onnx.backend.test.case.node import collect_testcases
    from onnx.numpy_helper import to_array
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = [c for c in collect_testcases() if c.name.startswith(("test_gather_", "test_gather_elements"))
                 and "gathernd" not in c.name]
    assert len(cases) >= 7
    for case in cases:
        [n] = case.model.graph.node
        axis = next((a.i for a in n.attribute if a.name == "axis"), None)
        for inputs, outputs in case.data_sets:
            data, idx = (x if isinstance(x, np.ndarray) else to_array(x) for x in inputs)
            ref = outputs[0] if isinstance(outputs[0], np.ndarray) else to_array(outputs[0])
            nd = node(n.op_type, data.shape, idx.shape, ref.shape, axis, str(data.dtype), str(idx.dtype))
            _, got = lower(nd, data, idx)
            np.testing.assert_array_equal(got, ref, err_msg=case.name)
