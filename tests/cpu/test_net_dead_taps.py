"""Kernel taps that read only padding are cut from a channels-last conv's constant weights (window.live_taps):
the output still matches onnxruntime, and the cut is what the geometry says."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import ansorc.net  # noqa: E402
from ansorc.net.ops.window import Window, live_taps  # noqa: E402

CASES = [  # (channels, size, kernel, dilation, pads top/left/bottom/right, live taps per dim)
    (16, 14, 3, 24, (24, 24, 24, 24), ((1, 1), (1, 1))),     # DeepLabV3's rate 24 on 14x14: the centre only
    (16, 14, 3, 12, (12, 12, 12, 12), ((0, 2), (0, 2))),     # rate 12: every tap reads the edge rows
    (8, 6, 2, 8, (8, 8, 2, 2), ((1, 1), (1, 1))),            # one side cut: the pads after must grow to 2
    (8, 9, 3, 5, (5, 5, 0, 0), ((1, 2), (1, 2))),            # pads in front only: the first tap is cut
]


def _model(c, size, k, d, pads, out, seed):
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(seed)
    w = numpy_helper.from_array(rng.normal(0, 0.3, (c, c, k, k)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.normal(0, 0.1, c).astype(np.float32), "b")
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], dilations=[d, d], pads=list(pads), kernel_shape=[k, k])
    graph = helper.make_graph([node], "dead", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                             [1, c, size, size])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c] + list(out))], [w, b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("case", CASES, ids=[f"k{c[2]}d{c[3]}s{c[1]}" for c in CASES])
def test_dead_taps_are_cut_and_the_conv_still_matches(tmp_path, case):
    c, size, k, d, pads, live = case
    out = tuple(size + pads[i] + pads[i + 2] - d * (k - 1) for i in range(2))
    assert live_taps(Window((k, k), (1, 1), (d, d), pads[:2], pads[2:], out), (size, size)) == live
    path = tmp_path / "dead.onnx"
    onnx.save(_model(c, size, k, d, pads, out, seed=size + d), str(path))
    x = np.random.default_rng(3).standard_normal((1, c, size, size)).astype(np.float32)
    [want] = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    with ansorc.net.compile(str(path), name="dead") as model:
        [got] = model(x)
        [conv] = [t for t in model.tasks if "conv" in t.dag.workload_key or t.flops > 0]
    taps = np.prod([hi - lo + 1 for lo, hi in live])
    assert conv.flops == pytest.approx(2 * c * c * taps * np.prod(out) + c * np.prod(out), rel=0.01)
    assert got.shape == want.shape
    assert np.linalg.norm(got - want) <= 1e-5 * np.linalg.norm(want)
