"""ONNX nn operators (ansorc/net/ops/nn.py and kin): each lowered from a one-node model, evaluated with the
numpy reference and compared with onnxruntime on random data; rejections are one line naming the node; ONNX's
node test suite."""
import collections

import numpy as np
import pytest

from ansorc.ir.program.dag import ComputeDAG
from ansorc.ir.program.te import ComputeOp
from ansorc.net.network import UnsupportedError, tensors_by_name
from ansorc.net.ops.common import LowerContext, Node
from ansorc.net.ops import table

from .nn_harness import check_op, lower_and_run

OPS = table("nn", "attention", "conv", "einsum", "pool", "norm", "norm_more", "reduce", "recurrent")

RNG = np.random.default_rng(0)


def r(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def positive(*shape):
    return (RNG.random(shape) + 0.5).astype(np.float32)


CONV = [  # (input shape, weight shape, bias?, attrs)
    ((1, 3, 8, 8), (4, 3, 3, 3), False, {"pads": [1, 1, 1, 1]}),
    ((1, 3, 8, 8), (4, 3, 3, 3), True, {"strides": [2, 2]}),
    ((2, 4, 9, 7), (6, 2, 3, 2), True, {"group": 2, "dilations": [2, 1], "pads": [1, 0, 2, 1]}),
    ((1, 4, 9, 7), (4, 1, 3, 3), False, {"group": 4, "auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    ((1, 4, 9, 7), (8, 1, 3, 3), True, {"group": 4, "auto_pad": "SAME_LOWER", "strides": [2, 2]}),
    ((1, 4, 9), (8, 4, 3), False, {"auto_pad": "VALID", "strides": [2]}),
    ((1, 2, 5, 6, 7), (3, 2, 3, 3, 3), True, {"pads": [1, 1, 1, 1, 1, 1]}),
    ((1, 1, 5, 5), (1, 1, 1, 1), False, {}),
]


@pytest.mark.parametrize("xs,ws,bias,attrs", CONV)
@pytest.mark.parametrize("weights_const", [False, True])
def test_conv_matches_onnxruntime(xs, ws, bias, attrs, weights_const):
    ins = [r(*xs), r(*ws)] + ([r(ws[0])] if bias else [])
    check_op("Conv", ins, attrs, consts=(1, 2) if weights_const else ())


CONV_T = [
    ((1, 3, 5, 5), (3, 2, 3, 3), False, {}),
    ((1, 4, 5, 6), (4, 3, 3, 4), True, {"strides": [2, 3], "pads": [1, 0, 1, 2], "group": 2}),
    ((1, 4, 5, 6), (4, 1, 3, 3), False, {"strides": [2, 2], "output_padding": [1, 1], "group": 4,
                                         "dilations": [2, 1]}),
    ((1, 3, 5, 6), (3, 2, 3, 3), False, {"strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    ((1, 3, 5, 6), (3, 2, 3, 3), True, {"strides": [2, 2], "auto_pad": "SAME_LOWER"}),
    ((1, 3, 5, 6), (3, 2, 3, 3), False, {"strides": [2, 2], "output_shape": [10, 12]}),
    ((1, 3, 5), (3, 2, 3), False, {"strides": [3], "pads": [3, 1]}),
    # strided, dilation 1: the phase form (K % s != 0, K < s, pads past the kernel, 3-D, depthwise)
    ((1, 2, 4, 4, 3), (2, 3, 3, 2, 4), True, {"strides": [2, 1, 3], "pads": [1, 0, 2, 0, 1, 1]}),
    ((1, 4, 5, 5), (4, 1, 2, 2), True, {"strides": [3, 3], "group": 4}),
    ((1, 3, 4, 5), (3, 2, 3, 3), False, {"strides": [2, 2], "pads": [3, 2, 2, 3], "output_padding": [1, 1]}),
]


@pytest.mark.parametrize("xs,ws,bias,attrs", CONV_T)
def test_conv_transpose_matches_onnxruntime(xs, ws, bias, attrs):
    check_op("ConvTranspose", [r(*xs), r(*ws)] + ([r(ws[1] * attrs.get("group", 1))] if bias else []), attrs,
             consts=(1,))


@pytest.mark.parametrize("consts", [(), (1,)])
def test_strided_conv_transpose_multiplies_no_inserted_zeros(consts):
    """Stride 2, 4x4 kernel: each output takes 2x2 taps (the useful ones), not 4x4 over a zero-inserted input;
    with constant weights the phases are channels-last (N, r..., q..., M), else (N, M, r..., q...)."""
    xs, ws = (1, 8, 6, 6), (8, 4, 4, 4)
    _, outs = lower_and_run("ConvTranspose", [r(*xs), r(*ws)], [(1, 4, 12, 12)], {"strides": [2, 2], "pads": [1] * 4},
                            consts=consts)
    phases = outs[0].op.inputs[0]
    assert phases.shape == ((1, 2, 2, 6, 6, 4) if consts else (1, 4, 2, 2, 6, 6))
    inputs = [t for t in tensors_by_name(outs).values() if not isinstance(t.op, ComputeOp)]
    assert ComputeDAG(inputs + outs).flop_count == 2 * 4 * 12 * 12 * 8 * 2 * 2


POOL = [  # (input shape, attrs, opset)
    ((1, 3, 8, 8), {"kernel_shape": [2, 2], "strides": [2, 2]}, 17),
    ((1, 3, 9, 8), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, 17),
    ((1, 3, 9, 8), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1}, 17),
    ((1, 3, 10, 8), {"kernel_shape": [3, 2], "strides": [3, 3], "pads": [0, 1, 1, 0], "ceil_mode": 1}, 17),
    ((1, 3, 9, 8), {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"}, 17),
    ((1, 3, 9, 8), {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_LOWER"}, 17),
    ((1, 3, 9, 8), {"kernel_shape": [3, 3], "auto_pad": "VALID"}, 17),
    ((1, 3, 11), {"kernel_shape": [3], "strides": [2], "dilations": [2], "pads": [2, 1]}, 19),
    ((1, 2, 5, 6, 7), {"kernel_shape": [2, 3, 3], "pads": [1, 1, 1, 0, 1, 1]}, 19),
]


@pytest.mark.parametrize("xs,attrs,opset", POOL)
@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
def test_pool_matches_onnxruntime(op, xs, attrs, opset):
    check_op(op, [r(*xs)], attrs, opset=opset)


@pytest.mark.parametrize("xs,attrs", [
    ((2, 3, 9, 8), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ((2, 3, 9, 8), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "storage_order": 1}),
    ((2, 3, 9, 8), {"kernel_shape": [2, 3], "strides": [2, 1], "storage_order": 1}),
    ((2, 3, 9), {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}),
])
def test_max_pool_indices_output(xs, attrs):
    check_op("MaxPool", [r(*xs)], attrs, n_out=2, out_types=[1, 7])


@pytest.mark.parametrize("attrs,opset", [
    ({"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "count_include_pad": 1}, 17),
    ({"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "count_include_pad": 1, "ceil_mode": 1}, 17),
    ({"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 2, 0, 1], "count_include_pad": 1,
      "dilations": [2, 1]}, 19),
])
def test_average_pool_count_include_pad(attrs, opset):
    check_op("AveragePool", [r(1, 3, 9, 8)], attrs, opset=opset)


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
@pytest.mark.parametrize("xs", [(2, 3, 5, 4), (2, 3, 5), (1, 2, 3, 4, 5)])
def test_global_pool_matches_onnxruntime(op, xs):
    check_op(op, [r(*xs)])


@pytest.mark.parametrize("consts", [(), (1, 2, 3, 4)])
@pytest.mark.parametrize("xs", [(2, 3, 4, 5), (2, 3)])
def test_batch_norm_matches_onnxruntime(xs, consts):
    check_op("BatchNormalization", [r(*xs), r(3), r(3), r(3), positive(3)], {"epsilon": 1e-3}, consts=consts,
             opset=15)


def test_batch_norm_training_mode_uses_batch_statistics_and_updates_running_ones():
    check_op("BatchNormalization", [r(2, 3, 4, 5), r(3), r(3), r(3), positive(3)],
             {"epsilon": 1e-3, "training_mode": 1, "momentum": 0.8}, n_out=3, opset=15)


def test_batch_norm_with_constant_statistics_is_one_compute():
    _, outs = lower_and_run("BatchNormalization", [r(1, 3, 4, 4), r(3), r(3), r(3), positive(3)], [(1, 3, 4, 4)],
                            {}, consts=(1, 2, 3, 4))
    assert outs[0].op.combiner is None and all(not isinstance(t.op, ComputeOp) for t in outs[0].op.inputs)


@pytest.mark.parametrize("xs", [(2, 3, 4, 5), (2, 3, 7)])
def test_instance_norm_matches_onnxruntime(xs):
    check_op("InstanceNormalization", [r(*xs) + 3, r(3), r(3)], {"epsilon": 1e-3}, consts=(1, 2))


@pytest.mark.parametrize("axis", [-1, 0, 1, 2])
def test_layer_norm_matches_onnxruntime(axis):
    norm = (2, 3, 4)[axis:]
    check_op("LayerNormalization", [r(2, 3, 4), r(*norm), r(*norm)], {"axis": axis})


def test_layer_norm_scale_only_broadcast_and_stat_outputs():
    check_op("LayerNormalization", [r(2, 3, 4), r(4)], {"epsilon": 1e-3}, consts=(1,))
    check_op("LayerNormalization", [r(2, 3, 4) + 2, r(3, 4), r(4)], {"axis": 1}, n_out=3)


@pytest.mark.parametrize("xs,attrs", [((1, 7, 4, 5), {"size": 3}), ((2, 5, 3, 2), {"size": 5}),
                                      ((2, 6, 4, 5), {"size": 5, "alpha": 1e-2, "beta": 0.5, "bias": 2.0})])
def test_lrn_matches_onnxruntime(xs, attrs):  # onnxruntime takes only odd sizes and 4-D inputs
    check_op("LRN", [r(*xs) * 3], attrs)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize("axis", [None, -1, 0, 1, 2])
def test_softmax_axis_semantics_match_onnxruntime(op, opset, axis):
    check_op(op, [r(2, 3, 4) * 4], {} if axis is None else {"axis": axis}, opset=opset)


def test_softmax_float64_and_1d():
    check_op("Softmax", [r(3, 5, dtype=np.float64)], {}, opset=13, out_types=[11])
    check_op("LogSoftmax", [r(7)], {}, opset=13)


REDUCE = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare", "ReduceL1",
          "ReduceL2", "ReduceLogSum", "ReduceLogSumExp"]


@pytest.mark.parametrize("op", REDUCE)
@pytest.mark.parametrize("keep", [0, 1])
@pytest.mark.parametrize("axes", [[1], [0, 2], [-1], None])
def test_reduce_axes_attribute_and_input(op, keep, axes):
    x = np.abs(r(2, 3, 4)) + 0.1 if op in ("ReduceLogSum", "ReduceL2") else r(2, 3, 4)
    check_op(op, [x], {"keepdims": keep, **({} if axes is None else {"axes": axes})}, opset=11)
    axes_in = None if axes is None else np.array(axes, np.int64)
    check_op(op, [x, axes_in], {"keepdims": keep}, opset=18, consts=(1,))


@pytest.mark.parametrize("op", REDUCE)
def test_reduce_noop_with_empty_axes(op):
    x = np.abs(r(2, 3)) + 0.1
    check_op(op, [x, np.zeros(0, np.int64)], {"noop_with_empty_axes": 1}, opset=18, consts=(1,))


def test_reduce_sum_axes_input_at_opset_13_and_integers():
    check_op("ReduceSum", [r(2, 3, 4), np.array([1], np.int64)], {}, opset=13, consts=(1,))
    xi = RNG.integers(-5, 5, (3, 4, 5)).astype(np.int64)
    check_op("ReduceSum", [xi], {"axes": [1]}, opset=11, out_types=[7])
    check_op("ReduceMax", [xi.astype(np.int32)], {"axes": [0, 2], "keepdims": 0}, opset=11, out_types=[6])


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("keep,last", [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_arg_reductions_first_and_last_index(op, keep, last, axis):
    x = RNG.integers(-3, 3, (3, 4, 5)).astype(np.float32)  # ties on purpose
    check_op(op, [x], {"axis": axis, "keepdims": keep, "select_last_index": last}, opset=13, out_types=[7])


@pytest.mark.parametrize("ta,tb", [(0, 0), (0, 1), (1, 0), (1, 1)])
@pytest.mark.parametrize("alpha,beta", [(1.0, 1.0), (0.5, 2.0)])
@pytest.mark.parametrize("consts", [(), (1, 2)])
def test_gemm_matches_onnxruntime(ta, tb, alpha, beta, consts):
    a = r(4, 3) if ta else r(3, 4)
    b = r(5, 4) if tb else r(4, 5)
    attrs = {"transA": ta, "transB": tb, "alpha": alpha, "beta": beta}
    for c in (r(3, 5), r(5), r(3, 1), np.array(0.7, np.float32)):
        check_op("Gemm", [a, b, c], attrs, opset=13, consts=consts)
    check_op("Gemm", [a, b], attrs, opset=13, consts=tuple(i for i in consts if i < 2))


@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)),
                                   ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 2)),
                                   ((2, 3, 4), (2, 4, 5))])
def test_matmul_broadcasting_matches_onnxruntime(sa, sb):
    check_op("MatMul", [r(*sa), r(*sb)])
    check_op("MatMul", [r(*sa, dtype=np.float64), r(*sb, dtype=np.float64)], consts=(1,), out_types=[11])


def test_a_wrong_lowering_would_be_caught():
    """The harness compares for real: a Softmax checked against LogSoftmax's expected output fails."""
    x = r(2, 5)
    ours, _ = lower_and_run("Softmax", [x], [(2, 5)], {}, opset=13)
    assert np.allclose(ours[0].sum(axis=1), 1.0, atol=1e-5)
    with pytest.raises(AssertionError):
        np.testing.assert_allclose(ours[0], np.log(ours[0]))


# ----------------------------------------------------------------------------- structure and rejections

def _conv_output(name):
    from ansorc.ir.program import te
    ctx = LowerContext()
    x = te.placeholder((1, 8, 14, 14), name=ctx.name("x"))
    node = Node("Conv", name, {"pads": [1, 1, 1, 1], "_opset": 17}, ((1, 8, 14, 14), (16, 8, 3, 3)),
                ("float32", "float32"), ((1, 16, 14, 14),), ("float32",), "m")
    out = OPS["Conv"].lower(node, [x, r(16, 8, 3, 3)], ctx)[0]
    (weight,) = [t for t in out.op.inputs if t.name in ctx.weights]
    return x, weight, out


def test_conv_is_a_pad_stage_and_one_multiply_add_reduction_with_a_name_independent_key():
    x1, w1, c1 = _conv_output("first")
    x2, w2, c2 = _conv_output("second conv")
    assert c1.op.combiner == "sum" and len(c1.op.reduce_axes) == 3
    pad = [t for t in c1.op.inputs if isinstance(t.op, ComputeOp)]
    assert len(pad) == 1 and pad[0].op.tag == "pad" and pad[0].shape == (1, 8, 16, 16)
    assert ComputeDAG([x1, w1, c1]).workload_key == ComputeDAG([x2, w2, c2]).workload_key


def _node(op, attrs, in_shapes, out_shapes, dtype="float32"):
    return Node(op, "bad_node", {**attrs, "_opset": 17}, tuple(in_shapes), (dtype,) * len(in_shapes),
                tuple(out_shapes), ("float32",) * len(out_shapes), "mymodel")


@pytest.mark.parametrize("op,attrs,shapes,dtype,words", [
    ("Conv", {"foo": 1}, [(1, 3, 8, 8), (4, 3, 3, 3)], "float32", "attribute 'foo'"),
    ("Conv", {}, [(1, 3, 8, 8), (4, 3, 3, 3)], "int64", "dtype int64"),
    ("Conv", {"group": 2}, [(1, 3, 8, 8), (4, 3, 3, 3)], "float32", "group=2"),
    ("Conv", {"auto_pad": "BOGUS"}, [(1, 3, 8, 8), (4, 3, 3, 3)], "float32", "auto_pad"),
    ("Conv", {}, [(1, 3, 2, 8, 8, 8), (4, 3, 1, 3, 3, 3)], "float32", "3-D"),
    ("MaxPool", {"kernel_shape": [2, 2], "auto_pad": "SAME"}, [(1, 3, 8, 8)], "float32", "auto_pad='SAME'"),
    ("ReduceProd", {}, [(4, 100)], "float32", "ReduceProd"),
    ("BatchNormalization", {"spatial": 0}, [(1, 3, 2, 2)] + [(3,)] * 4, "float32", "spatial"),
    ("Softmax", {"axis": 5}, [(2, 3)], "float32", "axis 5"),
    ("MatMul", {}, [(3, 4), (5, 6)], "float32", "inner dimensions"),
])
def test_rejections_are_one_line_naming_node_and_model(op, attrs, shapes, dtype, words):
    from ansorc.ir.program import te
    ins = [te.placeholder(s, "float32", name=f"in{i}") for i, s in enumerate(shapes)]
    outs = [(1,)]
    with pytest.raises(UnsupportedError) as err:
        OPS[op].lower(_node(op, attrs, shapes, outs, dtype), ins, LowerContext())
    msg = str(err.value)
    assert words in msg and "'bad_node'" in msg and "'mymodel'" in msg and "\n" not in msg


def test_reduce_axes_computed_at_run_time_is_rejected():
    from ansorc.ir.program import te
    x, axes = te.placeholder((2, 3), name="x"), te.placeholder((1,), "int64", name="axes")
    node = _node("ReduceSum", {}, [(2, 3), (1,)], [(2, 1)])
    with pytest.raises(UnsupportedError, match="axes input must be a constant"):
        OPS["ReduceSum"].lower(node, [x, axes], LowerContext())


# ----------------------------------------------------------------------------- ONNX's own node tests

@pytest.mark.slow
def test_onnx_node_suite_for_nn_ops():
    from .onnx_node_cases import node_cases, run_case
    outcomes = collections.defaultdict(list)
    for case in node_cases(OPS):
        outcome, detail = run_case(case)
        outcomes[outcome].append(f"{case.name}: {detail}")
    counts = {k: len(v) for k, v in outcomes.items()}
    print(f"ONNX node tests of nn ops: {counts}")
    assert not outcomes["crash"] and not outcomes["wrong"], outcomes["crash"] + outcomes["wrong"]
    assert counts.get("pass", 0) >= 350, counts
    assert all("\n" not in d for k in ("unsupported", "rejected") for d in outcomes[k])
