"""Graph passes of the ONNX importer, on an immutable `Graph` (each pass returns a new one):
constant folding, Dropout/Identity removal, BatchNormalization folded into the Conv before it.

Nodes stay onnx NodeProtos (never mutated: a changed node is a fresh copy); constants are numpy arrays.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper, numpy_helper

from .network import NetError

# never evaluated at import time: random values, or optional/sequence values (no tensors: outside ansorc)
NOT_FOLDABLE = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
                          "Bernoulli", "Optional", "OptionalHasElement", "OptionalGetElement"})
FOLD_LIMIT = 1 << 22  # elements: a larger folded result would bloat the weight file (it is computed at run time)


@dataclass(frozen=True)
class Graph:
    name: str          # the model's name, for messages
    opset: int         # default-domain opset
    nodes: tuple       # onnx.NodeProto, topological order, names filled in
    inputs: tuple      # names of the run-time inputs (graph inputs minus initializers)
    outputs: tuple     # names of the graph outputs (as given)
    consts: dict       # tensor name -> np.ndarray, known at import time
    types: dict        # tensor name -> (shape tuple or None, onnx elem type) from shape inference
    alias: dict        # removed tensor name -> the tensor it equals (Identity, Dropout)

    def resolve(self, name: str) -> str:
        while name in self.alias:
            name = self.alias[name]
        return name

    def shape(self, name: str):
        if name in self.consts:
            return tuple(self.consts[name].shape)
        return self.types.get(name, (None, 0))[0]


def _with_inputs(node, inputs) -> onnx.NodeProto:
    new = onnx.NodeProto()
    new.CopyFrom(node)
    del new.input[:]
    new.input.extend(inputs)
    return new


def _has_subgraph(node) -> bool:
    return any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute)


# ----------------------------------------------------------------------------- constant folding

def run_node(node, arrays: list, opset: int):
    """Evaluate one node on constant inputs with onnx's ReferenceEvaluator (a one-node model); None if it fails."""
    from onnx.reference import ReferenceEvaluator
    feeds = {n: np.asarray(a) for n, a in zip(node.input, arrays) if n}
    try:
        ins = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
               for n, a in feeds.items()]
        outs = [helper.make_empty_tensor_value_info(o) for o in node.output if o]
        model = helper.make_model(helper.make_graph([node], "fold", ins, outs),
                                  opset_imports=[helper.make_opsetid("", opset)])
        got = ReferenceEvaluator(model).run(None, feeds)
    except Exception:  # noqa: BLE001 - an op the reference cannot run is left to its lowering
        return None
    it = iter(got)
    return [np.asarray(next(it)) if o else None for o in node.output]


def _shape_value(node, shape) -> np.ndarray:
    """Shape / Size of a tensor whose shape is static."""
    if node.op_type == "Size":
        return np.array(math.prod(shape), np.int64)
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    start, end = attrs.get("start", 0), attrs.get("end", None)
    return np.array(shape[start:end], np.int64)


def _too_big(node, g: Graph) -> bool:
    for o in node.output:
        shape = g.types.get(o, (None, 0))[0]
        if shape is not None and math.prod(shape) > FOLD_LIMIT:
            return True
    return False


def result_elements(node, arrays: list) -> int:
    """Elements of a ConstantOfShape / EyeLike / Range result from its constant inputs (0 for other ops), known
    before the reference evaluator allocates it: shape inference may not know the size."""
    try:
        arrays = [a if isinstance(a, np.ndarray) else None for a in arrays]  # (a lowering's te tensor: unknown)
        if node.op_type == "ConstantOfShape" and arrays and arrays[0] is not None:
            return math.prod(abs(int(d)) for d in np.asarray(arrays[0]).reshape(-1))
        if node.op_type == "EyeLike" and arrays and arrays[0] is not None:
            return int(np.asarray(arrays[0]).size)
        if node.op_type == "Range" and len(arrays) == 3 and all(a is not None for a in arrays):
            start, limit, delta = (float(np.asarray(a).reshape(-1)[0]) for a in arrays)
            return max(int(math.ceil((limit - start) / delta)), 0)
    except (ValueError, OverflowError, ZeroDivisionError, IndexError):  # NaN, inf, delta 0: the lowering says so
        return 0
    return 0


def check_result_sizes(proto, model: str, limit: int) -> None:
    """Refuse a ConstantOfShape / Range on constants whose result has more than `limit` elements, naming the node,
    before onnx's shape inference (its data propagation would try to hold the values: std::bad_alloc or worse)."""
    g = proto.graph
    known = {t.name: t for t in g.initializer if math.prod(t.dims) <= 64}
    known.update((n.output[0], a.t) for n in g.node if n.op_type == "Constant"
                 for a in n.attribute if a.name == "value")
    for k, node in enumerate(g.node):
        if node.op_type not in ("ConstantOfShape", "Range") or not all(i in known for i in node.input):
            continue
        size = result_elements(node, [numpy_helper.to_array(known[i]) for i in node.input])
        if size > limit:
            raise NetError(f"node {node.name or f'{node.op_type}_{k}'!r} ({node.op_type}) of model {model!r}: its "
                           f"result would have {size} elements (at most {limit}: kernels index with 32-bit "
                           "integers)")


def _fold_one(node, consts: dict, g: Graph):
    """The node's outputs when known at import time, else None."""
    if node.op_type in NOT_FOLDABLE or node.op_type.startswith("Sequence") or _has_subgraph(node) or \
            _too_big(node, g):
        return None
    if node.op_type in ("Shape", "Size") and node.input[0] not in consts:
        shape = g.types.get(node.input[0], (None, 0))[0]
        return None if shape is None else [_shape_value(node, shape)]
    if not node.input and node.op_type != "Constant":
        return None
    if not all(not i or i in consts for i in node.input):
        return None
    arrays = [consts.get(i) for i in node.input]
    if result_elements(node, arrays) > FOLD_LIMIT:
        return None
    outs = run_node(node, arrays, g.opset)
    if outs is None or any(a is not None and a.size > FOLD_LIMIT for a in outs):
        return None  # (a size shape inference did not know)
    return [_as_type(a, g.types.get(o)) if o else None for o, a in zip(node.output, outs)]


def _as_type(a: np.ndarray, typ) -> np.ndarray:
    """The reference evaluator's result in the dtype shape inference gave the tensor."""
    if typ is None or not typ[1] or a.dtype == object:
        return np.asarray(a, order="C")
    return np.asarray(a.astype(helper.tensor_dtype_to_np_dtype(typ[1]), copy=False), order="C")


def fold_constants(g: Graph) -> Graph:
    """Constant nodes, nodes whose inputs are all constants, and Shape/Size of static shapes become constants.
    One sweep in topological order folds whole constant chains."""
    consts, nodes = dict(g.consts), []
    for node in g.nodes:
        outs = _fold_one(node, consts, g)
        if outs is None:
            nodes.append(node)
        else:
            consts.update((o, a) for o, a in zip(node.output, outs) if o)
    return dataclasses.replace(g, nodes=tuple(nodes), consts=consts)


# ----------------------------------------------------------------------------- Dropout / Identity

def _inference_dropout(node, g: Graph) -> bool:
    if g.opset < 12 or len(node.input) < 3 or not node.input[2]:
        return True  # before opset 12 Dropout is the identity at inference; training_mode defaults to false
    mode = g.consts.get(node.input[2])
    return mode is not None and not bool(np.asarray(mode).reshape(-1)[0])


def remove_identities(g: Graph) -> Graph:
    """Identity and inference-mode Dropout become aliases of their input; a used Dropout mask becomes a constant
    all-true tensor (no element is dropped at inference)."""
    alias, consts, nodes = dict(g.alias), dict(g.consts), []
    for node in g.nodes:
        node = _with_inputs(node, [_resolve(alias, i) if i else i for i in node.input])
        if node.op_type == "Identity":
            alias[node.output[0]] = node.input[0]
            continue
        if node.op_type == "Dropout" and _inference_dropout(node, g):
            if len(node.output) > 1 and node.output[1]:
                shape = g.shape(node.input[0])
                if shape is None:
                    nodes.append(node)
                    continue
                consts[node.output[1]] = np.ones(shape, np.bool_)
            alias[node.output[0]] = node.input[0]
            continue
        nodes.append(node)
    return dataclasses.replace(g, nodes=tuple(nodes), consts=consts, alias=alias)


def _resolve(alias: dict, name: str) -> str:
    while name in alias:
        name = alias[name]
    return name


# ----------------------------------------------------------------------------- BatchNormalization into Conv

def _uses(g: Graph) -> dict:
    count: dict = {}
    for node in g.nodes:
        for i in node.input:
            count[i] = count.get(i, 0) + 1
    for o in g.outputs:
        r = g.resolve(o)
        count[r] = count.get(r, 0) + 1
    return count


def _bn_params(bn, g: Graph):
    """(scale, bias, mean, var, epsilon) when the BatchNormalization is an inference one on constants."""
    attrs = {a.name: helper.get_attribute_value(a) for a in bn.attribute}
    if attrs.get("training_mode", 0) or not attrs.get("spatial", 1) or len(bn.input) != 5:
        return None
    if any(o for o in bn.output[1:]) or not all(i in g.consts for i in bn.input[1:]):
        return None
    return [g.consts[i].astype(np.float64) for i in bn.input[1:]] + [float(attrs.get("epsilon", 1e-5))]


def _fresh(g: Graph, consts: dict, hint: str) -> str:
    name, k = hint, 0
    while name in consts or name in g.types:
        k += 1
        name = f"{hint}_{k}"
    return name


def _folded_conv(conv, bn, params, g: Graph, consts: dict):
    scale, bias, mean, var, eps = params
    w = consts[conv.input[1]]
    b0 = consts[conv.input[2]].astype(np.float64) if len(conv.input) > 2 and conv.input[2] else 0.0
    with np.errstate(all="ignore"):  # a negative variance gives NaN weights, as the unfolded BN would
        s = scale / np.sqrt(var + eps)
        w_new = (w.astype(np.float64) * s.reshape((-1,) + (1,) * (w.ndim - 1))).astype(w.dtype)
        b_new = ((b0 - mean) * s + bias).astype(w.dtype)
    wn = _fresh(g, consts, conv.input[1] + "_bn")
    consts[wn] = np.asarray(w_new, order="C")
    bname = _fresh(g, consts, conv.input[1] + "_bn_bias")
    consts[bname] = np.asarray(b_new, order="C")
    new = _with_inputs(conv, [conv.input[0], wn, bname])
    del new.output[:]
    new.output.append(bn.output[0])
    return new


def fold_batchnorm(g: Graph) -> Graph:
    """Conv -> BatchNormalization (inference, constant parameters, the conv output read only by the BN) becomes
    one Conv with weights W * s and bias (B - mean) * s + beta, s = gamma / sqrt(var + eps)."""
    producer = {o: k for k, n in enumerate(g.nodes) for o in n.output if o}
    uses, consts = _uses(g), dict(g.consts)
    nodes, dropped = list(g.nodes), set()
    for k, bn in enumerate(g.nodes):
        if bn.op_type != "BatchNormalization" or bn.input[0] not in producer:
            continue
        c = producer[bn.input[0]]
        conv, params = nodes[c], _bn_params(bn, g)
        if conv.op_type != "Conv" or params is None or uses.get(bn.input[0], 0) != 1:
            continue
        if conv.input[1] not in consts or (len(conv.input) > 2 and conv.input[2] and conv.input[2] not in consts):
            continue
        if consts[conv.input[1]].shape[0] != params[0].shape[0]:
            continue
        nodes[c] = _folded_conv(conv, bn, params, g, consts)
        dropped.add(k)
    kept = tuple(n for k, n in enumerate(nodes) if k not in dropped)
    return dataclasses.replace(g, nodes=kept, consts=consts)


# ----------------------------------------------------------------------------- shapes known only after folding

def _unknown(g: Graph) -> bool:
    return any(o and g.types.get(o, (None, 0))[0] is None for n in g.nodes for o in n.output)


def to_proto(g: Graph, outputs=None) -> onnx.ModelProto:
    """The graph as a model again (folded constants as initializers): for shape inference, and for checking the
    passes with another runtime. `outputs`: tensor names to expose (default: the last one produced)."""
    read = {i for n in g.nodes for i in n.input} | set(outputs or ())
    inputs = [helper.make_tensor_value_info(n, g.types[n][1], g.types[n][0]) for n in g.inputs]
    names = outputs or [o for n in g.nodes for o in n.output if o][-1:]
    outs = [helper.make_tensor_value_info(o, *reversed(g.types[o])) if o in g.types else
            helper.make_empty_tensor_value_info(o) for o in names]
    inits = [numpy_helper.from_array(a, k) for k, a in g.consts.items() if k in read]
    graph = helper.make_graph(list(g.nodes), g.name or "model", inputs, outs, inits)
    opsets = [helper.make_opsetid("", g.opset)]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = helper.find_min_ir_version_for(opsets)  # runtimes may not read the newest IR
    return model


def reinfer(g: Graph) -> Graph:
    """Shape inference again, once folding made shape inputs constant (Reshape/Split of a computed shape)."""
    try:
        inferred = onnx.shape_inference.infer_shapes(to_proto(g), data_prop=True)
    except Exception:  # noqa: BLE001 - the first inference succeeded; keep what it found
        return g
    types = dict(g.types)
    for vi in list(inferred.graph.value_info) + list(inferred.graph.output):
        tt = vi.type.tensor_type
        if tt.HasField("shape") and all(d.HasField("dim_value") for d in tt.shape.dim):
            types[vi.name] = (tuple(d.dim_value for d in tt.shape.dim), tt.elem_type)
    return dataclasses.replace(g, types=types)


def settle_shapes(g: Graph) -> Graph:
    """Alternate shape inference and folding while shapes are unknown and each round learns something."""
    for _ in range(4):
        if not _unknown(g):
            break
        new = fold_constants(reinfer(g))
        if new.types == g.types and len(new.nodes) == len(g.nodes):
            break
        g = new
    return g


PASSES = (fold_constants, settle_shapes, remove_identities, fold_batchnorm)
