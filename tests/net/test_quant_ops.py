"""The quantization operators (ops/quant.py, ops/quant_linear.py) against onnxruntime on random data, compiled to C
(ansorc.net.compile, default programs): every result bit for bit; the numpy reference too, but for its float32
outputs (it computes float32 in float64 outside conversions to integers: within one ulp).

onnxruntime's uint8 x int8 kernels on AVX2 machines without VNNI multiply with vpmaddubsw, which saturates each
pair of products to int16; its results then differ from the exact int32 sums ONNX defines (and ansorc computes)
where a pair passes 32767. The int8 weights of those cases are drawn from 7 bits ([-64, 63], what the quantizer's
reduce_range gives), so that no pair can; docs/networks.md, "Quantized models"."""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import ansorc.net
from ansorc.net.importer import graph_of, import_model, run_reference
from ansorc.net.network import NetError

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
F, U8, I8, I32 = TensorProto.FLOAT, TensorProto.UINT8, TensorProto.INT8, TensorProto.INT32
ELEM = {"uint8": U8, "int8": I8, "float32": F, "int32": I32, "int64": TensorProto.INT64}


def make(nodes, feeds, inits, outs, opset=21):
    graph = helper.make_graph(
        nodes, "quant", [helper.make_tensor_value_info(n, ELEM[a.dtype.name], a.shape) for n, a in feeds.items()],
        [helper.make_tensor_value_info(o[0], ELEM[o[1]], o[2] if len(o) > 2 else None) for o in outs],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def check(nodes, feeds, inits, outs, opset=21):
    """onnxruntime's outputs, then ansorc's (reference and compiled) compared with them exactly; (onnxruntime's
    outputs, the model with its outputs shaped as onnxruntime's)."""
    m = make(nodes, feeds, inits, outs, opset)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    del m.graph.output[:]
    m.graph.output.extend(helper.make_tensor_value_info(n, ELEM[t], w.shape) for (n, t), w in zip(outs, want))
    net = import_model(m)
    got = ansorc.net.compile(net, trials=0)(*feeds.values())
    got = list(got) if isinstance(got, (list, tuple)) else [got]
    for name, w, r, g in zip([n for n, _ in outs], want, run_reference(net, list(feeds.values())), got):
        assert g.dtype == w.dtype and g.shape == w.shape, name
        if w.dtype == np.float32:   # the numpy reference computes float32 in float64, rounding at the end
            np.testing.assert_allclose(r, w, rtol=2e-7, atol=0, err_msg=f"{name} (reference)")
        else:
            assert np.array_equal(r, w), f"{name} (reference): {np.abs(r.astype(float) - w).max()} off"
        assert np.array_equal(g, w), f"{name} (compiled): {np.abs(g.astype(float) - w).max()} off"
    return want, m


def ints(rng, shape, dtype, bits=8):
    lo, hi = (0, 2**bits - 1) if dtype == "uint8" else (-2**(bits - 1), 2**(bits - 1) - 1)
    return rng.integers(lo, hi + 1, size=shape).astype(dtype)


def scalar(v, dtype="float32"):
    return np.array(v, dtype)


@pytest.mark.parametrize("qtype", ["uint8", "int8"])
@pytest.mark.parametrize("opset", [13, 21])
def test_quantize_dequantize_per_tensor_and_per_axis(rng, qtype, opset):
    x = (rng.normal(size=(2, 3, 5, 4)) * 10).astype(np.float32)
    x[0, 0, 0, :3] = [0.5 * 0.037, 1.5 * 0.037, -2.5 * 0.037]   # ties: half to even
    zp3, zp4 = ints(rng, (3,), qtype), ints(rng, (4,), qtype)
    inits = {"s": scalar(0.037), "z": scalar(7, qtype), "s3": rng.uniform(0.01, 0.1, 3).astype(np.float32),
             "z3": zp3, "s4": rng.uniform(0.01, 0.1, 4).astype(np.float32), "z4": zp4}
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"]),
             helper.make_node("QuantizeLinear", ["x", "s3", "z3"], ["q3"], axis=1),
             helper.make_node("DequantizeLinear", ["q3", "s3", "z3"], ["d3"], axis=1),
             helper.make_node("QuantizeLinear", ["x", "s4", "z4"], ["q4"], axis=-1),
             helper.make_node("DequantizeLinear", ["q4", "s4"], ["d4"], axis=-1)]
    outs = [("q", qtype), ("d", "float32"), ("q3", qtype), ("d3", "float32"), ("q4", qtype), ("d4", "float32")]
    want, _ = check(nodes, {"x": x}, inits, outs, opset)
    info = np.iinfo(qtype)
    assert want[0].min() == info.min and want[0].max() == info.max   # the data saturates both ends


def test_quantize_default_zero_point_and_run_time_scale(rng):
    x = (rng.normal(size=(6, 5)) * 3).astype(np.float32)
    feeds = {"x": x, "s": scalar(0.05), "q8": ints(rng, (6, 5), "int8"), "s5": rng.uniform(0.01, 0.2, 5)
             .astype(np.float32), "z5": ints(rng, (5,), "int8")}
    nodes = [helper.make_node("QuantizeLinear", ["x", "s"], ["q"]),
             helper.make_node("DequantizeLinear", ["q8", "s5", "z5"], ["d"], axis=1),
             helper.make_node("DequantizeLinear", ["i32", "s"], ["di"])]
    check(nodes, feeds, {"i32": rng.integers(-10**6, 10**6, (4,)).astype(np.int32)},
          [("q", "uint8"), ("d", "float32"), ("di", "float32")])


@pytest.mark.parametrize("kind", ["mixed", "positive", "negative", "zero"])
def test_dynamic_quantize_linear(rng, kind):
    x = {"mixed": rng.normal(size=(3, 7)) * 2, "positive": rng.uniform(0.5, 3, (3, 7)),
         "negative": -rng.uniform(0.5, 3, (3, 7)), "zero": np.zeros((3, 7))}[kind].astype(np.float32)
    check([helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])], {"x": x}, {},
          [("y", "uint8"), ("s", "float32"), ("z", "uint8")])


@pytest.mark.parametrize("types", [("uint8", "uint8", 8), ("uint8", "int8", 7), ("int8", "int8", 8)])
def test_matmul_integer(rng, types):
    ta, tb, bits = types
    a, b, b3 = ints(rng, (3, 4, 9), ta), ints(rng, (9, 5), tb, bits), ints(rng, (3, 9, 5), tb, bits)
    feeds = {"a": a, "b3": b3, "a2": ints(rng, (6, 9), ta), "az_rt": ints(rng, (), ta)}
    inits = {"b": b, "az": ints(rng, (), ta), "bz": ints(rng, (), tb, bits), "bz5": ints(rng, (5,), tb, bits)}
    nodes = [helper.make_node("MatMulInteger", ["a", "b", "az"], ["y"]),              # constant B: the fast form
             helper.make_node("MatMulInteger", ["a", "b", "az_rt"], ["y_rt"]),        # zero point at run time
             helper.make_node("MatMulInteger", ["a", "b3", "az", "bz"], ["y3"]),      # batched, both zero points
             helper.make_node("MatMulInteger", ["a2", "b", "", "bz5"], ["y5"]),       # per-column B zero point
             helper.make_node("MatMulInteger", ["a2", "b"], ["y0"])]
    check(nodes, feeds, inits, [(n, "int32") for n in ("y", "y_rt", "y3", "y5", "y0")])


@pytest.mark.parametrize("types", [("uint8", "int8", "uint8"), ("int8", "int8", "int8"), ("uint8", "uint8", "uint8")])
def test_qlinear_matmul(rng, types):
    ta, tb, ty = types
    bits = 7 if (ta, tb) == ("uint8", "int8") else 8
    feeds = {"a": ints(rng, (2, 5, 16), ta), "b_rt": ints(rng, (16, 6), tb, bits)}
    inits = {"b": ints(rng, (16, 6), tb, bits), "as": scalar(0.02), "az": ints(rng, (), ta), "bs": scalar(0.01),
             "bz": scalar(0, tb), "bs6": rng.uniform(0.002, 0.02, 6).astype(np.float32), "bz6": ints(rng, (6,), tb, 4),
             "ys": scalar(0.07), "yz": ints(rng, (), ty)}
    nodes = [helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"]),
             helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs6", "bz6", "ys", "yz"], ["y6"]),
             helper.make_node("QLinearMatMul", ["a", "as", "az", "b_rt", "bs6", "bz", "ys", "yz"], ["y_rt"])]
    check(nodes, feeds, inits, [("y", ty), ("y6", ty), ("y_rt", ty)])


CONVS = [dict(pads=[1, 1, 1, 1]), dict(strides=[2, 2], pads=[0, 1, 2, 1]), dict(group=2, dilations=[2, 1]),
         dict(auto_pad="SAME_UPPER", strides=[2, 1])]


@pytest.mark.parametrize("attrs", CONVS)
def test_conv_integer(rng, attrs):
    g = attrs.get("group", 1)
    feeds = {"x": ints(rng, (2, 4, 9, 8), "uint8"), "xz_rt": ints(rng, (), "uint8")}
    inits = {"w": ints(rng, (6, 4 // g, 3, 3), "uint8"), "w8": ints(rng, (6, 4 // g, 3, 3), "int8", 7),
             "xz": ints(rng, (), "uint8"), "wz": ints(rng, (), "uint8")}
    nodes = [helper.make_node("ConvInteger", ["x", "w8", "xz"], ["y"], **attrs),     # fast form, folded correction
             helper.make_node("ConvInteger", ["x", "w8", "xz_rt"], ["y_rt"], **attrs),
             helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y_wz"], **attrs),
             helper.make_node("ConvInteger", ["x", "w"], ["y0"], **attrs)]
    _, model = check(nodes, feeds, inits, [(n, "int32") for n in ("y", "y_rt", "y_wz", "y0")])
    assert [n.op_type for n in graph_of(model).nodes].count("ConvIntegerNHWC") == 4   # channels-last


def test_matmul_integer_per_row_zero_point(rng):
    """onnxruntime takes one A zero point only: numpy."""
    a, b, az, bz = ints(rng, (2, 4, 9), "int8"), ints(rng, (9, 5), "int8"), ints(rng, (4,), "int8"), \
        ints(rng, (5,), "int8")
    m = make([helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])], {"a": a}, {"b": b, "az": az, "bz": bz},
             [("y", "int32", (2, 4, 5))])
    want = (a.astype(np.int64) - az[:, None]) @ (b.astype(np.int64) - bz)
    got = ansorc.net.compile(m, trials=0)(a)
    assert np.array_equal(got[0] if isinstance(got, list) else got, want.astype(np.int32))


def test_conv_integer_1d_and_per_channel_zero_point(rng):
    """onnxruntime takes one w zero point only, onnx's reference evaluator fails on one per channel: numpy."""
    x, w, wz = ints(rng, (1, 3, 11), "uint8"), ints(rng, (4, 3, 3), "uint8"), ints(rng, (4,), "uint8")
    m = make([helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], pads=[1, 2], strides=[2])],
             {"x": x}, {"w": w, "xz": scalar(5, "uint8"), "wz": wz}, [("y", "int32", (1, 4, 6))])
    xp = np.pad(x.astype(np.int64) - 5, [(0, 0), (0, 0), (1, 2)])
    wd = w.astype(np.int64) - wz[:, None, None]
    want = np.stack([np.einsum("ck,mck->m", xp[0, :, 2 * o:2 * o + 3], wd) for o in range(6)], -1)[None]
    got = ansorc.net.compile(m, trials=0)(x)
    assert np.array_equal(got[0] if isinstance(got, list) else got, want.astype(np.int32))


@pytest.mark.parametrize("types", [("uint8", "int8"), ("int8", "int8"), ("uint8", "uint8")])
@pytest.mark.parametrize("attrs", CONVS[:3])
def test_qlinear_conv(rng, types, attrs):
    tx, tw = types
    g, bits = attrs.get("group", 1), 7 if types == ("uint8", "int8") else 8
    feeds = {"x": ints(rng, (2, 4, 9, 8), tx)}
    inits = {"w": ints(rng, (6, 4 // g, 3, 3), tw, bits), "xs": scalar(0.02), "xz": ints(rng, (), tx),
             "ws": scalar(0.01), "wz": scalar(0, tw), "ws6": rng.uniform(0.002, 0.02, 6).astype(np.float32),
             "wz6": np.zeros(6, tw), "ys": scalar(0.2), "yz": ints(rng, (), tx),
             "bias": rng.integers(-3000, 3000, 6).astype(np.int32)}
    nodes = [helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "bias"], ["y"], **attrs),
             helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws6", "wz6", "ys", "yz"], ["y6"], **attrs)]
    _, model = check(nodes, feeds, inits, [("y", tx), ("y6", tx)])
    ops = [n.op_type for n in graph_of(model).nodes]
    assert ops.count("QLinearConvNHWC") == 2, ops   # computed channels-last (layout_pass), checked above


def _error(nodes, feeds, inits, outs) -> str:
    with pytest.raises(NetError) as e:
        import_model(make(nodes, feeds, inits, outs))
    return str(e.value)


@pytest.mark.parametrize("case", ["float zero point", "per-axis length", "per-axis weights", "blocked"])
def test_bad_inputs_name_the_node(rng, case):
    x = rng.normal(size=(2, 3)).astype(np.float32)
    if case == "float zero point":
        msg = _error([helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="dq0")],
                     {"q": ints(rng, (2, 3), "uint8")}, {"s": scalar(0.1), "z": scalar(1.0)},
                     [("y", "float32", (2, 3))])
    elif case == "per-axis length":
        msg = _error([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], name="q0", axis=1)], {"x": x},
                     {"s": np.ones(4, np.float32), "z": np.zeros(4, np.uint8)}, [("y", "uint8", (2, 3))])
    elif case == "per-axis weights":
        msg = _error([helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"],
                                       name="qmm")],
                     {"a": ints(rng, (2, 3), "uint8")},
                     {"as": scalar(0.1), "az": scalar(0, "uint8"), "b": ints(rng, (3, 4), "uint8"),
                      "bs": np.ones(3, np.float32), "bz": scalar(0, "uint8"), "ys": scalar(0.1),
                      "yz": scalar(0, "uint8")}, [("y", "uint8", (2, 4))])
    else:
        msg = _error([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], name="q0", axis=1, block_size=2)],
                     {"x": x}, {"s": np.ones((2, 2), np.float32), "z": np.zeros((2, 2), np.uint8)},
                     [("y", "uint8", (2, 3))])
    # the float zero point is onnx's type check (shape inference), the others ansorc's: one line, naming the node
    name = {"float zero point": "dq0", "per-axis weights": "qmm"}.get(case, "q0")
    assert f"'{name}'" in msg or f"name: {name})" in msg, msg
    assert {"float zero point": "tensor(float)", "per-axis length": "1-D tensor of 3",
            "per-axis weights": "a single value or a 1-D tensor of 4", "blocked": "block_size"}[case] in msg, msg
    assert "\n" not in msg


def test_gather_of_a_quantized_table(rng):
    """quantize_dynamic's embeddings: Gather on the uint8 table, then DequantizeLinear (bit-exact)."""
    feeds = {"ids": rng.integers(0, 10, (2, 5)).astype(np.int64)}
    inits = {"table": ints(rng, (10, 4), "uint8"), "s": scalar(0.05), "z": ints(rng, (), "uint8")}
    nodes = [helper.make_node("Gather", ["table", "ids"], ["g"]),
             helper.make_node("DequantizeLinear", ["g", "s", "z"], ["y"])]
    check(nodes, feeds, inits, [("g", "uint8"), ("y", "float32")])
