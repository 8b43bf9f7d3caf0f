"""The importer's last step: the graph (after its passes) on networkx, lowered node by node through the support
table in topological order into one te graph, a `Network`."""
from __future__ import annotations

import math

import networkx as nx
import numpy as np
import onnx
from onnx import helper, numpy_helper

from .. import te
from ..errors import AnsorcError
from ..ir.program.dtypes import DTYPE_TABLE
from ..ir.program.te import MAX_ELEMENTS, PlaceholderOp, Tensor
from .import_passes import FOLD_LIMIT, NOT_FOLDABLE, Graph, result_elements, run_node
from .network import NetError, Network, UnsupportedError, c_name
from .ops.common import LowerContext, Node
from .ops.layout import DOMAIN, internal_spec

# the element types a model's tensors may have: int8 and uint8 for the quantization operators (ops/quant.py);
# int16, float16 and bfloat16 of DTYPE_TABLE wait for operators that define them on ONNX's terms
NET_DTYPES = ("float32", "float64", "int32", "int64", "bool", "int8", "uint8")


def dtype_name(elem: int) -> str:
    """The numpy name of an ONNX element type ("float32", "uint8", ...); ansorc computes in DTYPE_TABLE's."""
    try:
        return helper.tensor_dtype_to_np_dtype(elem).name
    except Exception:  # noqa: BLE001 - undefined or string types
        return onnx.TensorProto.DataType.Name(elem).lower() if elem else "undefined"


def nx_graph(g: Graph) -> nx.MultiDiGraph:
    """Nodes = ONNX nodes (by index, attribute `proto`), edges = tensors (attribute `tensor`)."""
    graph = nx.MultiDiGraph()
    producer = {}
    for k, node in enumerate(g.nodes):
        graph.add_node(k, proto=node)
        producer.update((o, k) for o in node.output if o)
    for k, node in enumerate(g.nodes):
        for t in node.input:
            if t in producer:
                graph.add_edge(producer[t], k, tensor=t)
    return graph


def topological(g: Graph) -> list:
    try:
        return list(nx.lexicographical_topological_sort(nx_graph(g)))
    except nx.NetworkXUnfeasible:
        raise NetError(f"model {g.name!r}: the graph has a cycle") from None


def decode_attrs(node) -> dict:
    out = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        if isinstance(v, bytes):
            v = v.decode("utf-8", "replace")
        elif isinstance(v, list) and v and isinstance(v[0], bytes):
            v = [x.decode("utf-8", "replace") for x in v]
        elif isinstance(v, onnx.TensorProto):
            v = numpy_helper.to_array(v)
        out[a.name] = v
    return out


def check_attr_types(proto, opset: int, where: str) -> None:
    """Each attribute has the type the operator's schema gives it (lowerings rely on it)."""
    try:
        schema = onnx.defs.get_schema(proto.op_type, opset, proto.domain)
    except onnx.defs.SchemaError:
        return  # an unknown op: the table says it is unsupported
    for a in proto.attribute:
        want = schema.attributes.get(a.name)
        if want is not None and int(want.type) != a.type:
            raise NetError(f"{where}: attribute {a.name!r} is {onnx.AttributeProto.AttributeType.Name(a.type)}, "
                           f"the operator expects {want.type.name}")


def make_node(proto, g: Graph, shapes: dict, dtypes: dict) -> Node:
    check_attr_types(proto, g.opset, f"node {proto.name!r} ({proto.op_type}) of model {g.name!r}")
    attrs = decode_attrs(proto)
    attrs["_opset"] = g.opset
    ins = list(proto.input)
    return Node(op_type=proto.op_type, name=proto.name, attrs=attrs,
                in_shapes=tuple(shapes.get(i) if i else None for i in ins),
                in_dtypes=tuple(dtypes.get(i) if i else None for i in ins),
                out_shapes=tuple(shapes.get(o) if o else None for o in proto.output),
                out_dtypes=tuple(dtypes.get(o) if o else None for o in proto.output), model=g.name)


def check_node(node: Node, table: dict):
    """The node's table row, or UnsupportedError naming op, node and model (op, first input dtype, attributes)."""
    spec = table.get(node.op_type)
    if spec is None:
        raise node.unsupported(f"operator {node.op_type} is not supported")
    first = next((d for d in node.in_dtypes if d is not None), None)
    if first is not None and first not in spec.dtypes:
        raise node.unsupported(f"input dtype {first} is not supported (supported: {', '.join(spec.dtypes)})")
    extra = sorted(a for a in node.attrs if a != "_opset" and a not in spec.attrs)
    if extra:
        raise node.unsupported(f"attribute {extra[0]!r} is not supported")
    for d in node.out_dtypes:
        if d is not None and d not in NET_DTYPES:
            raise node.unsupported(f"output dtype {d} is not supported")
    for s in node.out_shapes:
        if s is not None and 0 in s:
            raise node.unsupported("empty tensors (a dimension of size 0) are not supported")
    return spec


def node_spec(proto, node: Node, table: dict) -> tuple:
    """(node, table row) of an ONNX node or of an internal one of the layout pass (ops_layout)."""
    if proto.domain == DOMAIN:
        return internal_spec(proto, node, table, check_node)
    return node, check_node(node, table)


def _te_shape(shape) -> tuple:
    return tuple(shape) if shape else (1,)  # rank-0 ONNX tensors are held as shape (1,)


def _lower(node: Node, proto, ins: list, spec, ctx: LowerContext, g: Graph) -> list:
    small_out = all(s is None or int(np.prod(s)) <= FOLD_LIMIT for s in node.out_shapes) and \
        result_elements(proto, ins) <= FOLD_LIMIT
    if ins and small_out and node.op_type not in NOT_FOLDABLE and all(not isinstance(v, Tensor) for v in ins):
        outs = run_node(proto, ins, g.opset)  # constant inputs (a lowering returned an array): fold
        if outs is not None and all(o is None or o.dtype != object for o in outs):
            return _checked_outputs(node, outs, proto)
    try:
        outs = spec.lower(node, ins, ctx)
    except NetError:
        raise
    except AnsorcError as e:  # a te error inside a lowering: one line naming the node
        raise NetError(f"{node.where()}: {e}") from None
    return _checked_outputs(node, list(outs), proto)


def _checked_outputs(node: Node, outs: list, proto) -> list:
    if len(outs) < len([o for o in proto.output if o]):
        raise NetError(f"{node.where()}: the lowering returned {len(outs)} outputs for {len(proto.output)}")
    for k, (v, want, dt) in enumerate(zip(outs, node.out_shapes, node.out_dtypes)):
        if isinstance(v, Tensor) and want is not None and v.shape != _te_shape(want):
            raise NetError(f"{node.where()}: output {k} has shape {v.shape}, shape inference says {want}")
        if isinstance(v, Tensor) and dt in NET_DTYPES and v.dtype != dt:
            raise NetError(f"{node.where()}: output {k} has dtype {v.dtype}, shape inference says {dt}")
        if isinstance(v, np.ndarray) and dt in NET_DTYPES:
            outs[k] = np.asarray(v.astype(DTYPE_TABLE[dt].np_dtype, copy=False), order="C")
    return outs


def _placeholder(name: str, g: Graph, ctx: LowerContext) -> Tensor:
    shape, elem = g.types[name]
    dtype = dtype_name(elem)
    if dtype not in NET_DTYPES:
        raise UnsupportedError(f"model {g.name!r}: input {name!r} has dtype {dtype}, which is not supported")
    if 0 in shape:
        raise UnsupportedError(f"model {g.name!r}: input {name!r} has an empty dimension {shape}")
    if math.prod(shape) > MAX_ELEMENTS:  # here, by the user's name for it (te's error names n_<name>_0)
        raise UnsupportedError(f"model {g.name!r}: input {name!r} of shape {shape} has {math.prod(shape)} elements "
                               f"(at most {MAX_ELEMENTS}: kernels index with 32-bit integers)")
    return te.placeholder(_te_shape(shape), dtype, name=ctx.name(name))


def _as_output(value, name: str, ctx: LowerContext, seen: set, model: str) -> Tensor:
    """A Network output is always a computed tensor of its own: inputs, weights and repeats get a copy."""
    if isinstance(value, np.ndarray):
        if value.dtype.name not in NET_DTYPES or value.size == 0:
            raise UnsupportedError(f"model {model!r}: output {name!r} is a constant of dtype {value.dtype.name} "
                                   f"and shape {value.shape} (empty tensors and this dtype are not supported)")
        value = ctx.weight(value, name)
    if isinstance(value.op, PlaceholderOp) or value.name in seen:
        src = value
        value = te.compute(src.shape, lambda *i: src[i], name=ctx.name(name))
    seen.add(value.name)
    return value


def value_info(g: Graph) -> tuple:
    """({tensor: ONNX shape}, {tensor: dtype name}) from shape inference and the constants."""
    shapes = {n: s for n, (s, _) in g.types.items()}
    dtypes = {n: dtype_name(e) for n, (_, e) in g.types.items()}
    shapes.update((n, tuple(a.shape)) for n, a in g.consts.items())
    dtypes.update((n, a.dtype.name) for n, a in g.consts.items())
    return shapes, dtypes


def check_graph(g: Graph, table: dict) -> None:
    """UnsupportedError for the first node (in topological order) whose op, dtype or attributes the table lacks."""
    shapes, dtypes = value_info(g)
    for name in g.inputs:
        dt = dtypes.get(name)
        if dt not in NET_DTYPES:
            raise UnsupportedError(f"model {g.name!r}: input {name!r} has dtype {dt}, which is not supported")
    for k in topological(g):
        node_spec(g.nodes[k], make_node(g.nodes[k], g, shapes, dtypes), table)


def lower_graph(g: Graph, table: dict) -> Network:
    ctx = LowerContext()
    env = dict(g.consts)
    shapes, dtypes = value_info(g)
    for name in g.inputs:
        env[name] = _placeholder(name, g, ctx)
    for k in topological(g):
        proto = g.nodes[k]
        missing = [i for i in proto.input if i and i not in env]
        node = make_node(proto, g, shapes, dtypes)
        if missing:
            raise NetError(f"{node.where()}: input {missing[0]!r} is produced by no node")
        node, spec = node_spec(proto, node, table)
        outs = _lower(node, proto, [env[i] if i else None for i in proto.input], spec, ctx, g)
        for o, v in zip(proto.output, outs):
            if o and v is not None:
                env[o] = v
                shapes.setdefault(o, tuple(v.shape))
    return _network(g, env, ctx)


def model_name(raw: str) -> str:
    """The C-safe name of a model: its name with non-identifier characters as '_', "model_" in front when it
    would not start with a letter."""
    body = c_name(raw, "m")[2:] if raw else ""
    return body if body[:1].isalpha() else c_name(body, "model")


def _network(g: Graph, env: dict, ctx: LowerContext) -> Network:
    outputs, seen = [], set()
    for o in g.outputs:
        r = g.resolve(o)
        if r not in env:
            raise NetError(f"model {g.name!r}: output {o!r} is produced by no node")
        outputs.append(_as_output(env[r], o, ctx, seen, g.name))
    shapes = []
    for o, t in zip(g.outputs, outputs):
        r = g.resolve(o)
        s = tuple(env[r].shape) if isinstance(env[r], np.ndarray) else g.shape(r)
        shapes.append(tuple(t.shape) if s is None else tuple(s))
    net = Network(name=model_name(g.name), inputs=tuple(env[n] for n in g.inputs), outputs=tuple(outputs),
                  input_names=g.inputs, output_names=g.outputs, output_shapes=tuple(shapes), weights={})
    used = {t.name for t in Network(net.name, (), net.outputs, (), (), (), ctx.weights).weight_tensors()}
    return Network(net.name, net.inputs, net.outputs, net.input_names, net.output_names, net.output_shapes,
                   {k: v for k, v in ctx.weights.items() if k in used})
