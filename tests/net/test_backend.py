"""The onnx backend: executors (default, per call, per class, module-wide), run-time binding of parameter inputs,
`supported`, devices."""
import functools

import numpy as np
import pytest
from onnx import TensorProto, helper

from ansorc.net import backend
from ansorc.net.backend import AnsorcBackend, backend_with, reference, supported
from ansorc.net.network import NetError

from .mini_ops import TABLE
from .test_importer import model, vi

MINI = functools.partial(reference, table=TABLE)


def relu_model():
    return model([helper.make_node("Relu", ["x"], ["y"], name="r")], [vi("x", [2, 3])], [vi("y", [2, 3])])


def test_executor_per_call_and_per_class(rng):
    x = rng.normal(size=(2, 3)).astype(np.float32)
    (y,) = AnsorcBackend.prepare(relu_model(), executor=MINI).run([x])
    np.testing.assert_array_equal(y, np.maximum(x, 0))
    calls = []

    def spy(m):
        calls.append(m.graph.name)
        return MINI(m)
    rep = backend_with(spy).prepare(relu_model())
    np.testing.assert_array_equal(rep.run({"x": x})[0], np.maximum(x, 0))
    assert calls == ["tiny"]


def test_module_default_executor(monkeypatch):
    monkeypatch.setitem(backend._default, "executor", reference)
    backend.set_default_executor(lambda m: (lambda inputs: [inputs[0] * 2]))
    x = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(backend.prepare(relu_model()).run([x])[0], x * 2)


def test_parameter_inputs_bound_at_run_time(rng):
    # y = x + ConstantOfShape(shape): `shape` is a graph input, bound to its value (then folded) at each run
    m = model([helper.make_node("ConstantOfShape", ["shape"], ["c"],
                                value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.5])),
               helper.make_node("Add", ["x", "c"], ["y"])],
              [vi("x", [2, 3]), vi("shape", [1], TensorProto.INT64)], [vi("y", [2, 3])])
    assert backend.param_inputs(m) == ["shape"]
    built = []

    def counting(mm):
        built.append(1)
        return MINI(mm)
    rep = AnsorcBackend.prepare(m, executor=counting)
    x = rng.normal(size=(2, 3)).astype(np.float32)
    for _ in range(2):
        np.testing.assert_allclose(rep.run([x, np.array([3], np.int64)])[0], x + 0.5)
    assert len(built) == 1  # one prepared model per distinct value
    with pytest.raises(NetError, match="takes 2 inputs"):
        rep.run([x])
    with pytest.raises(NetError, match="no value for input 'shape'"):
        rep.run({"x": x})


def test_supported_names_what_is_missing():
    assert supported(relu_model(), TABLE) == (True, "")
    ok, why = supported(relu_model(), {})
    assert not ok and "operator Relu is not supported" in why and "'r'" in why and "'tiny'" in why
    m = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2], TensorProto.UINT8)],
              [vi("y", [2], TensorProto.UINT8)])
    ok, why = supported(m, TABLE)
    assert not ok and "uint8" in why


def test_devices():
    assert AnsorcBackend.supports_device("CPU")
    assert not AnsorcBackend.supports_device("CUDA")


@pytest.mark.slow
def test_compiled_executor_runs_node_tests():
    """The compiled library as the executor (needs ansorc.net.compile from api.py and a C compiler)."""
    import shutil
    pytest.importorskip("ansorc.net.api", reason="ansorc.net.compile (api.py) is not on this branch")
    if not shutil.which("gcc") and not shutil.which("cc"):
        pytest.skip("no C compiler")
    from .conformance import node_cases, run_case
    wanted = ("test_relu", "test_add_bcast", "test_matmul_2d", "test_basic_conv_with_padding")
    for case in (c for c in node_cases() if c.name in wanted):
        r = run_case(case, TABLE, executor=functools.partial(backend.compiled, table=TABLE))
        assert r.status == "passed", (case.name, r.detail)


def test_run_node(rng):
    x, y = rng.normal(size=(2, 3)).astype(np.float32), rng.normal(size=(3,)).astype(np.float32)
    (out,) = backend.run_node(helper.make_node("Add", ["x", "y"], ["z"]), [x, y], executor=MINI)
    np.testing.assert_allclose(out, x + y)
    (out,) = AnsorcBackend.run_node(helper.make_node("Relu", ["x"], ["z"]), [x], executor=MINI, opset_version=13)
    np.testing.assert_array_equal(out, np.maximum(x, 0))
