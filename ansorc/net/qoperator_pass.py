"""The QOperator import pass: onnxruntime's quantizer in QOperator format (`quantize_static(...,
quant_format=QuantFormat.QOperator)`) writes QLinearConv and, in its com.microsoft domain, QLinearAdd,
QLinearGlobalAveragePool, QGemm, ... Each com.microsoft op of QOPS is rewritten here, on the ModelProto before
shape inference (onnx knows no com.microsoft schema), into the float computation it quantizes:

    QLinearAdd(A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp)
        -> QuantizeLinear(Add(DequantizeLinear(A, A_scale, A_zp), DequantizeLinear(B, ...)), C_scale, C_zp)

so that the model is a QDQ model from here on: the QDQ pass (qdq_pass.py) folds QGemm's Gemm into a
QLinearMatMul (integer kernel, bit-exact), and the other float ops run between their DequantizeLinear and
QuantizeLinear as in a QDQ model, fused into one kernel. QuantizeLinear rounds half to even and saturates, as
onnxruntime's kernels do; they compute some ops in other float steps (QLinearAdd scales each operand by its ratio
to C_scale, QLinearGlobalAveragePool sums integers and scales once), so those agree within one quantization step,
not bit for bit. QLinearConcat dequantizes each input with its own scale and zero point (a copy where they equal
the output's, bit-exact). channels_last pools run between Transposes to and from channels-first.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..ir.program.names import fresh_name
from .network import UnsupportedError

MS = "com.microsoft"
POOL_ATTRS = ("auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides")


@dataclass(frozen=True)
class QOp:
    """How one com.microsoft op decomposes: the float op, the positions of the (x, scale, zero point) triples of
    its quantized inputs, of the output's (scale, zero point), and the attributes the float op takes as given."""
    float_op: str
    triples: tuple
    output: tuple
    attrs: tuple = ()
    variadic: int = 0            # > 0: triples run from this input position to the end (QLinearConcat)
    own: tuple = ()              # attributes a special case below reads (not passed on as they are)
    note: str = ""               # for the support table (docs/networks.md)


_CL = "channels_last: between Transposes"
QOPS = {
    "QLinearAdd": QOp("Add", ((0, 1, 2), (3, 4, 5)), (6, 7), note="within one step"),
    "QLinearMul": QOp("Mul", ((0, 1, 2), (3, 4, 5)), (6, 7), note="within one step"),
    "QLinearSigmoid": QOp("Sigmoid", ((0, 1, 2),), (3, 4)),
    "QLinearLeakyRelu": QOp("LeakyRelu", ((0, 1, 2),), (3, 4), ("alpha",)),
    "QLinearSoftmax": QOp("Softmax", ((0, 1, 2),), (3, 4), own=("axis", "opset"),
                          note="opset attribute as the model's, or the last axis; within one step"),
    "QLinearGlobalAveragePool": QOp("GlobalAveragePool", ((0, 1, 2),), (3, 4), own=("channels_last",),
                                    note=f"{_CL}; within one step"),
    "QLinearAveragePool": QOp("AveragePool", ((0, 1, 2),), (3, 4), POOL_ATTRS, own=("channels_last",),
                              note=f"{_CL}; within one step"),
    "QLinearConcat": QOp("Concat", (), (0, 1), ("axis",), variadic=2,
                         note="each input at its own scale and zero point; bit-exact"),
    "QGemm": QOp("Gemm", ((0, 1, 2), (3, 4, 5)), (7, 8), ("alpha", "transA", "transB"),   # + the int32 bias C
                 note="folded into QLinearMatMul (alpha 1, transA 0); float output: MatMulInteger, scaled; "
                      "bit-exact"),
}
SAME = {"QuantizeLinear": ("axis",), "DequantizeLinear": ("axis",)}   # com.microsoft twins of ONNX's 8-bit ops


def _attrs(node) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


class _Rewrite:
    """The model's nodes with each com.microsoft op replaced, new constants, fresh names, tensor types."""

    def __init__(self, proto, model: str):
        self.proto, self.model, self.nodes, self.inits = proto, model, [], []
        g = proto.graph
        self.consts = {t.name: t for t in g.initializer}
        self.names = {n for node in g.node for n in (*node.input, *node.output)} | set(self.consts) | \
            {vi.name for vi in (*g.input, *g.output, *g.value_info)}
        self.types = _declared(g)
        self.opset = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), 0)

    def fresh(self, hint: str) -> str:
        return fresh_name(hint, self.names)

    def const(self, hint: str, value: np.ndarray) -> str:
        name = self.fresh(hint)
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        self.consts[name] = self.inits[-1]
        return name

    def add(self, op: str, inputs, hint: str, outputs=None, node_name: str = "", **attrs) -> str:
        """A new node; `node_name`: the rewritten node's, which the float op keeps for later messages."""
        outputs = outputs or [self.fresh(hint)]
        self.nodes.append(helper.make_node(op, list(inputs), outputs, name=node_name or self.fresh(hint), **attrs))
        return outputs[0]

    def type_of(self, name: str, where: str) -> tuple:
        """(rank, elem type) of a tensor: declared, else from onnx's shape inference of the model as rewritten so
        far (every node before this one is a default-domain op by now)."""
        if name not in self.types:
            self.types.update(_inferred(self.proto, self.nodes, self.inits))
        if name not in self.types:
            raise UnsupportedError(f"{where}: the type and rank of {name!r} are not known (shape inference)")
        return self.types[name]

    def value(self, name: str):
        return numpy_helper.to_array(self.consts[name]) if name in self.consts else None


def _declared(g) -> dict:
    out = {t.name: (len(t.dims), t.data_type) for t in g.initializer}
    for vi in (*g.input, *g.output, *g.value_info):
        tt = vi.type.tensor_type
        if vi.type.HasField("tensor_type") and tt.elem_type:
            out[vi.name] = (len(tt.shape.dim) if tt.HasField("shape") else None, tt.elem_type)
    return out


def _inferred(proto, nodes, inits) -> dict:
    m = onnx.ModelProto()
    m.CopyFrom(proto)
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    m.graph.initializer.extend(inits)
    try:
        return _declared(onnx.shape_inference.infer_shapes(m).graph)
    except Exception:  # noqa: BLE001 - the caller says what it could not learn
        return {}


# ----------------------------------------------------------------------------- one op

def _name(node, k: int) -> str:
    return node.name or f"{node.op_type}_{k}"   # as the importer names a nameless node


def _where(node, k: int, model: str) -> str:
    return f"node {_name(node, k)!r} ({node.op_type}) of model {model!r}"


def _check_attrs(node, spec: QOp, where: str) -> dict:
    attrs = _attrs(node)
    extra = sorted(set(attrs) - set(spec.attrs) - set(spec.own))
    if extra:
        raise UnsupportedError(f"{where}: attribute {extra[0]!r} is not supported (supported: "
                               f"{', '.join(spec.attrs + spec.own) or 'none'})")
    return attrs


def _triples(node, spec: QOp, where: str) -> list:
    ins = list(node.input)
    if not spec.variadic:
        return [tuple(ins[p] if p < len(ins) else "" for p in t) for t in spec.triples]
    rest = ins[spec.variadic:]
    if not rest or len(rest) % 3:
        raise UnsupportedError(f"{where}: {len(rest)} inputs after the output's scale and zero point (want "
                               "(X, X_scale, X_zero_point) triples)")
    return [tuple(rest[i:i + 3]) for i in range(0, len(rest), 3)]


def _dequantized(rw: _Rewrite, triple, hint: str, where: str, axis: int | None = None) -> str:
    x, scale, zp = triple
    if not x or not scale:
        raise UnsupportedError(f"{where}: a quantized input or its scale is missing")
    attrs = {}
    if axis is not None and rw.opset >= 13:
        attrs["axis"] = axis
    elif axis is not None and (rw.value(scale) is None or rw.value(scale).size != 1):
        raise UnsupportedError(f"{where}: a per-channel scale needs opset 13 or newer (the model has {rw.opset})")
    return rw.add("DequantizeLinear", [x, scale] + ([zp] if zp else []), f"{hint}_dq", **attrs)


def _quantize(rw: _Rewrite, value: str, node, spec: QOp, where: str) -> None:
    """QuantizeLinear of the float result into the node's output; an omitted zero point is 0 of the input's
    type (the output's type is the input's in every op of QOPS)."""
    ins = list(node.input)
    scale, zp = (ins[p] if p < len(ins) else "" for p in spec.output)
    if not zp:
        x = _triples(node, spec, where)[0][0]
        elem = rw.type_of(x, where)[1]
        zp = rw.const(f"{node.output[0]}_zero_point", np.zeros((), helper.tensor_dtype_to_np_dtype(elem)))
    rw.add("QuantizeLinear", [value, scale, zp], f"{node.output[0]}_q", outputs=[node.output[0]])


def _softmax(rw: _Rewrite, node, attrs: dict, where: str) -> dict:
    """Softmax's axis and its meaning follow the `opset` attribute (before 13: the input coerced to 2-D at the
    axis, default 1; from 13: one axis, default -1); the float Softmax follows the model's opset. They agree when
    both say the same or the axis is the last one."""
    old = int(attrs.get("opset", rw.opset)) < 13
    axis = int(attrs.get("axis", 1 if old else -1))
    if old != (rw.opset < 13) and axis != -1:
        rank = rw.type_of(node.input[0], where)[0]
        if rank is None or axis % rank != rank - 1:
            raise UnsupportedError(f"{where}: opset={attrs.get('opset')} Softmax on axis {axis}, not the last one, "
                                   f"in a model of opset {rw.opset} (their Softmax differ there)")
    return {"axis": axis}


def _gemm_bias(rw: _Rewrite, node, attrs: dict, where: str) -> list:
    """QGemm's C: int32 at scale alpha * a_scale * b_scale (zero point 0), dequantized at that scale, computed
    here in float32 as the quantizer writes it (what the QDQ pass checks before it folds the Gemm)."""
    ins = list(node.input) + [""] * 9
    if not ins[6]:
        return []
    a_scale, b_scale = rw.value(ins[1]), rw.value(ins[4])
    if a_scale is None or b_scale is None:
        raise UnsupportedError(f"{where}: a bias C needs constant a_scale and b_scale")
    scale = np.float32(attrs.get("alpha", 1.0)) * np.float32(a_scale.reshape(-1)[0]) * b_scale.astype(np.float32)
    bias_scale = rw.const(f"{ins[6]}_scale", scale.reshape(-1) if scale.size > 1 else scale.reshape(()))
    return [_dequantized(rw, (ins[6], bias_scale, ""), ins[6], where, -1 if scale.size > 1 else None)]


def _transposed(rw: _Rewrite, x: str, node, where: str, to_first: bool) -> str:
    rank = rw.type_of(node.input[0], where)[0]
    if rank is None or rank < 3:
        raise UnsupportedError(f"{where}: channels_last needs an input of known rank 3 or more")
    perm = [0, rank - 1, *range(1, rank - 1)] if to_first else [0, *range(2, rank), 1]
    return rw.add("Transpose", [x], f"{node.output[0]}_{'nchw' if to_first else 'nhwc'}", perm=perm)


def _expand(rw: _Rewrite, node, k: int) -> None:
    spec, where = QOPS[node.op_type], _where(node, k, rw.model)
    attrs = _check_attrs(node, spec, where)
    if node.op_type == "QGemm" and (len(node.input) < 8 or not node.input[7]):
        return _float_gemm(rw, node, attrs, where, _name(node, k))
    ins = [_dequantized(rw, t, f"{node.output[0]}_in{i}", where, _axis(node, i, attrs))
           for i, t in enumerate(_triples(node, spec, where))]
    kept = {a: attrs[a] for a in spec.attrs if a in attrs}
    channels_last = bool(attrs.get("channels_last", 0))
    if channels_last:
        ins = [_transposed(rw, ins[0], node, where, True)]
    if node.op_type == "QLinearSoftmax":
        kept.update(_softmax(rw, node, attrs, where))
    elif node.op_type == "QGemm":
        ins += _gemm_bias(rw, node, attrs, where)
    y = rw.add(spec.float_op, ins, f"{node.output[0]}_float", node_name=_name(node, k), **kept)
    if channels_last:
        y = _transposed(rw, y, node, where, False)
    _quantize(rw, y, node, spec, where)


def _axis(node, i: int, attrs: dict) -> int | None:
    """The per-channel axis of QGemm's B (its output columns), else None (per tensor)."""
    return (0 if attrs.get("transB", 0) else 1) if node.op_type == "QGemm" and i == 1 else None


def _float_gemm(rw: _Rewrite, node, attrs: dict, where: str, name: str) -> None:
    """QGemm without y_scale has a float output: onnxruntime's float(A'B' + C) * (alpha * a_scale * b_scale), the
    int32 sum (+ C) scaled once. As MatMulInteger (B transposed at import where transB), Add, Cast, Mul: the same
    steps, bit-exact."""
    ins = list(node.input) + [""] * 9
    a_scale, b_scale = rw.value(ins[1]), rw.value(ins[4])
    if a_scale is None or b_scale is None:
        raise UnsupportedError(f"{where}: a float output needs constant a_scale and b_scale")
    a, b, out = ins[0], ins[3], node.output[0]
    if attrs.get("transA", 0):
        a = rw.add("Transpose", [a], f"{out}_at", perm=[1, 0])
    if attrs.get("transB", 0):
        b = rw.add("Transpose", [b], f"{out}_bt", perm=[1, 0])
    acc = rw.add("MatMulInteger", [a, b, ins[2], ins[5]], f"{out}_acc", node_name=name)
    if ins[6]:
        acc = rw.add("Add", [acc, ins[6]], f"{out}_biased")
    scale = np.float32(attrs.get("alpha", 1.0)) * np.float32(a_scale.reshape(-1)[0]) * \
        b_scale.reshape(-1).astype(np.float32)   # in onnxruntime's order: (alpha * a_scale) * b_scale[n]
    wide = rw.add("Cast", [acc], f"{out}_float", to=onnx.TensorProto.FLOAT)
    rw.add("Mul", [wide, rw.const(f"{out}_scale", scale)], out, outputs=[out])


def _same(rw: _Rewrite, node, k: int) -> None:
    where = _where(node, k, rw.model)
    extra = sorted(set(_attrs(node)) - set(SAME[node.op_type]))
    if extra:
        raise UnsupportedError(f"{where}: attribute {extra[0]!r} is not supported")
    new = onnx.NodeProto()
    new.CopyFrom(node)
    new.domain, new.name = "", _name(node, k)
    rw.nodes.append(new)


# ----------------------------------------------------------------------------- the pass

def _named(node, k: int):
    """The node, named by its index in the model as given where it has no name (the importer names nameless
    nodes by index, which the rewrite shifts)."""
    if node.name:
        return node
    new = onnx.NodeProto()
    new.CopyFrom(node)
    new.name = _name(node, k)
    return new


def expand_qoperator(proto, model: str):
    """The model with its com.microsoft QOperator ops rewritten as DequantizeLinear -> float op -> QuantizeLinear
    (a new ModelProto; `proto` itself is not changed); unchanged when it has none. UnsupportedError naming the
    node for another com.microsoft op or an attribute outside QOPS."""
    if not any(n.domain == MS for n in proto.graph.node):
        return proto
    rw = _Rewrite(proto, model)
    for k, node in enumerate(proto.graph.node):
        if node.domain != MS:
            rw.nodes.append(_named(node, k))
        elif node.op_type in QOPS:
            _expand(rw, node, k)
        elif node.op_type in SAME:
            _same(rw, node, k)
        else:
            raise UnsupportedError(f"{_where(node, k, model)}: com.microsoft op {node.op_type} is not supported "
                                   f"(supported: {', '.join(sorted(QOPS) + sorted(SAME))})")
    out = onnx.ModelProto()
    out.CopyFrom(proto)
    del out.graph.node[:]
    out.graph.node.extend(rw.nodes)
    out.graph.initializer.extend(rw.inits)
    return out
