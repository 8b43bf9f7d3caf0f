"""The ONNX importer on small hand-built models, lowered with the test table (mini_ops.py) and compared with
onnx's ReferenceEvaluator on the original (unfolded) model."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from ansorc.ir.program.te import PlaceholderOp
from ansorc.net.importer import graph_of, import_model, run_reference
from ansorc.net.lowering import check_attr_types
from ansorc.net.network import NetError, UnsupportedError

from .mini_ops import TABLE

F = TensorProto.FLOAT


def model(nodes, inputs, outputs, inits=(), opset=17, name="tiny"):
    graph = helper.make_graph(nodes, name, inputs, outputs, [numpy_helper.from_array(a, n) for n, a in inits])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def vi(name, shape, elem=F):
    return helper.make_tensor_value_info(name, elem, shape)


def reference(m, feeds):
    return ReferenceEvaluator(m).run(None, feeds)


def close(got, want, tol=1e-5):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


def conv_bn(rng, conv_used_twice=False):
    w = rng.normal(0, 0.3, (4, 3, 3, 3)).astype(np.float32)
    b = rng.normal(0, 0.1, 4).astype(np.float32)
    bn = [("g", rng.uniform(0.5, 1.5, 4)), ("beta", rng.normal(0, 0.1, 4)), ("mean", rng.normal(0, 0.1, 4)),
          ("var", rng.uniform(0.5, 2.0, 4))]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "g", "beta", "mean", "var"], ["y"], name="bn",
                              epsilon=1e-3),
             helper.make_node("Relu", ["y"], ["out"], name="relu")]
    outputs = [vi("out", [1, 4, 6, 6])]
    if conv_used_twice:
        outputs.append(vi("c", [1, 4, 6, 6]))
    inits = [("w", w), ("b", b)] + [(n, a.astype(np.float32)) for n, a in bn]
    return model(nodes, [vi("x", [1, 3, 6, 6])], outputs, inits)


def test_matmul_add_relu_matches_reference(rng):
    w = rng.normal(size=(8, 5)).astype(np.float32)
    b = rng.normal(size=(5,)).astype(np.float32)
    m = model([helper.make_node("MatMul", ["x", "w"], ["t"]), helper.make_node("Add", ["t", "b"], ["u"]),
               helper.make_node("Relu", ["u"], ["y"])], [vi("x", [3, 8])], [vi("y", [3, 5])], [("w", w), ("b", b)])
    net = import_model(m, table=TABLE)
    assert net.input_names == ("x",) and net.output_names == ("y",) and net.output_shapes == ((3, 5),)
    assert sorted(a.shape for a in net.weights.values()) == [(5,), (8, 5)]
    x = rng.normal(size=(3, 8)).astype(np.float32)
    close(run_reference(net, [x]), reference(m, {"x": x}))
    close(run_reference(net, {"x": x}), reference(m, {"x": x}))


def test_batchnorm_folded_into_conv_equals_unfolded(rng):
    m = conv_bn(rng)
    assert [n.op_type for n in graph_of(m, layout="nchw").nodes] == ["Conv", "Relu"]
    net = import_model(m, table=TABLE)  # the test table has no BatchNormalization: only the folded form lowers
    x = rng.normal(size=(1, 3, 6, 6)).astype(np.float32)
    close(run_reference(net, [x]), reference(m, {"x": x}), tol=1e-4)


def test_batchnorm_not_folded_when_conv_output_is_read_elsewhere(rng):
    m = conv_bn(rng, conv_used_twice=True)
    assert [n.op_type for n in graph_of(m, layout="nchw").nodes] == ["Conv", "BatchNormalization", "Relu"]
    with pytest.raises(UnsupportedError, match="BatchNormalization"):  # (channels-last, it is a scale and shift)
        import_model(m, table=TABLE, layout="nchw")


def test_dropout_and_identity_removed(rng):
    nodes = [helper.make_node("Identity", ["x"], ["a"]), helper.make_node("Dropout", ["a"], ["d", "mask"]),
             helper.make_node("Relu", ["d"], ["r"]), helper.make_node("Identity", ["r"], ["y"]),
             helper.make_node("Identity", ["x"], ["xcopy"])]
    m = model(nodes, [vi("x", [2, 3])], [vi("y", [2, 3]), vi("xcopy", [2, 3]), vi("mask", [2, 3], TensorProto.BOOL)])
    assert [n.op_type for n in graph_of(m).nodes] == ["Relu"]
    net = import_model(m, table=TABLE)
    assert not any(isinstance(t.op, PlaceholderOp) for t in net.outputs)  # copies of the input and the mask
    x = rng.normal(size=(2, 3)).astype(np.float32)
    got = run_reference(net, [x])
    close(got, [np.maximum(x, 0), x, np.ones((2, 3), bool)])


def test_constants_folded(rng):
    c = helper.make_tensor("cv", F, [3], [1.0, 2.0, 3.0])
    nodes = [helper.make_node("Constant", [], ["c"], value=c), helper.make_node("Mul", ["c", "k"], ["c2"]),
             helper.make_node("Shape", ["x"], ["s"], start=1), helper.make_node("Cast", ["s"], ["sf"], to=F),
             helper.make_node("Add", ["c2", "sf"], ["c3"]), helper.make_node("Add", ["x", "c3"], ["y"])]
    m = model(nodes, [vi("x", [2, 3])], [vi("y", [2, 3])], [("k", np.full(3, 2.0, np.float32))])
    g = graph_of(m)
    assert [n.op_type for n in g.nodes] == ["Add"]
    np.testing.assert_array_equal(g.consts["c3"], [5.0, 7.0, 9.0])
    x = rng.normal(size=(2, 3)).astype(np.float32)
    close(run_reference(import_model(m, table=TABLE), [x]), reference(m, {"x": x}))


def test_dynamic_dim_needs_input_shapes(rng):
    m = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", ["batch", 4])], [vi("y", ["batch", 4])])
    with pytest.raises(NetError, match=r"input 'x' has no static size for dimension 0 \(batch\).*input_shapes"):
        import_model(m, table=TABLE)
    net = import_model(m, input_shapes={"x": (3, 4)}, table=TABLE)
    x = rng.normal(size=(3, 4)).astype(np.float32)
    close(run_reference(net, [x]), [np.maximum(x, 0)])
    with pytest.raises(NetError, match="not an input"):
        import_model(m, input_shapes={"z": (3, 4)}, table=TABLE)
    with pytest.raises(NetError, match=r"gives \(3, 5\) for input 'x'"):
        import_model(m, input_shapes={"x": (3, 5)}, table=TABLE)
    for bad in [(0, 4), (-1, 4), ("a", 4), 7]:
        with pytest.raises(NetError, match="must be a sequence of positive integers"):
            import_model(m, input_shapes={"x": bad}, table=TABLE)


@pytest.mark.parametrize("content", [b"", b"\x00\x01garbage\xff" * 10, b"\x0a" * 64, b"{\"graph\": 1}"])
def test_malformed_file_is_one_line_net_error(tmp_path, content):
    p = tmp_path / "bad.onnx"
    p.write_bytes(content)
    with pytest.raises(NetError, match="bad.onnx: not a valid ONNX model") as e:
        import_model(str(p), table=TABLE)
    assert "\n" not in str(e.value)


def test_deeply_nested_file_is_net_error(tmp_path):
    p = tmp_path / "deep.onnx"
    # ModelProto.graph -> GraphProto.node -> NodeProto.attribute -> AttributeProto.g -> ... 3,000 levels
    graph = b""
    for _ in range(1000):
        attr = b"\x32" + _varint(len(graph)) + graph
        node = b"\x2a" + _varint(len(attr)) + attr
        graph = b"\x0a" + _varint(len(node)) + node
    p.write_bytes(b"\x3a" + _varint(len(graph)) + graph)
    with pytest.raises(NetError, match="not a valid ONNX model") as e:
        import_model(str(p), table=TABLE)
    assert "\n" not in str(e.value)


def _varint(n):
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out


def test_missing_file_is_net_error(tmp_path):
    with pytest.raises(NetError, match="cannot read"):
        import_model(str(tmp_path / "nope.onnx"), table=TABLE)


def test_unsupported_op_names_op_node_and_model():
    m = model([helper.make_node("Relu", ["x"], ["r"], name="first"),
               helper.make_node("Softsign", ["r"], ["y"], name="soft1")],
              [vi("x", [2, 3])], [vi("y", [2, 3])], name="mymodel")
    with pytest.raises(UnsupportedError) as e:
        import_model(m, table=TABLE)
    msg = str(e.value)
    assert "\n" not in msg and "Softsign" in msg and "'soft1'" in msg and "'mymodel'" in msg


def test_unsupported_attribute_and_dtype():
    m = model([helper.make_node("Conv", ["x", "w"], ["y"], name="c", dilations=[2, 2])],
              [vi("x", [1, 1, 5, 5])], [vi("y", [1, 1, 3, 3])], [("w", np.ones((1, 1, 2, 2), np.float32))])
    with pytest.raises(UnsupportedError, match="'c' \\(Conv\\).*attribute 'dilations'"):
        import_model(m, table=TABLE)
    m = model([helper.make_node("Relu", ["x"], ["y"], name="r")], [vi("x", [3], TensorProto.INT32)],
              [vi("y", [3], TensorProto.INT32)])
    with pytest.raises(UnsupportedError, match="'r' \\(Relu\\).*dtype int32"):
        import_model(m, table=TABLE)
    m = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [3], TensorProto.FLOAT16)],
              [vi("y", [3], TensorProto.FLOAT16)])
    with pytest.raises(UnsupportedError, match="float16"):
        import_model(m, table=TABLE)


def test_other_domain_is_unsupported():
    m = model([helper.make_node("Relu", ["x"], ["y"], name="r", domain="com.example")],
              [vi("x", [3])], [vi("y", [3])])
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    with pytest.raises(UnsupportedError, match="'r' \\(Relu\\).*domain 'com.example'"):
        import_model(m, table=TABLE)


def test_names_kept_and_te_names_c_safe(rng):
    m = model([helper.make_node("Relu", ["in put:0"], ["out/1"], name="bad name;rm -rf")],
              [vi("in put:0", [4])], [vi("out/1", [4])], name="3d net;$(x)")
    net = import_model(m, table=TABLE)
    assert net.name == "model_3d_net___x_" and import_model(relu_like(), table=TABLE).name == "tiny"
    assert net.input_names == ("in put:0",) and net.output_names == ("out/1",)
    for t in net.inputs + net.outputs:
        assert t.name.replace("_", "").isalnum() and not t.name[0].isdigit()
    x = rng.normal(size=4).astype(np.float32)
    close(run_reference(net, [x]), [np.maximum(x, 0)])


def relu_like():
    return model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [4])], [vi("y", [4])])


def test_rank0_tensors(rng):
    m = model([helper.make_node("Add", ["x", "s"], ["y"])], [vi("x", [])], [vi("y", [])],
              [("s", np.array(2.5, np.float32))])
    assert graph_of(m).consts["s"].shape == ()  # constants keep their ONNX rank (lowerings see the true shape)
    net = import_model(m, table=TABLE)
    assert net.output_shapes == ((),) and net.inputs[0].shape == (1,)
    got = run_reference(net, [np.array(1.0, np.float32)])
    assert got[0].shape == () and got[0] == np.float32(3.5)


def test_wrong_inputs_at_run_time(rng):
    m = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2, 3])], [vi("y", [2, 3])])
    net = import_model(m, table=TABLE)
    with pytest.raises(NetError, match="takes 1 inputs"):
        run_reference(net, [])
    with pytest.raises(NetError, match="input 'x' must be float32 of shape"):
        run_reference(net, [np.zeros((3, 2), np.float32)])
    with pytest.raises(NetError, match="input 'x' must be float32"):
        run_reference(net, [np.zeros((2, 3), np.float64)])


def test_shape_inference_failure_names_node():
    m = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [vi("x", [2, 3]), vi("w", [4, 5])],
              [vi("y", [2, 5])])
    with pytest.raises(NetError, match="shape inference failed.*mm"):
        import_model(m, table=TABLE)


def test_shapes_inferred_again_after_folding(rng):
    """A Reshape whose target shape is computed (Cast/Mul, which onnx's data propagation does not follow) has no
    static shape after the first inference; once the target is folded, inference runs again and finds it."""
    nodes = [helper.make_node("Shape", ["y"], ["s"]), helper.make_node("Cast", ["s"], ["sf"], to=F),
             helper.make_node("Mul", ["sf", "one"], ["sf2"]),
             helper.make_node("Cast", ["sf2"], ["si"], to=TensorProto.INT64),
             helper.make_node("Reshape", ["x", "si"], ["r"]), helper.make_node("Add", ["r", "y"], ["out"])]
    m = model(nodes, [vi("x", [2, 6]), vi("y", [3, 4])], [vi("out", [3, 4])], [("one", np.ones(2, np.float32))])
    first = onnx.shape_inference.infer_shapes(m, strict_mode=True, data_prop=True)
    r = next(v for v in first.graph.value_info if v.name == "r")
    assert not all(d.HasField("dim_value") for d in r.type.tensor_type.shape.dim)
    g = graph_of(m)
    assert g.types["r"][0] == (3, 4) and [n.op_type for n in g.nodes] == ["Reshape", "Add"]
    x, y = rng.normal(size=(2, 6)).astype(np.float32), rng.normal(size=(3, 4)).astype(np.float32)
    close(run_reference(import_model(m, table=TABLE), [x, y]), [x.reshape(3, 4) + y])


def test_invalid_model_proto_is_net_error():
    m = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2])], [vi("y", [2])], name="broken")
    m.graph.node[0].input[0] = "nowhere"
    with pytest.raises(NetError, match="model 'broken': not a valid ONNX model: .*nowhere"):
        import_model(m, table=TABLE)


def test_random_and_training_dropout_are_not_removed():
    """RandomUniformLike is never folded (its value is not a function of its input); a Dropout in training mode
    is not the identity: both stay, and the test table lacks them."""
    m = model([helper.make_node("RandomUniformLike", ["k"], ["r"], name="rand"),
               helper.make_node("Add", ["x", "r"], ["y"])], [vi("x", [3])], [vi("y", [3])],
              [("k", np.zeros(3, np.float32))])
    assert [n.op_type for n in graph_of(m).nodes] == ["RandomUniformLike", "Add"]
    m = model([helper.make_node("Dropout", ["x", "ratio", "train"], ["y"], name="drop")], [vi("x", [3])],
              [vi("y", [3])], [("ratio", np.array(0.5, np.float32)), ("train", np.array(True))])
    with pytest.raises(UnsupportedError, match="'drop' \\(Dropout\\)"):
        import_model(m, table=TABLE)


def test_name_that_is_not_utf8_is_net_error():
    m = model([helper.make_node("Relu", ["x"], ["y"], name="rQlu")], [vi("x", [2])], [vi("y", [2])])
    data = m.SerializeToString().replace(b"rQlu", b"r\xd5lu")
    with pytest.raises(NetError, match="not a valid ONNX model: a name is not valid UTF-8"):
        import_model(data, table=TABLE)


def test_attribute_of_the_wrong_type_is_net_error():
    m = model([helper.make_node("Conv", ["x", "w"], ["y"], name="c", group="1")],
              [vi("x", [1, 1, 3, 3])], [vi("y", [1, 1, 2, 2])], [("w", np.ones((1, 1, 2, 2), np.float32))])
    with pytest.raises(NetError, match="(?i)group.*STRING|STRING.*group") as e:
        import_model(m.SerializeToString(), table=TABLE)
    assert "'c'" in str(e.value) or "Name: c " in str(e.value)
    with pytest.raises(NetError, match="'c' \\(Conv\\).*attribute 'group' is STRING, the operator expects INT"):
        check_attr_types(m.graph.node[0], 17, "node 'c' (Conv)")


def test_large_constant_results_are_computed_at_run_time(monkeypatch):
    """Folding stops at FOLD_LIMIT elements (a small constant expanded into a huge one stays a computation)."""
    import ansorc.net.import_passes as passes
    monkeypatch.setattr(passes, "FOLD_LIMIT", 5)
    m = model([helper.make_node("Mul", ["a", "b"], ["c"]), helper.make_node("Add", ["x", "c"], ["y"])],
              [vi("x", [2, 3])], [vi("y", [2, 3])],
              [("a", np.ones((2, 3), np.float32)), ("b", np.full((2, 3), 2.0, np.float32))])
    assert [n.op_type for n in graph_of(m).nodes] == ["Mul", "Add"]
    monkeypatch.setattr(passes, "FOLD_LIMIT", 6)
    assert [n.op_type for n in graph_of(m).nodes] == ["Add"]
