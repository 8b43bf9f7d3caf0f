"""Lowered ONNX element-wise and shape ops compiled to C (naive schedule) agree with the numpy evaluator: the
places where C and numpy semantics part (integer division, casts to bool, erf's selects, floor modulo, clamped
and selected indices) are checked on the real compiler."""
import numpy as np
import pytest

from ansorc import te
from ansorc.net.ops.common import LowerContext, Node
from ansorc.net.ops import table
from tests.cpu.helpers import check_kernel

EW, SH = table("elementwise", "activation", "trig"), table("shape", "shape_const", "resize")


def _node(op, in_shapes, dtypes, attrs=None, out_dtypes=("float32",)):
    return Node(op, f"{op}_0", {**(attrs or {}), "_opset": 18}, tuple(in_shapes), tuple(dtypes), ((),),
                tuple(out_dtypes), model="m")


def test_integer_ops_and_bool_casts_compile_like_the_evaluator():
    a, b = te.placeholder((4, 16), "int32", "a"), te.placeholder((16,), "int32", "b")
    x = te.placeholder((4, 16), "float32", "x")
    ctx = LowerContext()
    [div] = EW["Div"].lower(_node("Div", [(4, 16), (16,)], ["int32"] * 2, out_dtypes=("int32",)), [a, b], ctx)
    [mod] = EW["Mod"].lower(_node("Mod", [(4, 16), (16,)], ["int32"] * 2, {"fmod": 1}, ("int32",)), [a, b], ctx)
    [flag] = EW["Cast"].lower(_node("Cast", [(4, 16)], ["float32"], {"to": 9}, ("bool",)), [x], ctx)
    [back] = EW["Cast"].lower(_node("Cast", [(4, 16)], ["bool"], {"to": 1}), [flag], ctx)  # 0.5 -> true -> 1.0
    check_kernel([a, b, x, div, mod, back], name="net_int_ops")


def test_activations_compile_like_the_evaluator():
    x = te.placeholder((8, 32), "float32", "x")
    ctx = LowerContext()
    outs = [EW[op].lower(_node(op, [(8, 32)], ["float32"], attrs), [x], ctx)[0]
            for op, attrs in [("Gelu", {}), ("Erf", {}), ("Softplus", {}), ("HardSwish", {}), ("Selu", {}),
                              ("Sin", {}), ("Cos", {}), ("Atan", {}), ("Acos", {}), ("Round", {})]]
    check_kernel([x] + outs, rtol=2e-5, atol=2e-6, name="net_activations")


def test_shape_ops_compile_like_the_evaluator():
    x = te.placeholder((3, 4, 5), "float32", "x")
    ctx = LowerContext()
    node = Node("Pad", "p", {"mode": "reflect", "_opset": 18}, ((3, 4, 5), (6,)), ("float32", "int64"), (),
                ("float32",), "m")
    [pad] = SH["Pad"].lower(node, [x, np.array([0, 2, 1, 1, 3, 2], np.int64)], ctx)
    node = Node("Reshape", "r", {"_opset": 18}, ((3, 4, 5), (2,)), ("float32", "int64"), (), ("float32",), "m")
    [rs] = SH["Reshape"].lower(node, [x, np.array([6, 10], np.int64)], ctx)
    node = Node("Slice", "s", {"_opset": 18}, ((3, 4, 5),) + ((2,),) * 4, ("float32",) + ("int64",) * 4, (),
                ("float32",), "m")
    [sl] = SH["Slice"].lower(node, [x] + [np.array(v, np.int64) for v in ([-1, 4], [-100, 0], [0, 2], [-2, -2])],
                             ctx)
    node = Node("Concat", "c", {"axis": 1, "_opset": 18}, ((3, 4, 5), (3, 4, 5)), ("float32",) * 2, (),
                ("float32",), "m")
    [cat] = SH["Concat"].lower(node, [x, sl if sl.shape == x.shape else x], ctx)
    check_kernel([x, pad, rs, sl, cat], name="net_shape_ops")


CTX = LowerContext()  # one context: unique tensor names across the ops of one kernel


def _lower(table, op, shapes, dtypes, ins, attrs=None, n_out=1, out="float32"):
    node = Node(op, f"{op}_0", {**(attrs or {}), "_opset": 18}, tuple(shapes), tuple(dtypes), ((),) * n_out,
                (out,) * n_out, "m")
    return table[op].lower(node, ins, CTX)


def test_more_data_movement_compiles_like_the_evaluator():
    x, s = te.placeholder((2, 8, 3, 4), "float32", "x"), te.placeholder((8, 1, 1), "float32", "s")
    lo = te.placeholder((1,), "float32", "lo")
    [c] = _lower(EW, "Less", [(8, 1, 1), ()], ["float32"] * 2, [s, np.array(0.0, np.float32)], out="bool")
    i64 = np.int64
    f4 = ((2, 8, 3, 4), "float32")
    outs = _lower(EW, "Where", [(8, 1, 1), (2, 8, 3, 4), ()], ["bool", "float32", "float32"],
                  [c, x, np.array(0.25, np.float32)])
    outs += _lower(EW, "Clip", [(2, 8, 3, 4), (), ()], ["float32"] * 3, [x, lo, np.array(0.5, np.float32)])
    outs += _lower(SH, "Pad", [f4[0], (8,), ()], [f4[1], "int64", "float32"],
                   [x, np.array([0, 0, 1, 2, 0, 0, 2, 1], i64), lo])
    outs += _lower(SH, "Pad", [f4[0], (8,)], [f4[1], "int64"], [x, np.array([0, 1, 2, 3, 0, 2, 3, 1], i64)],
                   {"mode": "wrap"})
    outs += _lower(SH, "Pad", [f4[0], (8,)], [f4[1], "int64"], [x, np.array([0, 1, 2, 3, 0, 2, 1, 1], i64)],
                   {"mode": "edge"})
    outs += _lower(SH, "Tile", [f4[0], (4,)], [f4[1], "int64"], [x, np.array([1, 2, 1, 3], i64)])
    outs += _lower(SH, "Transpose", [f4[0]], [f4[1]], [x], {"perm": [0, 3, 1, 2]})
    outs += _lower(SH, "DepthToSpace", [f4[0]], [f4[1]], [x], {"blocksize": 2, "mode": "CRD"})
    outs += _lower(SH, "Expand", [(8, 1, 1), (4,)], ["float32", "int64"], [s, np.array([2, 8, 3, 4], i64)])
    outs += _lower(SH, "Split", [f4[0]], [f4[1]], [x], {"axis": 1, "num_outputs": 3}, n_out=3)
    check_kernel([x, s, lo] + outs, name="net_more_shape_ops")


def _random_programs_match(tensors, n):
    """n sampled programs of the search space (inlining, tiling, vectorization, parallel) compile at -O1 and
    match the evaluator, as tests/cpu/test_space_validity.py checks the benchmark operators."""
    from ansorc.api import generate_source
    from ansorc.ir.program.dag import ComputeDAG
    from ansorc.ir.program.evaluate import evaluate, random_inputs
    from ansorc.measure.builder import build
    from ansorc.measure.errors import error_name
    from ansorc.measure.runner import Runner
    from ansorc.search.annotate import sample
    from ansorc.search.task import HardwareParams, SearchTask
    dag = ComputeDAG(tensors)
    progs = sample(SearchTask(dag, hw=HardwareParams(num_cores=2)), n, seed=3)
    results = build([generate_source(dag, p, name=f"net_rand_{k}") for k, p in enumerate(progs)],
                    target_flags=("-O1", "-march=native", "-fopenmp", "-shared", "-fPIC", "-std=c99"), timeout=180)
    inputs = random_inputs(dag.inputs, 0)
    ref = evaluate(list(dag.outputs), inputs)
    with Runner([inputs[t.name] for t in dag.inputs], [ref[t.name] for t in dag.outputs], min_repeat_ms=0,
                repeat=1, rtol=1e-4, atol=1e-4, timeout=60) as runner:
        measured = runner.run(results)
    assert progs
    for prog, res, m in zip(progs, results, measured):
        assert res.ok and m.ok, f"{error_name(m.error_code)} for\n{prog}\n{res.error_msg[:1000]}{m.error_msg[:1000]}"


def test_random_programs_of_concat_pad_erf_and_head_reshape_match():
    x, w = te.placeholder((8, 16), "float32", "x"), te.placeholder((8, 21), "float32", "w")
    [c] = _lower(SH, "Concat", [(8, 16), (8, 21)], ["float32"] * 2, [x, w], {"axis": 1})
    [p] = _lower(SH, "Pad", [(8, 37), (4,)], ["float32", "int64"], [c, np.array([1, 2, 0, 3])], {"mode": "reflect"})
    [e] = _lower(EW, "Erf", [(9, 42)], ["float32"], [p])
    _random_programs_match([x, w, e], 6)
    q = te.placeholder((2, 6, 10), "float32", "q")
    [r] = _lower(SH, "Reshape", [(2, 6, 10), (4,)], ["float32", "int64"], [q, np.array([0, 0, 2, 5])])
    [t] = _lower(SH, "Transpose", [(2, 6, 2, 5)], ["float32"], [r], {"perm": [0, 2, 1, 3]})
    [s] = _lower(SH, "Slice", [(2, 2, 6, 5)] + [(1,)] * 4, ["float32"] + ["int64"] * 4,
                 [t] + [np.array([v]) for v in (-1, -100, 2, -2)])
    _random_programs_match([q, s], 6)
    r = te.placeholder((2, 9, 6), "float32", "r")
    [y] = _lower(SH, "Resize", [(2, 9, 6), None, None, (3,)], ["float32", None, None, "int64"],
                 [r, None, None, np.array([2, 64, 13], np.int64)],
                 {"mode": "linear", "coordinate_transformation_mode": "align_corners"})
    from ansorc.net.network import tensors_by_name
    from ansorc.ir.program.te import PlaceholderOp
    args = sorted((t for t in tensors_by_name([y]).values() if isinstance(t.op, PlaceholderOp)), key=lambda t: t.name)
    _random_programs_match(args + [y], 6)  # an int32 index table read inside the subscripts of a guarded read


@pytest.mark.slow
def test_onnx_node_suite_cases_compiled_to_c_match():
    """Every node-suite case of these ops that the evaluator passes also passes as a compiled C kernel."""
    from tests.unit.onnx_node_harness import conformance
    for rows, floor in ((EW, 198), (SH, 150)):
        results = conformance(rows, mode="compiled")
        failures = {k: v for k, v in results.items() if v[0] == "fail"}
        assert not failures, failures
        assert sum(v[0] == "pass" for v in results.values()) >= floor


def test_resize_with_affine_reads_and_an_index_table_compiles_like_the_evaluator():
    x = te.placeholder((2, 9, 6), "float32", "x")
    attrs = {"mode": "linear", "coordinate_transformation_mode": "align_corners"}
    outs = _lower(SH, "Resize", [(2, 9, 6), None, None, (3,)], ["float32", None, None, "int64"],
                  [x, None, None, np.array([2, 64, 13], np.int64)], attrs)
    outs += _lower(SH, "Resize", [(2, 9, 6), None, None, (3,)], ["float32", None, None, "int64"],
                   [x, None, None, np.array([2, 4, 17], np.int64)], {"mode": "nearest"})
    from ansorc.ir.program.evaluate import evaluate
    from tests.unit.onnx_node_harness import run_compiled
    values = {"x": np.random.default_rng(0).uniform(-1, 1, (2, 9, 6)).astype(np.float32), **CTX.weights}
    got, want = run_compiled(outs, values), evaluate(outs, values)  # the weights hold the real index tables
    assert any(w.dtype == np.int32 for w in CTX.weights.values())
    for t in outs:
        np.testing.assert_allclose(got[t.name], want[t.name], rtol=1e-5, atol=1e-6)


def test_constants_too_large_to_fold_compile_like_numpy(monkeypatch):
    # issue 50.3: above the folding limit ConstantOfShape / EyeLike / Range are computed by the kernel
    import ansorc.net.ops.shape_const as shape_const
    monkeypatch.setattr(shape_const, "FOLD_LIMIT", 4)
    x = te.placeholder((5, 7), "float32", "x")
    ctx = LowerContext()
    [eye] = SH["EyeLike"].lower(_node("EyeLike", [(5, 7)], ["float32"], {"k": 2}), [x], ctx)
    seven = {"value": np.array([7], np.int64)}
    [fill] = SH["ConstantOfShape"].lower(_node("ConstantOfShape", [(2,)], ["int64"], seven, ("int64",)),
                                         [np.array([3, 4], np.int64)], ctx)
    [rng] = SH["Range"].lower(_node("Range", [(), (), ()], ["float32"] * 3),
                              [np.array(v, np.float32) for v in (2.0, -3.0, -0.75)], ctx)
    assert all(isinstance(t, te.Tensor) for t in (eye, fill, rng))
    check_kernel([x, eye, fill, rng], name="net_big_consts")   # the compiled kernel agrees with the evaluator
    from ansorc.ir.program.evaluate import evaluate
    got = [evaluate([eye, fill, rng], {"x": np.zeros((5, 7), np.float32)})[t.name] for t in (eye, fill, rng)]
    np.testing.assert_array_equal(got[0], np.eye(5, 7, 2, dtype=np.float32))
    np.testing.assert_array_equal(got[1], np.full((3, 4), 7, np.int64))
    np.testing.assert_allclose(got[2], np.arange(2.0, -3.0, -0.75, dtype=np.float32))
