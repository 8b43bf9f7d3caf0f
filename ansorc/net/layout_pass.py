"""Channels-last layout pass (as TVM's ConvertLayout): 2-D convolutions and pools computed NHWC, the tensors
between them kept NHWC, transposes only where an NCHW-only op (Flatten, Reshape, Softmax, ...) or a graph
output needs the NCHW value.

One sweep in topological order. Each NCHW tensor may have an NHWC twin (`Sweep.nhwc`); a converted op reads
the twins of its inputs and produces a twin, never the NCHW value itself. The NCHW value is made back from its
twin (one `ToNCHW` node) only when a consumer that stays NCHW reads it, so transposes never meet in pairs:
conv -> relu -> conv holds no transpose at all. A graph input read by a conv gets one `ToNHWC` node.

The new nodes are internal ops (domain "ansorc", ops_layout.INTERNAL); their output shapes are written into
`Graph.types` here (onnx shape inference knows nothing of them), so this pass runs last.
"""
from __future__ import annotations

import dataclasses
import os

import numpy as np
from onnx import helper

from ..ir.program.names import fresh_name
from .import_passes import Graph, _has_subgraph

DOMAIN = "ansorc"
TO_NHWC, TO_NCHW, HWIO = (0, 2, 3, 1), (0, 3, 1, 2), (2, 3, 1, 0)
LAYOUTS = ("nhwc", "nchw")
# one input, same shape out; extra inputs (Clip's min/max) must be constants, kept as they are
UNARY = frozenset({"Relu", "LeakyRelu", "Elu", "Selu", "Celu", "ThresholdedRelu", "HardSigmoid", "HardSwish",
                   "Sigmoid", "Tanh", "Softplus", "Softsign", "Mish", "Swish", "Gelu", "Erf", "Exp", "Log", "Neg",
                   "Abs", "Sqrt", "Reciprocal", "Floor", "Ceil", "Round", "Sign", "Shrink", "Clip"})
# element-wise with numpy broadcasting: every input an NHWC twin of the output's shape or a permuted constant
BINARY = frozenset({"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean", "PRelu"})
# op -> (its channels-last op, the weight's input index, the bias's or None)
CONVS = {"Conv": ("ConvNHWC", 1, 2), "QLinearConv": ("QLinearConvNHWC", 3, 8),
         "ConvInteger": ("ConvIntegerNHWC", 1, None)}
QUANT = frozenset({"QuantizeLinear", "DequantizeLinear"})   # element-wise where per-tensor (scale, zero point)
POOLS = {"MaxPool": "MaxPoolNHWC", "AveragePool": "AveragePoolNHWC",
         "GlobalAveragePool": "GlobalAveragePoolNHWC", "GlobalMaxPool": "GlobalMaxPoolNHWC"}


def default_layout() -> str:
    """The layout networks compute convolutions in: ANSORC_NET_LAYOUT=nchw turns the pass off."""
    return os.environ.get("ANSORC_NET_LAYOUT", "nhwc").strip().lower() or "nhwc"


def nhwc_shape(shape) -> tuple:
    return tuple(shape[p] for p in TO_NHWC)


class Sweep:
    """The mutable state of one run of the pass (the Graph itself stays immutable)."""

    def __init__(self, g: Graph):
        self.g = g
        self.nodes: list = []
        self.consts = dict(g.consts)
        self.types = dict(g.types)
        self.nhwc: dict = {}          # NCHW tensor name -> its NHWC twin
        self.present: set = set(g.inputs) | set(g.consts)  # NCHW values that exist
        self.taken = set(g.types) | set(g.consts) | {o for n in g.nodes for o in n.output}
        self.names = {n.name for n in g.nodes}

    def emit(self, op: str, inputs, hint: str, out_shape, elem: int, domain: str = DOMAIN, like=None,
             replaces=None, **attrs):
        """A new node of one output (a fresh tensor of `out_shape`) after the nodes so far; its output name.
        `like`: copy that ONNX node's op and attributes; `replaces`: the node it stands for, whose name it takes
        (so messages name the user's node)."""
        out = fresh_name(f"{hint}_nhwc", self.taken)
        old = like if like is not None else replaces
        name = old.name if old is not None else fresh_name(hint, self.names)
        node = helper.make_node(op, list(inputs), [out], name=name, domain=domain, **attrs)
        if like is not None:
            node.attribute.extend(like.attribute)
        self.nodes.append(node)
        self.types[out] = (tuple(out_shape), elem)
        return out

    def elem(self, name: str) -> int:
        if name in self.consts:
            return helper.np_dtype_to_tensor_dtype(self.consts[name].dtype)
        return self.types.get(name, (None, 0))[1]

    def twin(self, name: str) -> str:
        """The NHWC twin of a 4-D NCHW value, made (one ToNHWC) when it has none yet."""
        if name not in self.nhwc:
            shape = nhwc_shape(self.g.shape(name))
            self.nhwc[name] = self.emit("ToNHWC", [name], f"{name}_to", shape, self.elem(name))
        return self.nhwc[name]

    def need_nchw(self, name: str) -> None:
        """Make the NCHW value of `name` from its twin when only the twin exists."""
        if name and name not in self.present and name in self.nhwc:
            src = self.nhwc[name]
            node = helper.make_node("ToNCHW", [src], [name], name=fresh_name(f"{name}_to_nchw", self.names),
                                    domain=DOMAIN)
            self.nodes.append(node)
            self.present.add(name)


def _attrs(node) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _rank4(g: Graph, name: str) -> bool:
    s = g.shape(name)
    return s is not None and len(s) == 4


def _conv_ok(node, g: Graph) -> bool:
    """A 2-D Conv (QLinearConv, ConvInteger) whose weight, bias and groups fit its shapes; anything else stays
    NCHW (and reports its own error when lowered)."""
    _, wi, bi = CONVS[node.op_type]
    if len(node.input) <= wi or not _rank4(g, node.input[0]) or not _rank4(g, node.input[wi]):
        return False
    if node.input[0] in g.consts or not node.output[0] or not _rank4(g, node.output[0]):
        return False
    ws, c = g.shape(node.input[wi]), g.shape(node.input[0])[1]
    group = int(_attrs(node).get("group", 1))
    if group < 1 or c % group or ws[0] % group or ws[1] * group != c:
        return False
    b = node.input[bi] if bi is not None and len(node.input) > bi and node.input[bi] else None
    return b is None or g.shape(b) == (ws[0],)


def _weight(s: Sweep, name: str) -> str:
    """The (KH, KW, CI/group, CO) weight: permuted now when constant, else by a ToHWIO node at run time."""
    if name not in s.consts:
        shape = tuple(s.g.shape(name)[p] for p in HWIO)
        return s.emit("ToHWIO", [name], f"{name}_to", shape, s.elem(name))
    wname = fresh_name(f"{name}_hwio", s.taken)
    s.consts[wname] = np.ascontiguousarray(np.transpose(s.consts[name], HWIO))
    return wname


def _conv(s: Sweep, node) -> None:
    g = s.g
    for i in node.input[1:]:
        s.need_nchw(i)
    ins = list(node.input)
    op, wi, _ = CONVS[node.op_type]
    ins[0], ins[wi] = s.twin(ins[0]), _weight(s, ins[wi])
    if node.op_type == "Conv":
        ins = [i for i in ins[:3] if i]
    out = node.output[0]
    s.nhwc[out] = s.emit(op, ins, node.name, nhwc_shape(g.shape(out)), s.elem(out), replaces=node, **_attrs(node))


def _pool_ok(node, g: Graph, s: Sweep) -> bool:
    if node.op_type not in POOLS or node.input[0] not in s.nhwc or not _rank4(g, node.output[0]):
        return False
    return len([o for o in node.output if o]) == 1 and len(node.output) == 1  # MaxPool's Indices stay NCHW


def _pool(s: Sweep, node) -> None:
    out = node.output[0]
    s.nhwc[out] = s.emit(POOLS[node.op_type], [s.nhwc[node.input[0]]], node.name, nhwc_shape(s.g.shape(out)),
                         s.elem(out), replaces=node, **_attrs(node))


def _permuted_const(s: Sweep, name: str, out_shape) -> str | None:
    """An NHWC version of a constant operand broadcast against an NCHW output, or None when it cannot be."""
    a = s.consts[name]
    if a.size == 1 and a.ndim <= 4:
        return name
    if a.ndim > 4:
        return None
    full = a.reshape((1,) * (4 - a.ndim) + a.shape)
    try:
        if np.broadcast_shapes(full.shape, out_shape) != tuple(out_shape):
            return None
    except ValueError:
        return None
    new = fresh_name(f"{name}_nhwc", s.taken)
    s.consts[new] = np.ascontiguousarray(np.transpose(full, TO_NHWC))
    return new


def _per_tensor_quant(s: Sweep, node) -> bool:
    """QuantizeLinear / DequantizeLinear with one constant scale and zero point: element-wise, so on a twin."""
    if len(node.input) < 2 or any(i and (i not in s.consts or s.consts[i].size != 1) for i in node.input[1:3]):
        return False
    return _elementwise(s, node)


def _elementwise(s: Sweep, node) -> bool:
    """Unary/binary element-wise node on NHWC twins; False (nothing emitted) when it must stay NCHW."""
    g = s.g
    out = node.output[0] if len(node.output) == 1 else ""
    shape = g.shape(out) if out else None
    if shape is None or len(shape) != 4 or (node.op_type in BINARY and g.opset < 7):
        return False
    unary = node.op_type in UNARY or node.op_type in QUANT
    firsts = node.input[:1] if unary else node.input
    rest = node.input[1:] if unary else []
    if any(i and i not in s.consts for i in rest):
        return False
    ins = []
    for i in firsts:
        if i in s.consts:
            ins.append(_permuted_const(s, i, shape))
        else:
            ins.append(s.nhwc.get(i) if g.shape(i) == shape else None)
    if None in ins or not any(i in s.nhwc for i in firsts):
        return False
    s.nhwc[out] = s.emit(node.op_type, ins + list(rest), out, nhwc_shape(shape), s.elem(out), like=node,
                         domain="")
    return True


def _concat(s: Sweep, node) -> bool:
    g = s.g
    out = node.output[0]
    axis = int(_attrs(node).get("axis", 1))
    if not _rank4(g, out) or axis not in (1, -3) or not all(i in s.nhwc for i in node.input):
        return False
    twins = [s.nhwc[i] for i in node.input]
    s.nhwc[out] = s.emit("Concat", twins, out, nhwc_shape(g.shape(out)), s.elem(out), domain="", replaces=node,
                         axis=3)
    return True


def _batchnorm(s: Sweep, node) -> bool:
    """An inference BatchNormalization left over (not after a conv: DenseNet's BN -> ReLU -> Conv) on an NHWC
    twin: x * scale' + shift' with per-channel constants in the last axis."""
    attrs = _attrs(node)
    out = node.output[0]
    if len(node.input) != 5 or any(node.output[1:]) or node.input[0] not in s.nhwc or not _rank4(s.g, out):
        return False
    if attrs.get("training_mode", 0) or not attrs.get("spatial", 1) or not all(i in s.consts for i in node.input[1:]):
        return False
    scale, bias, mean, var = (s.consts[i].astype(np.float64).reshape(-1) for i in node.input[1:])
    dtype = s.consts[node.input[1]].dtype
    with np.errstate(all="ignore"):  # a negative variance gives NaN, as the ONNX op would
        mul = scale / np.sqrt(var + float(attrs.get("epsilon", 1e-5)))
        add = bias - mean * mul
    names = []
    for hint, a in (("bn_scale", mul), ("bn_shift", add)):
        names.append(fresh_name(f"{node.name}_{hint}", s.taken))
        s.consts[names[-1]] = a.astype(dtype).reshape(1, 1, 1, -1)
    shape, elem = nhwc_shape(s.g.shape(out)), s.elem(out)
    scaled = s.emit("Mul", [s.nhwc[node.input[0]], names[0]], f"{out}_scaled", shape, elem, domain="")
    s.nhwc[out] = s.emit("Add", [scaled, names[1]], out, shape, elem, domain="", replaces=node)
    return True


def _keep(s: Sweep, node) -> None:
    for i in node.input:
        s.need_nchw(i)
    s.nodes.append(node)
    s.present.update(o for o in node.output if o)


def _step(s: Sweep, node) -> None:
    op = node.op_type
    if op in CONVS and _conv_ok(node, s.g):
        _conv(s, node)
    elif _pool_ok(node, s.g, s):
        _pool(s, node)
    else:
        convert = _elementwise if op in UNARY or op in BINARY else CONVERT.get(op)
        if convert is None or not convert(s, node):
            _keep(s, node)


# op -> converter (False: it stays NCHW)
CONVERT = {"Concat": _concat, "BatchNormalization": _batchnorm,
           "QuantizeLinear": _per_tensor_quant, "DequantizeLinear": _per_tensor_quant}


def to_channels_last(g: Graph) -> Graph:
    """The graph with its 2-D convolutions (and the element-wise ops and pools between them) channels-last."""
    if not any(n.op_type in CONVS for n in g.nodes) or any(_has_subgraph(n) for n in g.nodes):
        return g  # (a subgraph may read any outer value by name: every NCHW value must then exist)
    s = Sweep(g)
    for node in g.nodes:
        _step(s, node)
    for o in g.outputs:
        s.need_nchw(g.resolve(o))
    return dataclasses.replace(g, nodes=tuple(s.nodes), consts=s.consts, types=s.types)


def apply_layout(g: Graph, layout: str | None = None) -> Graph:
    """The layout step of the importer: `layout` "nhwc" (default: ANSORC_NET_LAYOUT, else nhwc) or "nchw"."""
    layout = (layout or default_layout()).lower()
    if layout not in LAYOUTS:
        from .network import NetError
        raise NetError(f"layout {layout!r} is not one of {', '.join(LAYOUTS)} (the layout= argument, else "
                       "ANSORC_NET_LAYOUT)")
    return to_channels_last(g) if layout == "nhwc" else g


__all__ = ["DOMAIN", "apply_layout", "default_layout", "to_channels_last"]
