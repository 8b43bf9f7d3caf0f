"""A chain of element-wise and shape ops lowered node by node (shape arithmetic folded through Shape, Slice,
Concat into a Reshape) matches onnxruntime."""
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from ansorc.net.ops import SUPPORT
from tests.unit.onnx_node_harness import run_graph


def _model():
    H = helper
    inits = [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in
             [("s0", [0]), ("s1", [1]), ("neg2", -2), ("hw", [6, 4]), ("sp", [2, 2]), ("pads", [0, 1, 0, 0, -1, 2])]]
    inits += [numpy_helper.from_array(np.linspace(-1, 1, 4).astype(np.float32), "bias"),
              numpy_helper.from_array(np.array(0.1, np.float32), "thr")]
    nodes = [
        H.make_node("Shape", ["x"], ["shp"]),
        H.make_node("Slice", ["shp", "s0", "s1"], ["batch"]),
        H.make_node("Concat", ["batch", "hw"], ["target"], axis=0),
        H.make_node("Reshape", ["x", "target"], ["r"]),               # (2, 24) -> (2, 6, 4)
        H.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1]),        # (2, 4, 6)
        H.make_node("Split", ["t", "sp"], ["a", "b"], axis=1),         # (2, 2, 6), (2, 2, 6)
        H.make_node("Concat", ["b", "a"], ["c"], axis=1),              # (2, 4, 6)
        H.make_node("Pad", ["c", "pads"], ["p"], mode="reflect"),      # (2, 4, 8): +1 front, -1 end
        H.make_node("Transpose", ["p"], ["pt"], perm=[0, 2, 1]),       # (2, 8, 4)
        H.make_node("Add", ["pt", "bias"], ["s"]),
        H.make_node("Gelu", ["s"], ["g"]),
        H.make_node("Greater", ["g", "thr"], ["m"]),
        H.make_node("Where", ["m", "g", "thr"], ["w"]),
        H.make_node("Cast", ["m"], ["mi"], to=TensorProto.INT64),
        H.make_node("Add", ["mi", "mi"], ["twice"]),
        H.make_node("Add", ["twice", "s1"], ["count"]),                 # 2 m + 1
        H.make_node("Div", ["count", "neg2"], ["q"]),                   # truncates toward zero
    ]
    g = H.make_graph(nodes, "chain", [H.make_tensor_value_info("x", TensorProto.FLOAT, [2, 24])],
                     [H.make_tensor_value_info("w", TensorProto.FLOAT, [2, 8, 4]),
                      H.make_tensor_value_info("q", TensorProto.INT64, [2, 8, 4])], initializer=inits)
    return H.make_model(g, opset_imports=[H.make_opsetid("", 20)], ir_version=9)  # onnxruntime 1.30 reads <= 13


def test_chain_matches_onnxruntime():
    model = _model()
    onnx.checker.check_model(model)
    x = np.random.default_rng(3).uniform(-2, 2, (2, 24)).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got = run_graph(model, {"x": x}, SUPPORT)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
