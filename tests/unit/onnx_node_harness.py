"""A single-node ONNX harness for the operator lowerings (no importer): build the `Node` from the model, lower
it through an OPS table, run the te graph with the numpy reference evaluator, compare with ONNX's answer."""
from __future__ import annotations

import functools
import warnings

import numpy as np
import onnx
import onnx.numpy_helper
from onnx import helper

from ansorc.ir.program.evaluate import evaluate
from ansorc.net.lowering import NET_DTYPES as DTYPES  # the element types models may use
from ansorc.ir.program.te import PlaceholderOp
from ansorc.net.network import NetError
from ansorc.net.ops.common import LowerContext, Node
from ansorc.net.ops.util import te_shape

# inputs ONNX passes as tensors but that must be import-time constants (shapes, axes, pads, ...)
CONST_INPUTS = {"Reshape": {1}, "Expand": {1}, "Tile": {1}, "Slice": {1, 2, 3, 4}, "Pad": {1, 2, 3},
                "Squeeze": {1}, "Unsqueeze": {1}, "Split": {1}, "ConstantOfShape": {0}, "Range": {0, 1, 2},
                "Dropout": {1, 2}, "Clip": {1, 2}, "CastLike": {1},
                "Trilu": {1}, "CenterCropPad": {1}, "Resize": {1, 2, 3}, "Upsample": {1}}


def _decode(v):
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, list):
        return [_decode(x) for x in v]
    return v


def _types(graph) -> dict:
    out = {}
    for vi in list(graph.input) + list(graph.output) + list(graph.value_info):
        t = vi.type.tensor_type
        if not t.HasField("shape"):
            continue
        dims = tuple(d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim)
        np_dt = helper.tensor_dtype_to_np_dtype(t.elem_type) if t.elem_type else None
        out[vi.name] = (dims, None if np_dt is None else np.dtype(np_dt).name)
    return out


def make_node(model: onnx.ModelProto, feeds: dict) -> Node:
    """The `Node` of a one-node model: shapes from inference, falling back to the fed arrays."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            model = onnx.shape_inference.infer_shapes(model)
        except Exception:  # noqa: BLE001 - the declared types are used then
            pass
    g = model.graph
    n = g.node[0]
    types = _types(g)
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
    attrs = {a.name: _decode(helper.get_attribute_value(a)) for a in n.attribute}
    attrs["_opset"] = opset

    def info(name):
        if not name:
            return None, None
        if name in feeds:
            return tuple(feeds[name].shape), feeds[name].dtype.name
        return types.get(name, (None, None))
    ins = [info(x) for x in n.input]
    outs = [info(x) for x in n.output]
    return Node(n.op_type, n.name or f"{n.op_type}_0", attrs, tuple(s for s, _ in ins), tuple(d for _, d in ins),
                tuple(s for s, _ in outs), tuple(d for _, d in outs), model=g.name)


def render_c(outputs: list) -> None:
    """Lower and render C for the graph (naive schedule): the IR verifier re-proves every read in bounds."""
    from ansorc.api import generate_source
    from ansorc.net.network import tensors_by_name
    found = tensors_by_name(outputs)
    inputs = sorted((t for t in found.values() if isinstance(t.op, PlaceholderOp)), key=lambda t: t.name)
    generate_source(inputs + list(dict.fromkeys(outputs)), name="k")


def run_compiled(outputs: list, values: dict, flags=("-O1", "-march=native", "-fopenmp", "-shared", "-fPIC",
                                                     "-std=c99")) -> dict:
    """Build the graph to C (naive schedule), run it on `values`: {output name: array}."""
    import ansorc
    from ansorc.net.network import tensors_by_name
    outputs = list(dict.fromkeys(outputs))
    found = tensors_by_name(outputs)
    inputs = sorted((t for t in found.values() if isinstance(t.op, PlaceholderOp)), key=lambda t: t.name)
    kernel = ansorc.build(inputs + outputs, name="k", flags=flags)
    as_c = [np.ascontiguousarray(values[t.name]) for t in inputs]
    res = [np.zeros(t.shape, np.dtype(t.dtype)) for t in outputs]
    kernel(*(as_c + res))  # bool arguments are numpy bool arrays (one byte, uint8_t in C)
    return {t.name: r for t, r in zip(outputs, res)}


def run_node(model: onnx.ModelProto, inputs: list, table: dict, const_inputs=None, mode: str = "evaluate") -> list:
    """Lower the model's one node through `table` and evaluate it on `inputs` (graph-input order). mode
    "render" also renders it to C (which verifies the lowered program); "compiled" returns what the C kernel
    computes instead."""
    g = model.graph
    feeds = {vi.name: np.asarray(a) for vi, a in zip(g.input, inputs)}
    node = make_node(model, feeds)
    spec = table[node.op_type]
    consts = CONST_INPUTS.get(node.op_type, set()) if const_inputs is None else const_inputs
    _check_like_importer(node, spec)
    ctx = LowerContext()
    from ansorc import te
    ins, values = [], {}
    for i, name in enumerate(g.node[0].input):
        if not name:
            ins.append(None)
        elif i in consts:
            ins.append(feeds[name])
        elif feeds[name].size == 0:
            raise node.unsupported("empty tensors")
        else:
            t = te.placeholder(te_shape(feeds[name].shape), feeds[name].dtype.name, name=ctx.name(name))
            values[t.name] = feeds[name].reshape(te_shape(feeds[name].shape))
            ins.append(t)
    outs = spec.lower(node, ins, ctx)
    values.update(ctx.weights)
    tensors = [o for o in outs if not isinstance(o, np.ndarray) and not isinstance(o.op, PlaceholderOp)]
    if mode == "compiled" and tensors:
        results = run_compiled(tensors, values)
    else:
        results = evaluate(tensors, values) if tensors else {}
    if mode == "render" and tensors:
        render_c(tensors)
    got = []
    for o, shape in zip(outs, node.out_shapes):
        if isinstance(o, np.ndarray):
            a = o
        else:
            a = values[o.name] if isinstance(o.op, PlaceholderOp) else results[o.name]
        got.append(a.reshape(shape) if shape is not None and None not in shape else a)
    return got


def _check_like_importer(node, spec) -> None:
    """The importer's checks before a lowering: IR dtypes only, the first input's dtype in the spec."""
    for dt in node.in_dtypes + node.out_dtypes:
        if dt is not None and dt not in DTYPES:
            raise node.unsupported(f"dtype {dt}")
    if node.in_dtypes and node.in_dtypes[0] is not None and node.in_dtypes[0] not in spec.dtypes:
        raise node.unsupported(f"input dtype {node.in_dtypes[0]}")
    extra = set(node.attrs) - set(spec.attrs) - {"_opset"}
    if extra:
        raise node.unsupported(f"attributes {sorted(extra)}")


@functools.lru_cache(maxsize=1)
def node_cases() -> tuple:
    """ONNX's own node test cases with a single node (built in memory by onnx)."""
    from onnx.backend.test import loader
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = loader.load_model_tests(kind="node")
    return tuple(c for c in cases if len(c.model.graph.node) == 1 and c.data_sets)


def _array(a) -> np.ndarray:
    """Test data may hold TensorProtos (as onnx's runner normalizes)."""
    return onnx.numpy_helper.to_array(a) if isinstance(a, onnx.TensorProto) else np.asarray(a)


def run_case(case, table: dict, mode: str = "evaluate") -> tuple:
    """('pass' | 'unsupported' | 'fail', detail) for one ONNX node test case."""
    try:
        for ins, expected in case.data_sets:
            ins, expected = [_array(a) for a in ins], [_array(a) for a in expected]
            got = run_node(case.model, ins, table, mode=mode)
            if len(got) < len(expected):
                return "fail", f"{len(got)} outputs, expected {len(expected)}"
            for a, e in zip(got, expected):
                e = np.asarray(e)
                if a.dtype != e.dtype or a.shape != e.shape:
                    return "fail", f"got {a.dtype}{a.shape}, expected {e.dtype}{e.shape}"
                np.testing.assert_allclose(a, e, rtol=case.rtol, atol=case.atol)
    except NetError as err:
        return "unsupported", str(err)
    except AssertionError as err:
        return "fail", str(err).strip().splitlines()[0:4]
    except Exception as err:  # noqa: BLE001 - the harness reports every crash as a failure
        return "fail", f"{type(err).__name__}: {err}"
    return "pass", ""


def conformance(table: dict, mode: str = "evaluate") -> dict:
    """Every single-node case whose op is in `table`: name -> (status, detail)."""
    return {c.name: run_case(c, table, mode) for c in node_cases() if c.model.graph.node[0].op_type in table}


def one_node_model(op: str, inputs: list, attrs: dict | None = None, opset: int = 17, n_out: int = 1,
                   outputs: list | None = None) -> onnx.ModelProto:
    """A model of one `op` node over graph inputs x0, x1, ... typed like the arrays (None = omitted input);
    outputs typed like `outputs` when given (else left untyped)."""
    names = [f"x{i}" if a is not None else "" for i, a in enumerate(inputs)]
    node = helper.make_node(op, names, [f"y{i}" for i in range(n_out)], **(attrs or {}))
    g_in = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
            for n, a in zip(names, inputs) if a is not None]
    if outputs is None:
        g_out = [helper.make_value_info(f"y{i}", onnx.TypeProto()) for i in range(n_out)]
    else:
        g_out = [helper.make_tensor_value_info(f"y{i}", helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
                 for i, a in enumerate(outputs)]
    graph = helper.make_graph([node], f"m_{op}", g_in, g_out)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def reference(op: str, inputs: list, attrs=None, opset: int = 17, n_out: int = 1) -> list:
    from onnx.reference import ReferenceEvaluator
    model = one_node_model(op, inputs, attrs, opset, n_out)
    feeds = {f"x{i}": a for i, a in enumerate(inputs) if a is not None}
    return [np.asarray(o) for o in ReferenceEvaluator(model).run(None, feeds)]


def lower_and_compare(table: dict, op: str, inputs: list, attrs=None, opset: int = 17, n_out: int = 1,
                      consts=None, rtol: float = 1e-5, atol: float = 1e-6, expected=None) -> list:
    """Lower one node (inputs listed in `consts` as constants), evaluate it, assert it matches ONNX's reference
    evaluator (or `expected`) in dtype, shape and values; returns the outputs."""
    want = reference(op, inputs, attrs, opset, n_out) if expected is None else expected
    model = one_node_model(op, inputs, attrs, opset, n_out, outputs=want)
    present = [a for a in inputs if a is not None]
    got = run_node(model, present, table, const_inputs=consts, mode="render")
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return got


def run_graph(model: onnx.ModelProto, feeds: dict, table: dict) -> list:
    """Lower every node of a small model in order (a stand-in for the importer: no folding, every graph input a
    te placeholder, initializers constants) and evaluate the graph outputs."""
    from ansorc import te
    model = onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
    g = model.graph
    types = _types(g)
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
    ctx, values, arrays = LowerContext(), {}, {}
    for init in g.initializer:
        values[init.name] = onnx.numpy_helper.to_array(init)
    for vi in g.input:
        if vi.name not in values:
            a = np.asarray(feeds[vi.name])
            t = te.placeholder(te_shape(a.shape), a.dtype.name, name=ctx.name(vi.name))
            values[vi.name], arrays[t.name] = t, a.reshape(te_shape(a.shape))
    for k, n in enumerate(g.node):
        shape = [(types.get(x, (None, None)) if x else (None, None)) for x in n.input]
        shape = [(tuple(v.shape), v.dtype.name) if isinstance(v, np.ndarray) else s
                 for s, v in zip(shape, [values.get(x) for x in n.input])]
        attrs = {a.name: _decode(helper.get_attribute_value(a)) for a in n.attribute}
        node = Node(n.op_type, n.name or f"{n.op_type}_{k}", {**attrs, "_opset": opset},
                    tuple(s for s, _ in shape), tuple(d for _, d in shape),
                    tuple(types.get(x, (None, None))[0] for x in n.output),
                    tuple(types.get(x, (None, None))[1] for x in n.output), model=g.name)
        outs = table[n.op_type].lower(node, [values[x] if x else None for x in n.input], ctx)
        values.update(zip(n.output, outs))
    arrays.update(ctx.weights)
    outs = [values[o.name] for o in g.output]
    tensors = [o for o in outs if not isinstance(o, np.ndarray)]
    results = evaluate(tensors, arrays)
    return [o if isinstance(o, np.ndarray) else results[o.name].reshape(types[name][0])
            for o, name in zip(outs, [o.name for o in g.output])]
