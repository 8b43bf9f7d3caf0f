"""The channels-last layout pass (ansorc/net/layout_pass.py): which transposes remain on small ONNX graphs, and
the imported network (numpy reference evaluator) against onnxruntime on random data."""
import collections

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from ansorc.net.importer import graph_of, import_model, run_reference
from ansorc.net.network import UnsupportedError
from ansorc.net.ops import SUPPORT

RNG = np.random.default_rng(0)
LAYOUT_OPS = ("ToNHWC", "ToNCHW")


class G:
    """A tiny ONNX graph builder: one NCHW float input, random constant weights."""

    def __init__(self, shape=(1, 8, 10, 10)):
        self.shape, self.nodes, self.inits, self.k = shape, [], [], 0

    def const(self, array) -> str:
        name = f"c{len(self.inits)}"
        self.inits.append(numpy_helper.from_array(np.asarray(array, np.float32), name))
        return name

    def op(self, op: str, inputs, **attrs) -> str:
        self.k += 1
        out = f"t{self.k}"
        self.nodes.append(helper.make_node(op, list(inputs), [out], name=f"n{self.k}", **attrs))
        return out

    def conv(self, x: str, cin: int, cout: int, k: int = 3, stride: int = 1, group: int = 1, bias: bool = True):
        w = self.const(RNG.standard_normal((cout, cin // group, k, k)) * 0.3)
        ins = [x, w] + ([self.const(RNG.standard_normal(cout))] if bias else [])
        return self.op("Conv", ins, pads=[k // 2] * 4, strides=[stride] * 2, group=group)

    def model(self, *outputs) -> onnx.ModelProto:
        g = helper.make_graph(self.nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, self.shape)],
                              [helper.make_empty_tensor_value_info(o) for o in outputs], self.inits)
        m = onnx.shape_inference.infer_shapes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)],
                                                                ir_version=8))
        del m.graph.value_info[:]  # the output types are all the model needs
        return m


def ops(model, layout="nhwc") -> collections.Counter:
    return collections.Counter(n.op_type for n in graph_of(model, layout=layout).nodes)


def check_against_ort(model, layout="nhwc"):
    x = RNG.standard_normal([d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim])
    x = x.astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got = run_reference(import_model(model, layout=layout), [x])
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def test_conv_relu_conv_holds_no_transpose_between_the_convs():
    b = G()
    y = b.conv(b.op("Relu", [b.conv("x", 8, 16)]), 16, 8, stride=2)
    m = b.model(y)
    counted = ops(m)
    assert counted["ConvNHWC"] == 2 and counted["Conv"] == 0
    assert counted["ToNHWC"] == 1 and counted["ToNCHW"] == 1  # the input once, the output once
    check_against_ort(m)


def test_nchw_layout_leaves_the_graph_as_onnx_gives_it():
    b = G()
    m = b.model(b.conv(b.op("Relu", [b.conv("x", 8, 16)]), 16, 8))
    counted = ops(m, layout="nchw")
    assert counted["Conv"] == 2 and not any(counted[k] for k in LAYOUT_OPS + ("ConvNHWC",))
    check_against_ort(m, layout="nchw")


def test_residual_add_and_constant_broadcast_stay_channels_last():
    b = G()
    a = b.op("Relu", [b.conv("x", 8, 8)])
    s = b.op("Add", [b.conv(a, 8, 8), a])
    scaled = b.op("Mul", [s, b.const(RNG.standard_normal((8, 1, 1)))])  # per-channel constant, permuted
    m = b.model(b.conv(b.op("Sigmoid", [scaled]), 8, 4, k=1))
    counted = ops(m)
    assert counted["ToNCHW"] == 1 and counted["ToNHWC"] == 1 and counted["Add"] == 1 and counted["Mul"] == 1
    check_against_ort(m)


def test_depthwise_conv_with_clip():
    b = G()
    d = b.conv(b.conv("x", 8, 16, k=1), 16, 16, group=16, stride=2)
    m = b.model(b.conv(b.op("Clip", [d, b.const(0.0), b.const(6.0)]), 16, 8, k=1, bias=False))
    counted = ops(m)
    assert counted["ConvNHWC"] == 3 and counted["ToNCHW"] == 1
    check_against_ort(m)


def test_pools_become_channels_last():
    b = G((1, 4, 13, 13))
    p = b.op("MaxPool", [b.conv("x", 4, 8)], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    a = b.op("AveragePool", [p], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)
    gap, gmp = b.op("GlobalAveragePool", [a]), b.op("GlobalMaxPool", [a])
    m = b.model(gap, gmp)
    counted = ops(m)
    assert counted["MaxPoolNHWC"] == counted["AveragePoolNHWC"] == 1
    assert counted["GlobalAveragePoolNHWC"] == counted["GlobalMaxPoolNHWC"] == 1
    assert counted["ToNCHW"] == 2  # one per graph output
    check_against_ort(m)


def test_flatten_gets_the_nchw_value_and_concat_along_channels_stays_channels_last():
    b = G()
    c = b.op("Concat", [b.conv("x", 8, 4), b.conv("x", 8, 6)], axis=1)
    f = b.op("Flatten", [b.op("Relu", [c])])
    m = b.model(f, c)  # c is read by Relu and is a graph output too
    counted = ops(m)
    assert counted["Concat"] == 1 and counted["ToNHWC"] == 1
    assert counted["ToNCHW"] == 2  # before Flatten, and for the output c
    check_against_ort(m)


def test_an_nchw_only_consumer_and_maxpool_indices_keep_nchw():
    b = G()
    y = b.conv("x", 8, 8)
    b.nodes.append(helper.make_node("MaxPool", [y], ["p", "idx"], name="mp", kernel_shape=[2, 2]))
    sm = b.op("Softmax", [y], axis=1)
    m = b.model("p", "idx", sm)
    counted = ops(m)
    assert counted["MaxPool"] == 1 and counted["Softmax"] == 1 and counted["ToNCHW"] == 1  # made once, read twice
    check_against_ort(m)


def test_a_table_without_conv_rejects_the_channels_last_conv_as_conv():
    b = G()
    m = b.model(b.conv("x", 8, 8))
    table = {k: v for k, v in SUPPORT.items() if k != "Conv"}
    with pytest.raises(UnsupportedError, match=r"node 'n1' \(Conv\).*operator Conv is not supported"):
        import_model(m, table=table)


def test_wide_convs_read_weights_packed_by_output_channel_blocks():
    from ansorc.search.default_schedule import weight_block
    b = G((1, 8, 6, 6))
    m = b.model(b.conv(b.op("Relu", [b.conv("x", 8, 64)]), 64, 64, stride=2))
    net = import_model(m)
    block = weight_block(64)
    assert block is not None and 64 % block == 0
    assert sorted(w.shape for w in net.weights.values() if w.ndim == 5) == [(64 // block, 3, 3, c, block)
                                                                            for c in (8, 64)]
    check_against_ort(m)


def test_batchnorm_not_after_a_conv_becomes_channels_last_scale_and_shift():
    b = G()
    c = b.const  # scale, shift, mean, variance
    params = [c(RNG.uniform(0.5, 2, 8)), c(RNG.standard_normal(8)), c(RNG.standard_normal(8)), c(RNG.uniform(1, 2, 8))]
    bn = b.op("BatchNormalization", [b.op("Relu", [b.conv("x", 8, 8)])] + params, epsilon=1e-3)
    m = b.model(b.conv(bn, 8, 4))
    counted = ops(m)
    assert counted["BatchNormalization"] == 0 and counted["Mul"] == counted["Add"] == 1 and counted["ToNCHW"] == 1
    check_against_ort(m)


def _conv_tasks(model):
    from ansorc.net.fuse import fuse
    from ansorc.net.tasks import extract_tasks
    net = import_model(model)
    return [t for t in extract_tasks(net, fuse(net)) if any("conv2d_nhwc" in getattr(o, "tag", "") for o in t.dag.ops)]


def test_default_schedule_register_tiles_channels_last_convs_along_output_channels():
    """Stride-2 conv, 7x7 stem and depthwise: a register tile (conv.local) whose vector loop is the output
    channels (the packed block for group-1 convs), rows along the output width; the padding of the depthwise conv
    inlined, the epilogue (bias, ReLU) reading the tile."""
    from ansorc.search.default_schedule import default_cpu_schedule, weight_block
    from ansorc.search.task import hardware_params
    b = G((1, 3, 32, 32))
    stem = b.op("Relu", [b.conv("x", 3, 64, k=7, stride=2)])
    m = b.model(b.conv(b.op("Relu", [b.conv(stem, 64, 64, group=64)]), 64, 64, stride=2))
    tasks = _conv_tasks(m)
    assert len(tasks) == 3
    lanes = hardware_params("native").lanes("float32")
    for t in tasks:
        state = default_cpu_schedule(t.dag)
        local = next(s for s in state.stages if s.name.endswith(".local"))
        vec = local.iters[-1]
        depthwise = any(getattr(o, "tag", "") == "depthwise_conv2d_nhwc" for o in t.dag.ops)
        assert vec.annotation == "vectorize" and vec.name.startswith("i3") and vec.extent % lanes == 0
        assert local.iters[-2].name.startswith("i2")     # rows: output width
        if not depthwise:
            assert vec.extent == weight_block(64)
        pads = [s for s in state.stages if getattr(s.op, "tag", "") == "pad"]
        assert all(s.compute_at == "inline" for s in pads) == depthwise
        out = next(s for s in state.stages if s.name == t.dag.outputs[0].name)
        assert local.attach[0] == out.name   # the ReLU epilogue reads the register tile


def test_the_layout_comes_from_the_environment_and_a_bad_one_is_one_line(monkeypatch):
    from ansorc.net.network import NetError
    b = G()
    m = b.model(b.conv("x", 8, 8))
    monkeypatch.setenv("ANSORC_NET_LAYOUT", "nchw")
    assert ops(m, layout=None)["Conv"] == 1
    monkeypatch.setenv("ANSORC_NET_LAYOUT", "NHWC")
    assert ops(m, layout=None)["ConvNHWC"] == 1
    with pytest.raises(NetError, match="layout 'nwhc' is not one of nhwc, nchw"):
        graph_of(m, layout="nwhc")
    monkeypatch.setenv("ANSORC_NET_LAYOUT", "chw")
    with pytest.raises(NetError, match="layout 'chw' is not one of"):
        graph_of(m)
