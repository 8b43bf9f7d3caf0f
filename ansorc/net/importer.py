"""ONNX model -> Network (one te graph): load, check, static shapes, shape inference, graph passes, lowering.

    net = import_model("resnet50.onnx", input_shapes={"data": (1, 3, 224, 224)})
    outs = run_reference(net, [x])          # numpy reference evaluation of the te graph

Each step is a small function; `import_model` runs them in order. Graph passes (constant folding, Dropout/Identity
removal, BatchNorm folding) live in import_passes.py; each op is lowered by its row of the support table.
"""
from __future__ import annotations

import math
import operator
import os

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..ir.program.dtypes import DTYPE_TABLE
from ..ir.program.te import MAX_ELEMENTS
from .import_passes import PASSES, Graph, check_result_sizes
from .layout_pass import apply_layout
from .network import NetError, Network, UnsupportedError
from .qdq_pass import fold_qdq
from .qoperator_pass import expand_qoperator

MAX_MODEL_BYTES = 2 << 30  # protobuf's own limit for one message


def _line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return (text or type(e).__name__)[:400]


# ----------------------------------------------------------------------------- load and check

def load(model) -> tuple:
    """(ModelProto, display name) from a path, bytes or a ModelProto; NetError if it is not a valid ONNX model."""
    if isinstance(model, onnx.ModelProto):
        name = model.graph.name or "model"
        return _checked(model, name, f"model {name!r}")
    if isinstance(model, (bytes, bytearray)):
        return _checked(_parse(lambda: onnx.load_from_string(bytes(model)), "<bytes>"), None, "<bytes>")
    try:
        path = os.fspath(model)
    except TypeError:
        raise NetError(f"import_model: expected a path or an onnx.ModelProto, got {type(model).__name__}") from None
    try:
        size = os.path.getsize(path)
    except OSError as e:
        raise NetError(f"{path}: cannot read the model: {e.strerror or e}") from None
    if size > MAX_MODEL_BYTES:
        raise NetError(f"{path}: not a valid ONNX model: {size} bytes (at most {MAX_MODEL_BYTES} supported)")
    proto = _parse(lambda: onnx.load(path), path)
    stem = os.path.splitext(os.path.basename(path))[0]
    return _checked(proto, proto.graph.name or stem or "model", path)


def _parse(read, where: str):
    try:
        return read()
    except (RecursionError, MemoryError) as e:
        raise NetError(f"{where}: not a valid ONNX model: too deeply nested or too large "
                       f"({type(e).__name__})") from None
    except Exception as e:  # noqa: BLE001 - protobuf/onnx raise many types for a corrupt file
        raise NetError(f"{where}: not a valid ONNX model: {_line(e)}") from None


def _checked(proto, name, where: str) -> tuple:
    if not proto.HasField("graph") or not proto.graph.output:
        raise NetError(f"{where}: not a valid ONNX model: it has no graph or no outputs")
    try:
        onnx.checker.check_model(proto)
    except (RecursionError, MemoryError) as e:
        raise NetError(f"{where}: not a valid ONNX model: {type(e).__name__}") from None
    except Exception as e:  # noqa: BLE001 - ValidationError and protobuf errors
        raise NetError(f"{where}: not a valid ONNX model: {_line(e)}") from None
    if not all(isinstance(t, str) for t in _names(proto.graph)):
        raise NetError(f"{where}: not a valid ONNX model: a name is not valid UTF-8")
    name = name or proto.graph.name or "model"
    return proto, name if isinstance(name, str) else "model"


def _names(g):
    """Every name of the graph (protobuf hands back invalid UTF-8 strings as bytes)."""
    yield g.name
    for vi in [*g.input, *g.output, *g.initializer]:
        yield vi.name
    for n in g.node:
        yield from (n.name, n.op_type, n.domain, *n.input, *n.output)


def default_opset(proto, name: str) -> int:
    """The default-domain opset; a node of any other domain is unsupported."""
    versions = {o.domain if o.domain != "ai.onnx" else "": o.version for o in proto.opset_import}
    if "" not in versions:
        raise UnsupportedError(f"model {name!r}: it imports no default-domain (ai.onnx) opset")
    if versions[""] > onnx.defs.onnx_opset_version():
        raise UnsupportedError(f"model {name!r}: opset {versions['']} is newer than onnx "
                               f"{onnx.__version__} knows ({onnx.defs.onnx_opset_version()})")
    for k, node in enumerate(proto.graph.node):
        if node.domain not in ("", "ai.onnx"):
            raise UnsupportedError(f"node {node_name(node, k)!r} ({node.op_type}) of model {name!r}: domain "
                                   f"{node.domain!r} is not supported (only the default ONNX domain)")
    return versions[""]


def node_name(node, index: int) -> str:
    return node.name or f"{node.op_type}_{index}"


# ----------------------------------------------------------------------------- static shapes

def runtime_inputs(proto) -> list:
    inits = {t.name for t in proto.graph.initializer} | {t.values.name for t in proto.graph.sparse_initializer}
    return [vi for vi in proto.graph.input if vi.name not in inits]


def static_shapes(proto, name: str, input_shapes: dict | None):
    """A copy of the model whose run-time inputs all have static shapes (from the model or `input_shapes`)."""
    given = dict(input_shapes or {})
    known = [vi.name for vi in runtime_inputs(proto)]
    for k in given:
        if k not in known:
            raise NetError(f"model {name!r}: input_shapes names {k!r}, which is not an input (inputs: "
                           f"{', '.join(map(repr, known))})")
    out = onnx.ModelProto()
    out.CopyFrom(proto)
    for vi in runtime_inputs(out):
        if not vi.type.HasField("tensor_type"):
            raise UnsupportedError(f"model {name!r}: input {vi.name!r} is not a tensor")
        dims = _input_dims(vi, given.get(vi.name), name)
        shape = vi.type.tensor_type.shape
        del shape.dim[:]
        for d in dims:
            shape.dim.add().dim_value = d
    return out


def _input_dims(vi, given, model: str) -> list:
    tt = vi.type.tensor_type
    dims = list(tt.shape.dim) if tt.HasField("shape") else None
    if given is not None:
        given = _given_dims(vi.name, given, model)
        if dims is not None and (len(dims) != len(given) or any(
                d.HasField("dim_value") and d.dim_value != g for d, g in zip(dims, given))):
            raise NetError(f"model {model!r}: input_shapes gives {tuple(given)} for input {vi.name!r}, whose shape "
                           f"is {_shape_text(dims)}")
        return given
    hint = f"; pass it with --input-shape {vi.name}=D1xD2x... or input_shapes={{{vi.name!r}: (D1, D2, ...)}}"
    if dims is None:
        raise NetError(f"model {model!r}: input {vi.name!r} has no shape{hint}")
    for i, d in enumerate(dims):
        if not d.HasField("dim_value"):
            raise NetError(f"model {model!r}: input {vi.name!r} has no static size for dimension {i} "
                           f"({d.dim_param or '?'}){hint}")
    return [d.dim_value for d in dims]


def _given_dims(name: str, given, model: str) -> list:
    try:
        dims = [operator.index(d) for d in given]   # 2.5 is refused, not truncated to 2
    except TypeError:
        dims = None
    if dims is None or any(d <= 0 or d > MAX_ELEMENTS or isinstance(g, bool) for d, g in zip(dims, given)):
        raise NetError(f"model {model!r}: input_shapes[{name!r}] must be a sequence of positive integers "
                       f"(at most {MAX_ELEMENTS}), "
                       f"got {given!r}")
    return dims


def _shape_text(dims) -> str:
    return "(" + ", ".join(str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?") for d in dims) + ")"


LIGHT_INIT = 4096  # elements: larger initializers reach shape inference as typed inputs (no payload to serialize)


def infer(proto, name: str) -> dict:
    """Types of every value after onnx's shape inference (strict, with data propagation). Large initializers of
    `proto` (a private copy) are turned into typed inputs in place."""
    try:
        inferred = onnx.shape_inference.infer_shapes(_light(proto), check_type=True, strict_mode=True,
                                                     data_prop=True)
    except Exception as e:  # noqa: BLE001 - InferenceError names the node; anything else is a bad model too
        raise NetError(f"model {name!r}: shape inference failed: {_line(e)}") from None
    return _types(inferred)


def _light(proto):
    big = [t for t in proto.graph.initializer if math.prod(t.dims) > LIGHT_INIT]
    if big:
        listed = {vi.name for vi in proto.graph.input}
        proto.graph.input.extend(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
                                 for t in big if t.name not in listed)
        keep = [t for t in proto.graph.initializer if math.prod(t.dims) <= LIGHT_INIT]
        del proto.graph.initializer[:]
        proto.graph.initializer.extend(keep)
    return proto


def _types(proto) -> dict:
    """tensor name -> (static shape or None, onnx elem type) for every typed value of the graph."""
    out = {}
    g = proto.graph
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        if not vi.type.HasField("tensor_type"):
            continue
        tt = vi.type.tensor_type
        shape = None
        if tt.HasField("shape") and all(d.HasField("dim_value") for d in tt.shape.dim):
            shape = tuple(d.dim_value for d in tt.shape.dim)
        out[vi.name] = (shape, tt.elem_type)
    return out


def to_graph(proto, name: str, types: dict) -> Graph:
    g = proto.graph
    if g.sparse_initializer:
        raise UnsupportedError(f"model {name!r}: sparse initializers are not supported")
    consts = {t.name: np.asarray(numpy_helper.to_array(t), order="C") for t in g.initializer}
    nodes = []
    for k, node in enumerate(g.node):
        if not node.name:
            node = _named(node, node_name(node, k))
        nodes.append(node)
    return Graph(name=name, opset=default_opset(proto, name), nodes=tuple(nodes),
                 inputs=tuple(vi.name for vi in runtime_inputs(proto)), outputs=tuple(o.name for o in g.output),
                 consts=consts, types=types, alias={})


def _named(node, name: str):
    new = onnx.NodeProto()
    new.CopyFrom(node)
    new.name = name
    return new


# ----------------------------------------------------------------------------- the whole import

def graph_of(model, input_shapes: dict | None = None, layout: str | None = None) -> Graph:
    """The model after loading, checks, shape inference and the graph passes (before lowering). `layout`:
    "nhwc" computes 2-D convolutions and pools channels-last (layout_pass), "nchw" as ONNX gives them; default
    ANSORC_NET_LAYOUT, else nhwc."""
    proto, name = load(model)
    proto = expand_qoperator(proto, name)   # com.microsoft QLinear* ops as DequantizeLinear -> op -> QuantizeLinear
    default_opset(proto, name)
    check_result_sizes(proto, name, MAX_ELEMENTS)
    types = infer(static_shapes(proto, name, input_shapes), name)
    graph = to_graph(proto, name, types)
    for p in (fold_qdq,) + PASSES:   # QDQ first: constant folding would dequantize the weights
        graph = p(graph)
    return apply_layout(graph, layout)  # last: onnx shape inference knows none of its internal ops


def import_model(model, input_shapes: dict | None = None, table: dict | None = None,
                 layout: str | None = None) -> Network:
    """Import an ONNX model (path or ModelProto) as a Network; `table` defaults to ops.SUPPORT, `layout`
    as graph_of."""
    from .lowering import lower_graph
    if table is None:
        from .ops import SUPPORT as table
    return lower_graph(graph_of(model, input_shapes, layout), table)


def run_reference(net: Network, inputs) -> list:
    """Evaluate a Network with the numpy reference evaluator; `inputs` in graph-input order or {onnx name: array}.
    Outputs are reshaped to the ONNX output shapes."""
    from ..ir.program.evaluate import evaluate
    feeds = dict(net.weights)
    feeds.update(bind_inputs(net, inputs))
    got = evaluate(list(net.outputs), feeds)
    return [np.asarray(got[t.name]).reshape(s) for t, s in zip(net.outputs, net.output_shapes)]


def bind_inputs(net: Network, inputs) -> dict:
    """{te placeholder name: array} for the model's inputs, checked for count, shape and dtype."""
    if isinstance(inputs, dict):
        missing = [n for n in net.input_names if n not in inputs]
        if missing:
            raise NetError(f"model {net.name!r}: no value for input {missing[0]!r}")
        inputs = [inputs[n] for n in net.input_names]
    inputs = list(inputs)
    if len(inputs) != len(net.inputs):
        raise NetError(f"model {net.name!r} takes {len(net.inputs)} inputs, got {len(inputs)}")
    out = {}
    for t, onnx_name, a in zip(net.inputs, net.input_names, inputs):
        a = np.asarray(a)
        want = DTYPE_TABLE[t.dtype].np_dtype
        if a.dtype != want or math.prod(a.shape) != math.prod(t.shape) or (a.ndim and a.shape != t.shape):
            raise NetError(f"model {net.name!r}: input {onnx_name!r} must be {t.dtype} of shape "
                           f"{t.shape}, got {a.dtype} of shape {a.shape}")
        out[t.name] = np.ascontiguousarray(a).reshape(t.shape)
    return out
