"""Whole quantized models: a tiny float conv + matmul + gemm model quantized by onnxruntime.quantization
(quantize_static in QDQ form, quantize_dynamic), compiled by ansorc and compared with onnxruntime's outputs.

Tolerance: one quantization step of the output's scale (QDQ), or float32 rounding (dynamic: the integer parts are
exact and the float scaling is the same float32 multiplications). In practice the QDQ outputs agree bit for bit:
the QDQ pass makes the same integer ops onnxruntime fuses them into. The static models are quantized with
reduce_range (7-bit weights): onnxruntime's uint8 x int8 kernels on AVX2 without VNNI saturate pairs of products
to int16 (it runs int8 activations as uint8), which the exact int32 sums of ONNX (and of ansorc) do not."""
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import ansorc.net
from ansorc.net.importer import graph_of

quantization = pytest.importorskip("onnxruntime.quantization")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def float_model(rng, path):
    def init(name, *shape, sd=0.2):
        return numpy_helper.from_array(rng.normal(0, sd, shape).astype(np.float32), name)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2], group=2),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("Flatten", ["r2"], ["f"]),
             helper.make_node("MatMul", ["f", "wm"], ["m"]),
             helper.make_node("Add", ["m", "bm"], ["a"]),
             helper.make_node("Gemm", ["a", "wg", "bg"], ["y"], transB=1)]
    graph = helper.make_graph(
        nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 6])],
        [init("w1", 8, 3, 3, 3, sd=0.3), init("b1", 8, sd=0.1), init("w2", 16, 4, 3, 3), init("b2", 16, sd=0.1),
         init("wm", 256, 12, sd=0.1), init("bm", 12, sd=0.1), init("wg", 6, 12, sd=0.3), init("bg", 6, sd=0.1)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)


class Reader(quantization.CalibrationDataReader):
    def __init__(self, rng):
        self.batches = iter([{"x": rng.normal(size=(2, 3, 8, 8)).astype(np.float32)} for _ in range(6)])

    def get_next(self):
        return next(self.batches, None)


def run_both(path, x):
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = ansorc.net.compile(str(path), trials=0)(x)
    return want, (got[0] if isinstance(got, list) else got)


def output_step(path) -> float:
    """The scale of the QuantizeLinear whose dequantized value is the model's output."""
    m = onnx.load(str(path))
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    last = [n for n in m.graph.node if n.op_type == "DequantizeLinear" and n.output[0] == m.graph.output[0].name]
    return float(inits[last[0].input[1]].reshape(-1)[0])


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("activations", ["QUInt8", "QInt8"])
def test_quantize_static_qdq_runs_integer_kernels(rng, tmp_path, per_channel, activations):
    float_model(rng, tmp_path / "f.onnx")
    q = tmp_path / "q.onnx"
    quantization.quantize_static(str(tmp_path / "f.onnx"), str(q), Reader(rng),
                                 quant_format=quantization.QuantFormat.QDQ, per_channel=per_channel,
                                 activation_type=getattr(quantization.QuantType, activations),
                                 weight_type=quantization.QuantType.QInt8, reduce_range=True)
    ops = [n.op_type.removesuffix("NHWC") for n in graph_of(str(q)).nodes]   # the layout pass's channels-last ops
    assert ops.count("QLinearConv") == 2 and ops.count("QLinearMatMul") == 2, ops   # the MatMul and the Gemm
    assert not {"Conv", "MatMul", "Gemm"} & set(ops), ops
    x = rng.normal(size=(2, 3, 8, 8)).astype(np.float32)
    want, got = run_both(q, x)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.abs(got - want).max() <= output_step(q) * 1.0001


@pytest.mark.parametrize("weights", ["QUInt8", "QInt8"])
def test_quantize_dynamic(rng, tmp_path, weights):
    float_model(rng, tmp_path / "f.onnx")
    q = tmp_path / "q.onnx"
    quantization.quantize_dynamic(str(tmp_path / "f.onnx"), str(q), op_types_to_quantize=["Conv", "MatMul", "Gemm"],
                                  weight_type=getattr(quantization.QuantType, weights), reduce_range=True)
    ops = {n.op_type for n in onnx.load(str(q)).graph.node}
    assert {"DynamicQuantizeLinear", "MatMulInteger", "ConvInteger"} <= ops, ops
    x = rng.normal(size=(2, 3, 8, 8)).astype(np.float32)
    want, got = run_both(q, x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def qdq_conv(rng, path, bias_scale_factor=1.0, conv_is_output=False, identity=False):
    """x -> Q -> DQ -> Conv(DQ(W), DQ(B)) -> Q -> DQ -> y, by hand."""
    xs, ws, ys = np.float32(0.03), rng.uniform(0.002, 0.004, 4).astype(np.float32), np.float32(0.05)
    inits = {"xs": xs, "xz": np.uint8(120), "w": rng.integers(-64, 64, (4, 3, 3, 3)).astype(np.int8), "ws": ws,
             "wz": np.zeros(4, np.int8), "b": rng.integers(-2000, 2000, 4).astype(np.int32),
             "bs": (xs * ws * np.float32(bias_scale_factor)).astype(np.float32), "ys": ys, "yz": np.uint8(128)}
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], axis=0),
             helper.make_node("DequantizeLinear", ["b", "bs"], ["bd"], axis=0),
             helper.make_node("Identity", ["bd"], ["bi"]),
             helper.make_node("Conv", ["xd", "wd", "bi" if identity else "bd"], ["c"], pads=[1, 1, 1, 1],
                              name="conv"),
             helper.make_node("QuantizeLinear", ["c", "ys", "yz"], ["yq"]),
             helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 6])]
    if conv_is_output:
        outs.append(helper.make_tensor_value_info("c", TensorProto.FLOAT, [1, 4, 6, 6]))
    graph = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6])],
                              outs, [numpy_helper.from_array(np.asarray(a), n) for n, a in inits.items()])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), path)
    return float(ys)


@pytest.mark.parametrize("case", ["folds", "bias scale differs", "bias through Identity", "conv read twice"])
def test_qdq_pass_folds_only_the_same_computation(rng, tmp_path, case):
    """A bias at another scale (or shared through an Identity, as the exporter writes a model that was not
    pre-processed) is requantized at import: integer, within one step of onnxruntime's float conv."""
    path = tmp_path / "m.onnx"
    step = qdq_conv(rng, path, bias_scale_factor=1.0 if case == "folds" else 1.5,
                    conv_is_output=case == "conv read twice", identity=case == "bias through Identity")
    ops = [n.op_type.removesuffix("NHWC") for n in graph_of(str(path)).nodes]
    float_conv = bool({"Conv", "ConvNHWC"} & set(ops))   # the layout pass makes a float Conv channels-last
    folds = case != "conv read twice"
    assert ("QLinearConv" in ops) == folds and float_conv == (not folds), ops
    x = rng.normal(size=(1, 3, 6, 6)).astype(np.float32)
    want, got = run_both(path, x)
    assert np.abs(got - want).max() <= step * 1.0001


def residual_model(rng, path):
    """A tiny CNN with what quantize_static's QOperator format writes com.microsoft ops for: a residual Add, SiLU
    (Sigmoid, Mul), MaxPool, Concat, GlobalAveragePool, Flatten and Gemm."""
    def init(name, *shape, sd=0.2):
        return numpy_helper.from_array(rng.normal(0, sd, shape).astype(np.float32), name)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c2", "r1"], ["res"]),
             helper.make_node("Sigmoid", ["res"], ["sig"]),
             helper.make_node("Mul", ["res", "sig"], ["silu"]),
             helper.make_node("MaxPool", ["silu"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p", "w3", "b3"], ["c3"], pads=[1, 1, 1, 1]),
             helper.make_node("Concat", ["c3", "p"], ["cat"], axis=1),
             helper.make_node("GlobalAveragePool", ["cat"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "wg", "bg"], ["y"], transB=1)]
    graph = helper.make_graph(
        nodes, "residual", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 6])],
        [init("w1", 8, 3, 3, 3, sd=0.3), init("b1", 8, sd=0.1), init("w2", 8, 8, 3, 3), init("b2", 8, sd=0.1),
         init("w3", 8, 8, 3, 3), init("b3", 8, sd=0.1), init("wg", 6, 16, sd=0.3), init("bg", 6, sd=0.1)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)


@pytest.mark.parametrize("activations", ["QUInt8", "QInt8"])
def test_quantize_static_qoperator(rng, tmp_path, activations):
    """QOperator format: the com.microsoft ops are rewritten into QDQ form at import (qoperator_pass.py), the QGemm
    folded into an integer QLinearMatMul; within one step of the output's scale."""
    residual_model(rng, tmp_path / "f.onnx")
    q = tmp_path / "q.onnx"
    quantization.quantize_static(str(tmp_path / "f.onnx"), str(q), Reader(rng),
                                 quant_format=quantization.QuantFormat.QOperator, per_channel=True,
                                 activation_type=getattr(quantization.QuantType, activations),
                                 weight_type=quantization.QuantType.QInt8, reduce_range=True)
    written = {n.op_type for n in onnx.load(str(q)).graph.node if n.domain == "com.microsoft"}
    assert written == {"QLinearAdd", "QLinearSigmoid", "QLinearMul", "QLinearConcat", "QLinearGlobalAveragePool",
                       "QGemm"}, written
    ops = [n.op_type.removesuffix("NHWC") for n in graph_of(str(q)).nodes]
    assert ops.count("QLinearConv") == 3 and ops.count("QLinearMatMul") == 1 and "Gemm" not in ops, ops
    x = rng.normal(size=(2, 3, 8, 8)).astype(np.float32)
    want, got = run_both(q, x)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.abs(got - want).max() <= output_step(q) * 1.0001
