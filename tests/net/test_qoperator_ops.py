"""onnxruntime's com.microsoft QOperator ops (QLinearAdd, QLinearGlobalAveragePool, QGemm, ...), which the importer
rewrites as DequantizeLinear -> float op -> QuantizeLinear (ansorc/net/qoperator_pass.py): one-node models run by
onnxruntime and by ansorc (compiled, default programs), compared in quantization steps of the output.

Exact (bit for bit): QLinearConcat (a requantizing copy), QGemm (folded into QLinearMatMul, the same integer sum
and requantization; 7-bit weights for uint8 x int8, see test_quant_ops.py), the com.microsoft QuantizeLinear and
DequantizeLinear, and the table ops (QLinearSigmoid, QLinearLeakyRelu: onnxruntime quantizes f(dequantized x) per
value, as the decomposition does). Within one step: the ops onnxruntime computes in its own float steps
(QLinearAdd and QLinearMul scale each operand by its ratio to the output's scale, the pools sum integers and
scale once, QLinearSoftmax uses an exp table)."""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import ansorc.net
from ansorc.net.importer import graph_of
from ansorc.net.network import NetError
from tests.net.test_quant_ops import check

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
ELEM = {"uint8": TensorProto.UINT8, "int8": TensorProto.INT8, "float32": TensorProto.FLOAT}
MS = "com.microsoft"


def make(node, feeds, inits, out_dtype="uint8", opset=17, out_shape=None):
    graph = helper.make_graph(
        [node], "qop", [helper.make_tensor_value_info(n, ELEM[a.dtype.name], a.shape) for n, a in feeds.items()],
        [helper.make_tensor_value_info(node.output[0], ELEM[out_dtype], out_shape)],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)],
                             ir_version=8)


def steps(node, feeds, inits, out_dtype="uint8", opset=17) -> int:
    """The largest difference, in output steps (integers; float: in units of 1e-6 relative), of ansorc's
    compiled result from onnxruntime's."""
    m = make(node, feeds, inits, out_dtype, opset)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    m.graph.output[0].CopyFrom(helper.make_tensor_value_info(node.output[0], ELEM[out_dtype], want.shape))
    got = ansorc.net.compile(m, trials=0)(*feeds.values())
    got = got[0] if isinstance(got, (list, tuple)) else got
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.shape)
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    if want.dtype == np.float32:
        return int(np.ceil(diff.max() / (1e-6 * np.abs(want).max())))
    assert want.min() < want.max(), "a constant output tests little"
    return int(diff.max())


def ints(rng, shape, dtype, bits=8):
    lo, hi = (0, 2**bits - 1) if dtype == "uint8" else (-2**(bits - 1), 2**(bits - 1) - 1)
    return rng.integers(lo, hi + 1, size=shape).astype(dtype)


def qparams(rng, dtype, prefix, scale):
    return {f"{prefix}s": np.float32(scale), f"{prefix}z": ints(rng, (), dtype, 6)}


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
def test_binary(rng, op, dtype):
    feeds = {"a": ints(rng, (2, 3, 4, 5), dtype), "b": ints(rng, (1, 3, 1, 5), dtype)}   # B broadcast
    inits = {**qparams(rng, dtype, "a", 0.05), **qparams(rng, dtype, "b", 0.03),
             **qparams(rng, dtype, "c", 0.09 if op == "QLinearAdd" else 0.6)}
    node = helper.make_node(op, ["a", "as", "az", "b", "bs", "bz", "cs", "cz"], ["c"], domain=MS)
    assert steps(node, feeds, inits, dtype) <= 1


def test_binary_omitted_output_zero_point(rng):
    """An omitted output zero point is 0 of the input's type (onnxruntime fails on omitted input zero points, and
    on int8 without them)."""
    feeds = {"a": ints(rng, (3, 8), "uint8"), "b": ints(rng, (3, 8), "uint8")}
    node = helper.make_node("QLinearAdd", ["a", "as", "az", "b", "bs", "bz", "cs"], ["c"], domain=MS)
    inits = {"as": np.float32(0.02), "az": np.uint8(100), "bs": np.float32(0.03), "bz": np.uint8(90),
             "cs": np.float32(0.04)}
    assert steps(node, feeds, inits) <= 1


@pytest.mark.parametrize("channels_last", [0, 1])
@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_global_average_pool(rng, dtype, channels_last):
    feeds = {"x": ints(rng, (2, 7, 6, 5), dtype)}
    node = helper.make_node("QLinearGlobalAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"], domain=MS,
                            channels_last=channels_last)
    middle = np.array(128 if dtype == "uint8" else 0, dtype)   # x's mean near 0.0, spread over y's steps
    inits = {"xs": np.float32(0.1), "xz": middle, "ys": np.float32(0.005), "yz": middle}
    assert steps(node, feeds, inits, dtype) <= 1


@pytest.mark.parametrize("attrs", [dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]),
                                   dict(kernel_shape=[2, 3], pads=[0, 1, 1, 1], count_include_pad=1),
                                   dict(kernel_shape=[3, 2], ceil_mode=1, strides=[2, 2], channels_last=1)])
def test_average_pool(rng, attrs):
    feeds = {"x": ints(rng, (2, 4, 7, 6), "uint8")}
    node = helper.make_node("QLinearAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"], domain=MS, **attrs)
    inits = {**qparams(rng, "uint8", "x", 0.1), **qparams(rng, "uint8", "y", 0.07)}
    assert steps(node, feeds, inits) <= 1


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_concat_requantizes_each_input_exactly(rng, dtype):
    feeds = {"a": ints(rng, (2, 3, 4), dtype), "b": ints(rng, (2, 5, 4), dtype), "c": ints(rng, (2, 1, 4), dtype)}
    inits = {**qparams(rng, dtype, "y", 0.05), **qparams(rng, dtype, "a", 0.02), **qparams(rng, dtype, "b", 0.11)}
    node = helper.make_node("QLinearConcat", ["ys", "yz", "a", "as", "az", "b", "bs", "bz", "c", "ys", "yz"], ["y"],
                            domain=MS, axis=1)   # c at the output's own scale and zero point: copied
    assert steps(node, feeds, inits, dtype) == 0


@pytest.mark.parametrize("op", ["QLinearSigmoid", "QLinearLeakyRelu"])
@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_table_ops(rng, op, dtype):
    feeds = {"x": ints(rng, (4, 64), dtype)}
    attrs = {"alpha": 0.1} if op == "QLinearLeakyRelu" else {}
    node = helper.make_node(op, ["x", "xs", "xz", "ys", "yz"], ["y"], domain=MS, **attrs)
    inits = {**qparams(rng, dtype, "x", 0.05), **qparams(rng, dtype, "y", 0.004 if op == "QLinearSigmoid" else 0.03)}
    assert steps(node, feeds, inits, dtype) == 0


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_softmax(rng, dtype):
    """onnxruntime's QLinearSoftmax wants the output at scale 1/256 with zero point 0 (uint8) or -128 (int8)."""
    feeds = {"x": ints(rng, (3, 5, 16), dtype)}
    inits = {**qparams(rng, dtype, "x", 0.08), "ys": np.float32(1 / 256),
             "yz": np.array(0 if dtype == "uint8" else -128, dtype)}
    node = helper.make_node("QLinearSoftmax", ["x", "xs", "xz", "ys", "yz"], ["y"], domain=MS, axis=-1, opset=13)
    assert steps(node, feeds, inits, dtype) <= 1


@pytest.mark.parametrize("case", ["per-channel, bias", "per-tensor, transB=0", "per-channel, transB=0",
                                  "float output"])
def test_qgemm_folds_into_an_integer_matmul(rng, case):
    trans, per_channel = "transB=0" not in case, "per-tensor" not in case
    feeds = {"a": ints(rng, (5, 32), "uint8")}
    inits = {"as": np.float32(0.02), "az": np.uint8(120), "b": ints(rng, (12, 32) if trans else (32, 12), "int8", 7),
             "bs": rng.uniform(0.002, 0.01, 12).astype(np.float32) if per_channel else np.float32(0.004),
             "bz": np.zeros(12 if per_channel else (), np.int8), "c": rng.integers(-3000, 3000, 12).astype(np.int32),
             "ys": np.float32(0.3), "yz": np.uint8(128)}
    ins = ["a", "as", "az", "b", "bs", "bz", "c"] + ([] if case == "float output" else ["ys", "yz"])
    node = helper.make_node("QGemm", ins, ["y"], domain=MS, transB=int(trans))
    out = "float32" if case == "float output" else "uint8"
    assert steps(node, feeds, inits, out) == 0
    ops = [n.op_type for n in graph_of(make(node, feeds, inits, out, out_shape=(5, 12))).nodes]
    assert {"QLinearMatMul": "uint8", "MatMulInteger": "float32"}[ops[0]] == out and "Gemm" not in ops, ops


def test_contrib_quantize_dequantize(rng):
    x = (rng.normal(size=(3, 4, 5)) * 2).astype(np.float32)
    inits = {"s": rng.uniform(0.01, 0.03, 4).astype(np.float32), "z": ints(rng, (4,), "int8", 5)}
    q = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], domain=MS, axis=1)
    assert steps(q, {"x": x}, inits, "int8") == 0
    dq = helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], domain=MS, axis=1)
    assert steps(dq, {"q": ints(rng, (3, 4, 5), "int8")}, inits, "float32") == 0


def _error(node, feeds, inits, opset=17) -> str:
    with pytest.raises(NetError) as e:
        graph_of(make(node, feeds, inits, opset=opset, out_shape=(2, 3, 4)))
    msg = str(e.value)
    assert "\n" not in msg and f"'{node.name}'" in msg, msg
    return msg


@pytest.mark.parametrize("case", ["unknown op", "attribute", "softmax axis", "concat inputs"])
def test_unsupported_variants_name_the_node(rng, case):
    x, q = {"x": ints(rng, (2, 3, 4), "uint8")}, {"s": np.float32(0.1), "z": np.uint8(3)}
    node, want = {
        "unknown op": (helper.make_node("QLinearWhere", ["x", "x", "s", "z", "x", "s", "z", "s", "z"], ["y"],
                                        domain=MS), "com.microsoft op QLinearWhere is not supported"),
        "attribute": (helper.make_node("QLinearSigmoid", ["x", "s", "z", "s", "z"], ["y"], domain=MS, alpha=0.5),
                      "attribute 'alpha' is not supported"),
        "softmax axis": (helper.make_node("QLinearSoftmax", ["x", "s", "z", "s", "z"], ["y"], domain=MS, axis=1,
                                          opset=11), "Softmax on axis 1, not the last one"),
        "concat inputs": (helper.make_node("QLinearConcat", ["s", "z", "x", "s"], ["y"], domain=MS, axis=1),
                          "2 inputs after the output's scale"),
    }[case]
    node.name = "n0"
    assert want in _error(node, x, q), _error(node, x, q)


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_data_ops_on_quantized_tensors(rng, dtype):
    """What a QOperator model computes on int8/uint8 tensors between its quantized ops: MaxPool (padded with the
    type's lowest value), Relu (int8), and the ops that move data (Transpose, Reshape, ...); bit-exact."""
    nodes = [helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Transpose", ["p"], ["t"], perm=[0, 2, 3, 1]),
             helper.make_node("Reshape", ["t", "shape"], ["r"]),
             helper.make_node("Concat", ["r", "r"], ["c"], axis=1),
             helper.make_node("Slice", ["c", "starts", "ends"], ["s"]),
             helper.make_node("Flatten", ["s"], ["y"]),
             helper.make_node("Unsqueeze", ["p", "axes"], ["u"]),
             helper.make_node("Squeeze", ["u", "axes"], ["sq"]),
             helper.make_node("Split", ["sq"], ["h0", "h1"], axis=1, num_outputs=2),
             helper.make_node("Expand", ["h1", "expand"], ["e"]),
             helper.make_node("Tile", ["e", "repeats"], ["ti"]),
             helper.make_node("DepthToSpace", ["ti"], ["d2s"], blocksize=2)]
    outs = [("p", dtype), ("y", dtype), ("h0", dtype), ("d2s", dtype)]
    if dtype == "int8":
        nodes.append(helper.make_node("Relu", ["x"], ["relu"]))
        outs.append(("relu", dtype))
    inits = {"shape": np.array([2, -1, 4], np.int64), "starts": np.array([1], np.int64),
             "ends": np.array([5], np.int64), "axes": np.array([0], np.int64),
             "expand": np.array([2, 1, 4, 4], np.int64), "repeats": np.array([1, 2, 1, 1], np.int64)}
    check(nodes, {"x": ints(rng, (2, 4, 7, 8), dtype)}, inits, outs, opset=18)
