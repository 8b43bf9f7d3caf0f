"""The QDQ import pass: a quantized model in QDQ form (onnxruntime.quantization.quantize_static's default) keeps
its float Conv / MatMul / Gemm between DequantizeLinear and QuantizeLinear nodes:

    DequantizeLinear(x) -> Conv(., DequantizeLinear(W), [DequantizeLinear(B)]) -> QuantizeLinear -> y

becomes one QLinearConv (QLinearMatMul for MatMul and Gemm), so the model runs integer kernels: int32
accumulation and requantization in the epilogue (ops/quant_linear.py), as onnxruntime's own QDQ fusion does. It
runs first, before constant folding would turn the dequantized weights into float ones.

A pattern folds only where the integer form computes what onnxruntime's fused one does: x and W int8/uint8, W
(and B) constants, x and y per-tensor, W per-tensor or per output channel (axis 0 for a conv, the columns of a
matmul), the bias int32 with scale x_scale * W_scale (float32, as the quantizer writes it) and zero point 0, the
float result read only by the QuantizeLinear, and Gemm with alpha = beta = 1 and transA = 0. Anything else stays
as it is and runs in float (within a quantization step of onnxruntime). A Gemm's bias travels as a ninth input of
the QLinearMatMul it becomes (an ansorc extension: ONNX's QLinearMatMul has no bias).

One exception runs integer where onnxruntime runs float: a bias that is not int32 at scale x_scale * W_scale (a
float constant, or another scale's dequantized one, directly or through Identity nodes: what the quantizer writes
for a model not pre-processed, whose exporter shares equal biases through Identity nodes) is quantized here as the
quantizer quantizes biases, round_half_even(B / (x_scale * W_scale)). onnxruntime runs such a conv in float; the
two agree within a quantization step."""
from __future__ import annotations

import dataclasses

import numpy as np
import onnx
from onnx import helper

from .import_passes import Graph, _uses

_Q8 = (onnx.TensorProto.INT8, onnx.TensorProto.UINT8)


def _attrs(node) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _dtype(g: Graph, name: str):
    if name in g.consts:
        return helper.np_dtype_to_tensor_dtype(g.consts[name].dtype)
    return g.types.get(name, (None, 0))[1]


def _size(g: Graph, name: str) -> int | None:
    return int(g.consts[name].size) if name in g.consts else None


class _Match:
    """The DequantizeLinear nodes feeding a candidate op: each as (x, scale, zero point or '', axis)."""

    def __init__(self, g: Graph, producer: dict, nodes: list):
        self.g, self.producer, self.nodes = g, producer, nodes

    def dq(self, tensor: str, const: bool = False):
        k = self.producer.get(tensor)
        if k is None or self.nodes[k].op_type != "DequantizeLinear":
            return None
        node = self.nodes[k]
        ins = list(node.input) + [""] * (3 - len(node.input))
        attrs = _attrs(node)
        if attrs.get("block_size", 0) or ins[1] not in self.g.consts or (ins[2] and ins[2] not in self.g.consts):
            return None
        if const and ins[0] not in self.g.consts:
            return None
        return ins[0], ins[1], ins[2], int(attrs.get("axis", 1)), k


def _per_tensor(g: Graph, *names) -> bool:
    return all(not n or _size(g, n) == 1 for n in names)


def _weight_ok(g: Graph, w, axis: int) -> bool:
    """W's scale and zero point are one value, or one per index of `axis` of W."""
    x, s, z, ax, _ = w
    if _dtype(g, x) not in _Q8:
        return False
    rank = g.consts[x].ndim
    if _per_tensor(g, s, z):
        return True
    n = g.consts[x].shape[axis]
    return (ax % rank) == axis and _size(g, s) == n and (not z or _size(g, z) == n)


def _constant_value(g: Graph, match: "_Match", name: str):
    """The value of `name` where it is a constant, an Identity of one, or a DequantizeLinear of one (per tensor, or
    per element of a 1-D one): the exporter shares equal biases through Identity nodes, so one conv's bias may be
    another's dequantized one. Else None."""
    for _ in range(8):
        if name in g.consts:
            return g.consts[name]
        node = match.nodes[match.producer[name]] if name in match.producer else None
        if node is not None and node.op_type == "Identity":
            name = node.input[0]
            continue
        dq = match.dq(name, const=True)
        if dq is None or not (_per_tensor(g, dq[1], dq[2]) or g.consts[dq[0]].ndim == 1):   # 1-D: per element
            return None
        zp = g.consts[dq[2]].astype(np.int64).reshape(-1) if dq[2] else 0
        q, scale = g.consts[dq[0]].astype(np.int64), g.consts[dq[1]].astype(np.float32).reshape(-1)
        return (q - zp).astype(np.float32) * (scale if q.ndim == 1 else scale[0])
    return None


def _bias_scale(g: Graph, x, w) -> np.ndarray:
    """x_scale * W_scale in float32: the scale of an int32 bias, one value or one per output channel."""
    return np.float32(g.consts[x[1]].reshape(-1)[0]) * g.consts[w[1]].reshape(-1).astype(np.float32)


def _float_bias(g: Graph, match: "_Match", bias: str, x, w, consts: dict, outputs: int) -> str | None:
    """A float32 constant bias (directly or through Identity nodes: the exporter's shared initializers, which the
    quantizer then leaves float) quantized as onnxruntime's quantizer quantizes biases: round_half_even(B /
    (x_scale * W_scale)) in float32, to int32, added to `consts`; its name, or None (not a constant, not float32,
    not one value per output channel, or out of int32's range)."""
    value = _constant_value(g, match, bias)
    if value is None or value.dtype != np.float32 or value.size != outputs:
        return None
    with np.errstate(all="ignore"):
        q = np.round(value.reshape(-1) / _bias_scale(g, x, w))
    if not np.all(np.isfinite(q)) or np.abs(q).max(initial=0) >= 2**31:
        return None
    name = _fresh(g, bias + "_quantized")
    consts[name] = q.astype(np.int32)
    return name


def _bias_ok(g: Graph, b, x, w) -> bool:
    """B is int32 with zero point 0 and the scale x_scale * W_scale in float32."""
    bq, s, z, _, _ = b
    if _dtype(g, bq) != onnx.TensorProto.INT32 or (z and g.consts[z].any()):
        return False
    want = _bias_scale(g, x, w)
    got = g.consts[s].reshape(-1).astype(np.float32)
    return got.size in (1, want.size) and bool(np.all(np.broadcast_to(got, want.shape) == want))


def _fused(g: Graph, match: _Match, op, q):
    """(the QLinear node replacing op and q, DQ node indices it no longer needs, new constants) or None."""
    x = match.dq(op.input[0])
    w = match.dq(op.input[1], const=True)
    qi = list(q.input) + [""] * (3 - len(q.input))
    if x is None or w is None or _dtype(g, x[0]) not in _Q8 or _dtype(g, q.output[0]) not in _Q8:
        return None
    if _attrs(q).get("block_size", 0) or qi[1] not in g.consts or (qi[2] and qi[2] not in g.consts):
        return None
    if not _per_tensor(g, x[1], x[2], qi[1], qi[2]):
        return None
    attrs, consts, extra = _attrs(op), {}, []
    bias = op.input[2] if len(op.input) > 2 and op.input[2] else None
    b = match.dq(bias, const=True) if bias else None
    dqs = {x[4], w[4]}
    if b is not None and _bias_ok(g, b, x, w):
        bias, dqs = b[0], dqs | {b[4]}
    elif bias:   # quantized here, as onnxruntime's quantizer would
        wshape = g.consts[w[0]].shape
        per_row = op.op_type == "Conv" or attrs.get("transB", 0)   # output channels: W's rows, else its columns
        bias = _float_bias(g, match, bias, x, w, consts, wshape[0] if per_row else wshape[-1])
        if bias is None:
            return None
    if op.op_type == "Conv":
        if not _weight_ok(g, w, 0):
            return None
        kind, wq = "QLinearConv", w[0]
    else:
        if g.consts[w[0]].ndim != 2:
            return None
        trans = op.op_type == "Gemm" and attrs.get("transB", 0)
        if op.op_type == "Gemm" and (attrs.get("transA", 0) or attrs.get("alpha", 1.0) != 1.0 or
                                     attrs.get("beta", 1.0) != 1.0):
            return None
        if not _weight_ok(g, w, 0 if trans else 1):
            return None
        kind, wq = "QLinearMatMul", w[0]
        if trans:   # the quantized weight transposed once here, as the float Gemm's lowering does
            wq = _fresh(g, w[0] + "_t")
            consts[wq] = np.ascontiguousarray(g.consts[w[0]].T)
        attrs = {}
    for role, (t, zp) in {"x": (x[0], x[2]), "w": (w[0], w[2])}.items():
        if not zp:   # an omitted zero point is 0 of its tensor's type
            zp = _fresh(g, f"{op.name}_{role}_zero_point")
            consts[zp] = np.zeros((), helper.tensor_dtype_to_np_dtype(_dtype(g, t)))
        extra.append(zp)
    inputs = [x[0], x[1], extra[0], wq, w[1], extra[1], qi[1], qi[2] or _y_zero(g, q, consts, op)]
    if bias:
        inputs.append(bias)
    new = helper.make_node(kind, inputs, [q.output[0]], name=op.name, **attrs)
    return new, dqs, consts


def _y_zero(g: Graph, q, consts: dict, op) -> str:
    name = _fresh(g, f"{op.name}_y_zero_point")
    consts[name] = np.zeros((), helper.tensor_dtype_to_np_dtype(_dtype(g, q.output[0])))
    return name


def _fresh(g: Graph, hint: str) -> str:
    name, k = hint, 0
    while name in g.consts or name in g.types:
        k += 1
        name = f"{hint}_{k}"
    return name


def fold_qdq(g: Graph) -> Graph:
    """Each DequantizeLinear -> Conv/MatMul/Gemm -> QuantizeLinear chain that qualifies becomes one QLinearConv
    or QLinearMatMul; the DequantizeLinear nodes nothing else reads go."""
    if not any(n.op_type == "QuantizeLinear" for n in g.nodes):
        return g
    producer = {o: k for k, n in enumerate(g.nodes) for o in n.output if o}
    uses, nodes = _uses(g), list(g.nodes)
    match, consts, dropped, maybe = _Match(g, producer, nodes), dict(g.consts), set(), set()
    for k, q in enumerate(g.nodes):
        if q.op_type != "QuantizeLinear" or q.input[0] not in producer:
            continue
        p = producer[q.input[0]]
        op = nodes[p]
        if op.op_type not in ("Conv", "MatMul", "Gemm") or uses.get(q.input[0], 0) != 1 or p in dropped:
            continue
        got = _fused(dataclasses.replace(g, consts=consts), match, op, q)
        if got is None:
            continue
        nodes[p], (dqs, new_consts) = got[0], got[1:]
        consts.update(new_consts)
        dropped.add(k)
        maybe |= dqs
    kept = [n for k, n in enumerate(nodes) if k not in dropped]
    read = {i for n in kept for i in n.input} | {g.resolve(o) for o in g.outputs}
    kept = [n for k, n in enumerate(nodes) if k not in dropped and
            not (k in maybe and not any(o in read for o in n.output))]
    return dataclasses.replace(g, nodes=tuple(kept), consts=consts)
