"""Less common nn operators (ops_norm_more, LpPool, GlobalLpPool) against onnxruntime on random data."""
import numpy as np
import pytest

from .nn_harness import check_op

RNG = np.random.default_rng(1)


def r(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("axis", [-1, 1, 0])
def test_rms_norm_matches_onnxruntime(axis):
    check_op("RMSNormalization", [r(2, 3, 4), r(*(2, 3, 4)[axis:])], {"axis": axis}, opset=23)
    check_op("RMSNormalization", [r(2, 3, 4), r(4)], {"axis": axis, "epsilon": 1e-3}, opset=23, consts=(1,))


@pytest.mark.parametrize("xs,groups", [((2, 6, 3, 4), 3), ((2, 6, 5), 6), ((2, 6, 5), 1)])
def test_group_norm_matches_onnxruntime(xs, groups):
    check_op("GroupNormalization", [r(*xs) + 1, r(xs[1]), r(xs[1])], {"num_groups": groups, "epsilon": 1e-3},
             opset=21)


@pytest.mark.parametrize("attrs", [{}, {"axes": [1, 3]}])
def test_mean_variance_normalization_matches_onnxruntime(attrs):
    check_op("MeanVarianceNormalization", [r(2, 3, 4, 5)], attrs)


@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("p", [1, 2])
def test_lp_normalization_matches_onnxruntime(axis, p):
    check_op("LpNormalization", [r(2, 3, 4)], {"axis": axis, "p": p})


@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_hardmax_first_maximum_wins(opset, axis):
    x = RNG.integers(-2, 2, (2, 3, 4)).astype(np.float32)  # ties on purpose
    got = check_op("Hardmax", [x], {"axis": axis}, opset=opset)[0]
    assert set(np.unique(got)) <= {0.0, 1.0}


@pytest.mark.parametrize("p", [1, 2, 3])
def test_lp_pool_and_global_lp_pool_match_onnxruntime(p):
    check_op("LpPool", [r(1, 3, 9, 8)], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "p": p},
             opset=18)
    check_op("GlobalLpPool", [r(2, 3, 5, 4)], {"p": p})


def test_lp_pool_same_padding_and_dilations():
    check_op("LpPool", [r(1, 3, 9, 8)], {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"},
             opset=18)
    check_op("LpPool", [r(1, 3, 9)], {"kernel_shape": [3], "strides": [2], "dilations": [2]}, opset=18)


@pytest.mark.parametrize("equation,shapes", [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("ij->ji", [(3, 4)]), ("ii->i", [(4, 4)]), ("ii", [(4, 4)]),
    ("ij->", [(3, 4)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("...ij,...jk->...ik", [(2, 1, 3, 4), (2, 3, 4, 5)]),
    ("i,i", [(5,), (5,)]), ("i,j->ij", [(3,), (4,)]), ("ij,kj", [(3, 4), (5, 4)]), ("...ii->...i", [(2, 3, 3)]),
    ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]), ("ij...,jk...->ik...", [(3, 4, 2), (4, 5, 2)]),
])
def test_einsum_matches_onnxruntime(equation, shapes):
    check_op("Einsum", [r(*s) for s in shapes], {"equation": equation}, opset=12)


FUZZ_TRIALS = 25
_FUZZ_ATTRS = {
    "pads": lambda g: [g.randint(-1, 3) for _ in range(g.choice([2, 4, 6]))],
    "strides": lambda g: [g.randint(0, 3) for _ in range(g.choice([1, 2, 3]))],
    "dilations": lambda g: [g.randint(0, 3) for _ in range(g.choice([1, 2]))],
    "kernel_shape": lambda g: [g.randint(0, 4) for _ in range(g.choice([1, 2, 3]))],
    "group": lambda g: g.randint(0, 4), "axis": lambda g: g.randint(-4, 4), "keepdims": lambda g: g.randint(0, 1),
    "axes": lambda g: [g.randint(-4, 4) for _ in range(g.randint(0, 3))], "ceil_mode": lambda g: g.randint(0, 1),
    "auto_pad": lambda g: g.choice(["NOTSET", "SAME_UPPER", "VALID", "X"]), "p": lambda g: g.randint(-1, 3),
    "size": lambda g: g.randint(0, 4), "num_groups": lambda g: g.randint(0, 4), "transA": lambda g: g.randint(0, 1),
    "equation": lambda g: g.choice(["ij,jk->ik", "ii", "i->j", "ab", "...i,...i", "I"]),
    "q_num_heads": lambda g: g.randint(0, 4), "kv_num_heads": lambda g: g.randint(0, 4),
}


def test_random_shapes_and_attributes_give_results_or_one_line_errors():
    """Every op over random ranks, shapes and attribute values (many invalid): a lowering or one AnsorcError
    line, never another exception."""
    import random

    from ansorc.errors import AnsorcError
    from ansorc.ir.program import te
    from ansorc.net.ops.common import LowerContext, Node
    from ansorc.net.ops import table
    OPS = table("nn", "attention", "conv", "einsum", "pool", "norm", "norm_more", "reduce", "recurrent")
    g, crashes = random.Random(0), []
    for op, sp in sorted(OPS.items()):
        for _ in range(FUZZ_TRIALS):
            shapes = [tuple(g.randint(1, 5) for _ in range(g.randint(0, 5))) for _ in range(g.randint(1, 5))]
            attrs = {k: _FUZZ_ATTRS[k](g) for k in sp.attrs if k in _FUZZ_ATTRS and g.random() < 0.6}
            ins = [te.placeholder(s or (1,), name=f"x{i}") if g.random() < 0.7 else np.zeros(s, np.float32)
                   for i, s in enumerate(shapes)]
            node = Node(op, "n", {**attrs, "_opset": g.choice([11, 13, 18, 23])}, tuple(shapes),
                        ("float32",) * len(shapes), ((1,),), ("float32",), "m")
            try:
                sp.lower(node, ins, LowerContext())
            except AnsorcError as e:
                assert "\n" not in str(e)
            except Exception as e:  # noqa: BLE001 - collected and reported
                crashes.append(f"{op} {attrs} {shapes}: {type(e).__name__}: {e}")
    assert not crashes, crashes[:5]


@pytest.mark.parametrize("op,shapes,attrs", [
    ("Conv", [(1, 3, 8, 8), (4, 3, 3, 3), (4,)], {"pads": [1, 1, 1, 1], "strides": [2, 2]}),
    ("ConvTranspose", [(1, 3, 5, 5), (3, 2, 3, 3)], {"strides": [2, 2]}),
    ("MaxPool", [(1, 3, 8, 8)], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
    ("AveragePool", [(1, 3, 8, 8)], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
    ("LayerNormalization", [(2, 3, 4), (4,), (4,)], {}),
    ("Gemm", [(3, 4), (5, 4), (5,)], {"transB": 1, "alpha": 0.5}),
    ("ReduceL2", [(2, 3, 4)], {"axes": [1]}),
])
def test_float64_lowerings_match_onnx_reference_closely(op, shapes, attrs):
    from onnx import TensorProto
    from onnx.reference import ReferenceEvaluator

    from .nn_harness import lower_and_run, model_of
    ins = [RNG.standard_normal(s) for s in shapes]
    want = ReferenceEvaluator(model_of(op, ins, 1, attrs, 17, [TensorProto.DOUBLE])).run(
        None, {f"x{i}": a for i, a in enumerate(ins)})[0]
    got, outs = lower_and_run(op, ins, [want.shape], attrs, 17, (), ["float64"])
    assert outs[0].dtype == "float64"
    np.testing.assert_allclose(got[0], want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("op,ins,attrs,opset", [
    ("LayerNormalization", [(2, 3, 4), (4,), (4,)], {}, 17),
    ("BatchNormalization", [(2, 3, 4), (3,), (3,), (3,), (3,)], {"training_mode": 1}, 15),
    ("Attention", [(1, 2, 3, 8), (1, 2, 5, 8), (1, 2, 5, 8), (3, 7), (1, 2, 2, 8), (1, 2, 2, 8)], {}, 23),
])
def test_an_optional_output_left_out_keeps_the_next_one_in_place(op, ins, attrs, opset):
    """Outputs (Y, <omitted>, Z): the lowering returns None in the middle, Z stays third."""
    from .nn_harness import lower_and_run, model_of, run_ort
    arrays = [np.abs(r(*s)) + 0.5 for s in ins]
    want = run_ort(model_of(op, arrays, 3, attrs, opset), arrays)
    got, outs = lower_and_run(op, arrays, [want[0].shape, None, want[2].shape], attrs, opset)
    assert outs[1] is None and len(outs) == 3
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[2], want[2], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool", "LpPool"])
def test_pool_pads_as_large_as_the_kernel_are_rejected_with_one_line(op):
    """Found by the ONNX fuzzer (bench/fuzz_onnx.py, seed 145): pads >= kernel_shape put whole windows in the
    padding (MaxPool returned the lowest float, AveragePool divided by a count of 0); onnxruntime refuses them."""
    from ansorc.net.network import UnsupportedError
    from .nn_harness import lower_and_run
    with pytest.raises(UnsupportedError, match=r"pads \[2, 0, 1, 0\] must be smaller than kernel_shape \[2, 1\]"):
        lower_and_run(op, [r(1, 2, 1, 6)], [(1, 2, 3, 6)], {"kernel_shape": [2, 1], "pads": [2, 0, 1, 0]})
