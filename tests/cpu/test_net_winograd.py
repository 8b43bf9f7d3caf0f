"""3x3 convs that compile to Winograd stages (ansorc/net/ops/winograd.py) match onnxruntime: both tile sizes,
maps that are not a multiple of the tile, asymmetric and no padding, a batch, bias and the fused ReLU."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import ansorc.net  # noqa: E402
from ansorc.net.ops.window import Window  # noqa: E402
from ansorc.net.ops.winograd import tile_size  # noqa: E402


def conv_model(n, c, k, h, w, pads, bias: bool, seed: int):
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(seed)
    inits = [numpy_helper.from_array(rng.normal(0, 0.2, (k, c, 3, 3)).astype(np.float32), "cw")]
    ins = ["image", "cw"]
    if bias:
        inits.append(numpy_helper.from_array(rng.normal(0, 0.1, k).astype(np.float32), "cb"))
        ins.append("cb")
    oh, ow = h + pads[0] + pads[2] - 2, w + pads[1] + pads[3] - 2
    nodes = [helper.make_node("Conv", ins, ["c"], pads=list(pads), kernel_shape=[3, 3], name="conv"),
             helper.make_node("Relu", ["c"], ["out"], name="relu")]
    graph = helper.make_graph(nodes, "wino", [helper.make_tensor_value_info("image", TensorProto.FLOAT,
                                                                             [n, c, h, w])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [n, k, oh, ow])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


CASES = [  # (n, c, k, h, w, pads, bias, tile m the rule picks)
    (1, 32, 48, 24, 24, (1, 1, 1, 1), True, 4),
    (1, 32, 32, 25, 23, (1, 1, 1, 1), False, 4),     # partial tiles on both axes
    (2, 40, 32, 16, 15, (0, 1, 2, 0), True, 4),       # asymmetric pads, a batch
    (1, 32, 32, 14, 14, (1, 1, 1, 1), True, 2),
    (1, 32, 64, 18, 20, (0, 0, 0, 0), True, 2),      # no padding: 16x18 outputs, 20 tiles of 4x4
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}x{c[1]}x{c[3]}x{c[4]}-m{c[-1]}" for c in CASES])
def test_winograd_conv_matches_onnxruntime(tmp_path, monkeypatch, case):
    monkeypatch.delenv("ANSORC_WINOGRAD", raising=False)
    n, c, k, h, w, pads, bias, m = case
    out = (h + pads[0] + pads[2] - 2, w + pads[1] + pads[3] - 2)
    assert tile_size(Window((3, 3), (1, 1), (1, 1), pads[:2], pads[2:], out), n, c, k) == m
    path = tmp_path / "wino.onnx"
    onnx.save(conv_model(n, c, k, h, w, pads, bias, seed=h * w), str(path))
    x = np.random.default_rng(7).standard_normal((n, c, h, w)).astype(np.float32)
    [want] = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"image": x})
    with ansorc.net.compile(str(path), name="wino") as model:
        names = " ".join(t.name if hasattr(t, "name") else str(t) for t in model.tasks)
        assert "wino_gemm" in names, names
        [got] = model(x)
    assert got.shape == want.shape
    assert np.linalg.norm(got - want) <= 1e-5 * np.linalg.norm(want)


def test_off_switch_keeps_the_direct_conv(tmp_path, monkeypatch):
    monkeypatch.setenv("ANSORC_WINOGRAD", "0")
    path = tmp_path / "direct.onnx"
    onnx.save(conv_model(1, 32, 32, 16, 16, (1, 1, 1, 1), True, seed=3), str(path))
    with ansorc.net.compile(str(path), name="direct") as model:
        names = " ".join(t.name if hasattr(t, "name") else str(t) for t in model.tasks)
    assert "wino" not in names
