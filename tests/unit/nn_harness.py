"""Lower one ONNX node with ansorc.net's operator table (no importer) and run it with the numpy evaluator; run the
same node with onnxruntime. Used by the operator tests of ops_nn and friends."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ansorc.ir.program import te
from ansorc.ir.program.evaluate import evaluate
from ansorc.net.ops.common import LowerContext, Node
from ansorc.net.ops import SUPPORT

OPSET = 17


def attrs_of(proto) -> dict:
    out = {}
    for a in proto.attribute:
        v = helper.get_attribute_value(a)
        if isinstance(v, bytes):
            v = v.decode()
        elif isinstance(v, list):
            v = [x.decode() if isinstance(x, bytes) else x for x in v]
        out[a.name] = v
    return out


def lower_and_run(op_type, inputs, out_shapes, attrs, opset=OPSET, consts=(), out_dtypes=None, name="n0"):
    """Lower `op_type` over `inputs` (arrays or None; indices in `consts` are passed as constants, the others
    as te placeholders) and evaluate it; returns the outputs with their ONNX shapes."""
    ctx = LowerContext()
    ins, feeds = [], {}
    for i, a in enumerate(inputs):
        if a is None or i in consts:
            ins.append(a)
            continue
        t = te.placeholder(a.shape or (1,), str(a.dtype), name=ctx.name(f"in{i}"))
        feeds[t.name] = a.reshape(a.shape or (1,))
        ins.append(t)
    node = Node(op_type, name, {**attrs, "_opset": opset},
                tuple(None if a is None else tuple(a.shape) for a in inputs),
                tuple(None if a is None else str(a.dtype) for a in inputs),
                tuple(None if s is None else tuple(s) for s in out_shapes),
                tuple(out_dtypes or ["float32"] * len(out_shapes)), "test")
    outs = SUPPORT[op_type].lower(node, ins, ctx)
    tensors = [o for o in outs if o is not None and not isinstance(o, np.ndarray)]
    values = evaluate(tensors, {**feeds, **ctx.weights}) if tensors else {}
    result = []
    for o, shape in zip(outs, out_shapes):  # a None shape is an output the node does not produce
        arr = None if shape is None else o if isinstance(o, np.ndarray) else values[o.name]
        result.append(None if arr is None else np.asarray(arr).reshape(shape))
    return result, outs


def model_of(op_type, inputs, n_out, attrs, opset=OPSET, out_types=None):
    """A one-node model: inputs named x0.., outputs y0.. (omitted inputs as empty names)."""
    names = ["" if a is None else f"x{i}" for i, a in enumerate(inputs)]
    while names and names[-1] == "":
        names.pop()
    node = helper.make_node(op_type, names, [f"y{i}" for i in range(n_out)], **attrs)
    vin = [helper.make_tensor_value_info(f"x{i}", helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
           for i, a in enumerate(inputs) if a is not None]
    types = out_types or [onnx.TensorProto.FLOAT] * n_out
    vout = [helper.make_tensor_value_info(f"y{i}", t, None) for i, t in enumerate(types)]
    graph = helper.make_graph([node], "g", vin, vout)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def run_ort(model, inputs):
    import onnxruntime as ort
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {f"x{i}": a for i, a in enumerate(inputs) if a is not None}
    return sess.run(None, feeds)


def check_op(op_type, inputs, attrs=None, n_out=1, opset=OPSET, consts=(), rtol=1e-4, atol=1e-5, out_types=None):
    """Lower and evaluate the node, run it in onnxruntime, compare every output; returns ours."""
    attrs = attrs or {}
    model = model_of(op_type, inputs, n_out, attrs, opset, out_types)
    expected = run_ort(model, inputs)
    dtypes = [str(e.dtype) for e in expected]
    ours, _ = lower_and_run(op_type, inputs, [e.shape for e in expected], attrs, opset, consts, dtypes)
    for i, (got, want) in enumerate(zip(ours, expected)):
        assert got.shape == want.shape, f"output {i}: shape {got.shape} != {want.shape}"
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=f"{op_type} output {i}")
    return ours


def tensor_of(proto_or_array):
    return numpy_helper.to_array(proto_or_array) if not isinstance(proto_or_array, np.ndarray) else proto_or_array
