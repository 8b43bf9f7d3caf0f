"""Recurrent models compiled to C (ansorc.net.compile, default programs) against onnxruntime: a two-layer LSTM
classifier (LSTM -> LSTM -> last step -> Gemm, as torch.onnx.export writes it) and a bidirectional GRU with
run-time sequence_lens."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import ansorc.net  # noqa: E402
from ansorc.net.network import NetError  # noqa: E402

F = onnx.TensorProto.FLOAT


def _init(rng, name, *shape, scale=0.3):
    return onnx.numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def lstm_classifier(seq=6, batch=2, inp=5, hidden=8, classes=3, seed=0):
    """Two stacked LSTMs with torch's Squeeze between them, the last time step, then Gemm."""
    from onnx import helper
    rng = np.random.default_rng(seed)
    inits = [_init(rng, "w1", 1, 4 * hidden, inp), _init(rng, "r1", 1, 4 * hidden, hidden),
             _init(rng, "b1", 1, 8 * hidden), _init(rng, "w2", 1, 4 * hidden, hidden),
             _init(rng, "r2", 1, 4 * hidden, hidden), _init(rng, "b2", 1, 8 * hidden),
             _init(rng, "fw", classes, hidden), _init(rng, "fb", classes),
             onnx.numpy_helper.from_array(np.array([1], np.int64), "ax1"),
             onnx.numpy_helper.from_array(np.array([-1], np.int64), "last"),
             onnx.numpy_helper.from_array(np.array([0], np.int64), "ax0")]
    nodes = [helper.make_node("LSTM", ["x", "w1", "r1", "b1"], ["y1", "h1", "c1"], hidden_size=hidden, name="lstm1"),
             helper.make_node("Squeeze", ["y1", "ax1"], ["s1"], name="sq1"),
             helper.make_node("LSTM", ["s1", "w2", "r2", "b2"], ["y2"], hidden_size=hidden, name="lstm2"),
             helper.make_node("Squeeze", ["y2", "ax1"], ["s2"], name="sq2"),
             helper.make_node("Gather", ["s2", "last"], ["g"], axis=0, name="last_step"),
             helper.make_node("Squeeze", ["g", "ax0"], ["feat"], name="sq3"),
             helper.make_node("Gemm", ["feat", "fw", "fb"], ["logits"], transB=1, name="fc")]
    graph = helper.make_graph(nodes, "lstm classifier", [helper.make_tensor_value_info("x", F, [seq, batch, inp])],
                              [helper.make_tensor_value_info("logits", F, [batch, classes])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def bidirectional_gru(seq=7, batch=3, inp=4, hidden=5, seed=1):
    from onnx import helper
    rng = np.random.default_rng(seed)
    inits = [_init(rng, "w", 2, 3 * hidden, inp), _init(rng, "r", 2, 3 * hidden, hidden),
             _init(rng, "b", 2, 6 * hidden)]
    node = helper.make_node("GRU", ["x", "w", "r", "b", "lens", "h0"], ["y", "yh"], hidden_size=hidden,
                            direction="bidirectional", linear_before_reset=1, name="gru")
    graph = helper.make_graph([node], "bigru", [
        helper.make_tensor_value_info("x", F, [seq, batch, inp]),
        helper.make_tensor_value_info("lens", onnx.TensorProto.INT32, [batch]),
        helper.make_tensor_value_info("h0", F, [2, batch, hidden])], [
        helper.make_tensor_value_info("y", F, [seq, 2, batch, hidden]),
        helper.make_tensor_value_info("yh", F, [2, batch, hidden])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _rel(got, want):
    return np.linalg.norm(got - want) / np.linalg.norm(want)


def _compare(tmp_path, proto, feeds, name):
    path = tmp_path / f"{name}.onnx"
    onnx.save(proto, str(path))
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)
    with ansorc.net.compile(str(path), trials=0, name=name) as model:
        got = model(*feeds.values())
    for g, w in zip(got, want):
        assert g.shape == w.shape and _rel(g, w) <= 1e-4, (g.shape, w.shape, _rel(g, w))
    return got


def test_two_layer_lstm_classifier_matches_onnxruntime(tmp_path):
    x = np.random.default_rng(2).standard_normal((6, 2, 5)).astype(np.float32)
    _compare(tmp_path, lstm_classifier(), {"x": x}, "lstm2")


def test_bidirectional_gru_with_sequence_lens_matches_onnxruntime(tmp_path):
    rng = np.random.default_rng(3)
    feeds = {"x": rng.standard_normal((7, 3, 4)).astype(np.float32), "lens": np.array([7, 2, 5], np.int32),
             "h0": rng.standard_normal((2, 3, 5)).astype(np.float32)}
    [y, _] = _compare(tmp_path, bidirectional_gru(), feeds, "bigru")
    assert not y[2:, :, 1].any() and y[:2, :, 1].all()  # past entry 1's length: zeros


def test_sequence_lens_past_the_sequence_is_a_run_error_not_a_wild_read(tmp_path):
    path = tmp_path / "bigru.onnx"
    onnx.save(bidirectional_gru(), str(path))
    rng = np.random.default_rng(4)
    x, h0 = rng.standard_normal((7, 3, 4)).astype(np.float32), rng.standard_normal((2, 3, 5)).astype(np.float32)
    with ansorc.net.compile(str(path), trials=0, name="bigru_bad") as model:
        for lens in ([8, 2, 5], [-1, 2, 5]):
            with pytest.raises(NetError, match="index out of range"):
                model(x, np.array(lens, np.int32), h0)
