"""ansorc.net.compile on a real ONNX file, against onnxruntime (skipped until the importer and fusion are in)."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("ansorc.net.importer")
pytest.importorskip("ansorc.net.fuse")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import ansorc.net  # noqa: E402
from ansorc.net import Model  # noqa: E402
from ansorc.net.network import NetError  # noqa: E402


def small_cnn(seed: int = 0):
    """Conv(bias) -> Relu -> MaxPool -> Flatten -> Gemm -> Softmax, batch 2, 3x12x12 images, 6 classes."""
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(seed)
    inits = [numpy_helper.from_array(rng.normal(0, 0.3, (4, 3, 3, 3)).astype(np.float32), "cw"),
             numpy_helper.from_array(rng.normal(0, 0.1, 4).astype(np.float32), "cb"),
             numpy_helper.from_array(rng.normal(0, 0.1, (6, 4 * 6 * 6)).astype(np.float32), "fw"),
             numpy_helper.from_array(rng.normal(0, 0.1, 6).astype(np.float32), "fb")]
    nodes = [helper.make_node("Conv", ["image", "cw", "cb"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2], name="pool"),
             helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
             helper.make_node("Gemm", ["f", "fw", "fb"], ["g"], transB=1, name="fc"),
             helper.make_node("Softmax", ["g"], ["prob"], axis=1, name="softmax")]
    graph = helper.make_graph(nodes, "small cnn", [helper.make_tensor_value_info("image", TensorProto.FLOAT,
                                                                                  [2, 3, 12, 12])],
                              [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [2, 6])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_compiled_onnx_model_matches_onnxruntime(tmp_path):
    proto = small_cnn()
    path = tmp_path / "small.onnx"
    onnx.save(proto, str(path))
    x = np.random.default_rng(1).standard_normal((2, 3, 12, 12)).astype(np.float32)
    [want] = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"image": x})
    with ansorc.net.compile(str(path), name="small") as model:
        [got] = model(x)
        assert np.linalg.norm(got - want) <= 1e-4 * np.linalg.norm(want)
        with pytest.raises(NetError, match=r"input 'image' must have shape \(2, 3, 12, 12\)"):
            model(x[:1])
        model.export(tmp_path / "out")
    with Model.load(tmp_path / "out") as again:
        np.testing.assert_array_equal(again(x)[0], got)
