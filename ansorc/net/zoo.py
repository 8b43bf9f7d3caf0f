"""Offline model zoo: ResNet-18/50, MobileNetV2 and a BERT-tiny built with onnx.helper and seeded numpy weights
(no torch, no download). The structure follows the usual exports (Conv + BatchNormalization + ReLU, residual Adds,
ReLU6 as Clip, GlobalAveragePool + Flatten + Gemm head; BERT: Gather embeddings, MatMul + Add + Softmax attention,
LayerNorm, GELU via Erf). Weights are He-initialized and BN statistics sane, so activations stay O(1) and a 1e-4
relative comparison against onnxruntime is meaningful.

    m = zoo.resnet50()            # onnx.ModelProto, input "input" (1, 3, 224, 224) float32, output "logits"
"""
from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8  # onnxruntime 1.30 reads it; opset 17 needs IR >= 8


class _Builder:
    """Collects nodes and initializers with unique names; weights drawn from one seeded generator."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.count = [], [], {}

    def fresh(self, hint: str) -> str:
        k = self.count.get(hint, 0)
        self.count[hint] = k + 1
        return f"{hint}_{k}"

    def const(self, hint: str, array) -> str:
        name = self.fresh(hint)
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(self, op_type: str, inputs: list, hint: str = "", out: str = "", **attrs) -> str:
        name = self.fresh(hint or op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out or name], name=name, **attrs))
        return out or name

    def normal(self, std: float, shape) -> np.ndarray:
        return self.rng.normal(0.0, std, shape).astype(np.float32)

    def model(self, name: str, inputs: list, outputs: list) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="ansorc.zoo")
        m.ir_version = IR_VERSION
        onnx.checker.check_model(m)
        return m


# ----------------------------------------------------------------------------- convolutional networks

def _conv_bn(b: _Builder, x: str, cin: int, cout: int, k: int, stride: int = 1, group: int = 1,
             act: str | None = "relu", gamma: float = 1.0) -> str:
    """Conv (no bias) + BatchNormalization + activation; `gamma` scales the BN weight (small on the last BN of a
    residual branch, so that the sum of many branches stays O(1))."""
    fan_in = cin // group * k * k
    w = b.const("w", b.normal(math.sqrt(2.0 / fan_in), (cout, cin // group, k, k)))
    y = b.op("Conv", [x, w], "conv", kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4, group=group)
    # BN statistics near the conv output's (mean 0, variance ~ 2 * input variance under He init)
    stats = [b.rng.uniform(0.8, 1.2, cout) * gamma, b.rng.normal(0.0, 0.05, cout), b.rng.normal(0.0, 0.05, cout),
             b.rng.uniform(1.0, 2.0, cout)]
    names = [b.const(h, s.astype(np.float32)) for h, s in zip(("bn_scale", "bn_bias", "bn_mean", "bn_var"), stats)]
    y = b.op("BatchNormalization", [y] + names, "bn", epsilon=1e-5)
    if act == "relu":
        return b.op("Relu", [y], "relu")
    if act == "relu6":
        lo, hi = b.const("clip_min", np.array(0.0, np.float32)), b.const("clip_max", np.array(6.0, np.float32))
        return b.op("Clip", [y, lo, hi], "relu6")
    return y


def _head(b: _Builder, x: str, cin: int, classes: int) -> str:
    pooled = b.op("Flatten", [b.op("GlobalAveragePool", [x], "gap")], "flatten", axis=1)
    w = b.const("fc_w", b.normal(1.0 / math.sqrt(cin), (classes, cin)))
    bias = b.const("fc_b", b.normal(0.01, (classes,)))
    return b.op("Gemm", [pooled, w, bias], "fc", out="logits", transB=1)


def _image_model(b: _Builder, name: str, batch: int, size: int, classes: int) -> onnx.ModelProto:
    return b.model(name, [helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, 3, size, size])],
                   [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, classes])])


def _basic_block(b, x, cin, cout, stride):
    y = _conv_bn(b, x, cin, cout, 3, stride)
    y = _conv_bn(b, y, cout, cout, 3, 1, act=None, gamma=0.3)
    short = x if stride == 1 and cin == cout else _conv_bn(b, x, cin, cout, 1, stride, act=None)
    return b.op("Relu", [b.op("Add", [y, short], "add")], "relu")


def _bottleneck(b, x, cin, width, stride):
    cout = width * 4
    y = _conv_bn(b, x, cin, width, 1)
    y = _conv_bn(b, y, width, width, 3, stride)  # stride on the 3x3 conv (torchvision's ResNet v1.5)
    y = _conv_bn(b, y, width, cout, 1, act=None, gamma=0.3)
    short = x if stride == 1 and cin == cout else _conv_bn(b, x, cin, cout, 1, stride, act=None)
    return b.op("Relu", [b.op("Add", [y, short], "add")], "relu")


def _resnet(name: str, blocks: list, bottleneck: bool, batch: int, size: int, classes: int, seed: int):
    b = _Builder(seed)
    x = _conv_bn(b, "input", 3, 64, 7, 2)
    x = b.op("MaxPool", [x], "maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for stage, n in enumerate(blocks):
        width = 64 << stage
        for i in range(n):
            stride = 2 if stage > 0 and i == 0 else 1
            if bottleneck:
                x, cin = _bottleneck(b, x, cin, width, stride), width * 4
            else:
                x, cin = _basic_block(b, x, cin, width, stride), width
    _head(b, x, cin, classes)
    return _image_model(b, name, batch, size, classes)


def resnet18(batch: int = 1, size: int = 224, classes: int = 1000, seed: int = 0) -> onnx.ModelProto:
    return _resnet("resnet18", [2, 2, 2, 2], False, batch, size, classes, seed)


def resnet50(batch: int = 1, size: int = 224, classes: int = 1000, seed: int = 0) -> onnx.ModelProto:
    return _resnet("resnet50", [3, 4, 6, 3], True, batch, size, classes, seed)


_MOBILENET_V2 = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                 (6, 320, 1, 1)]  # expansion t, channels c, repeats n, first stride s


def mobilenet_v2(batch: int = 1, size: int = 224, classes: int = 1000, seed: int = 0) -> onnx.ModelProto:
    b = _Builder(seed)
    x, cin = _conv_bn(b, "input", 3, 32, 3, 2, act="relu6"), 32
    for t, c, n, s in _MOBILENET_V2:
        for i in range(n):
            stride, hidden = (s if i == 0 else 1), cin * t
            y = _conv_bn(b, x, cin, hidden, 1, act="relu6") if t != 1 else x
            y = _conv_bn(b, y, hidden, hidden, 3, stride, group=hidden, act="relu6")
            residual = stride == 1 and cin == c
            y = _conv_bn(b, y, hidden, c, 1, act=None, gamma=0.3 if residual else 1.0)
            x, cin = (b.op("Add", [x, y], "add") if residual else y), c
    x = _conv_bn(b, x, cin, 1280, 1, act="relu6")
    _head(b, x, 1280, classes)
    return _image_model(b, "mobilenet_v2", batch, size, classes)


# ----------------------------------------------------------------------------- BERT-tiny

def _linear(b: _Builder, x: str, cin: int, cout: int, hint: str) -> str:
    w = b.const(hint + "_w", b.normal(1.0 / math.sqrt(cin), (cin, cout)))
    return b.op("Add", [b.op("MatMul", [x, w], hint), b.const(hint + "_b", b.normal(0.02, (cout,)))], hint + "_add")


def _layer_norm(b: _Builder, x: str, hidden: int, fused: bool) -> str:
    gamma = b.const("ln_g", b.rng.uniform(0.8, 1.2, hidden).astype(np.float32))
    beta = b.const("ln_b", b.normal(0.05, (hidden,)))
    if fused:
        return b.op("LayerNormalization", [x, gamma, beta], "ln", axis=-1, epsilon=1e-12)
    # the decomposition older exporters emit
    mean = b.op("ReduceMean", [x], "ln_mean", axes=[-1], keepdims=1)
    d = b.op("Sub", [x, mean], "ln_sub")
    var = b.op("ReduceMean", [b.op("Pow", [d, b.const("two", np.array(2.0, np.float32))], "ln_pow")], "ln_var",
               axes=[-1], keepdims=1)
    std = b.op("Sqrt", [b.op("Add", [var, b.const("eps", np.array(1e-12, np.float32))], "ln_addeps")], "ln_sqrt")
    y = b.op("Div", [d, std], "ln_div")
    return b.op("Add", [b.op("Mul", [y, gamma], "ln_mul"), beta], "ln_shift")


def _gelu(b: _Builder, x: str) -> str:
    """x * 0.5 * (1 + erf(x / sqrt(2)))"""
    e = b.op("Erf", [b.op("Div", [x, b.const("sqrt2", np.array(math.sqrt(2.0), np.float32))], "gelu_div")])
    one = b.op("Add", [e, b.const("one", np.array(1.0, np.float32))], "gelu_add")
    return b.op("Mul", [b.op("Mul", [x, one], "gelu_mul"), b.const("half", np.array(0.5, np.float32))], "gelu")


def _heads(b: _Builder, x: str, seq: int, heads: int, dh: int, perm: list) -> str:
    shape = b.const("shape", np.array([1, seq, heads, dh], np.int64))
    return b.op("Transpose", [b.op("Reshape", [x, shape], "split_heads")], "transpose", perm=perm)


def _mask_bias(b: _Builder) -> str:
    """(1 - attention_mask) * -10000 as (1, 1, 1, seq): added to the scores, it hides padded key positions."""
    m = b.op("Cast", ["attention_mask"], "mask_cast", to=TensorProto.FLOAT)
    m = b.op("Unsqueeze", [m, b.const("axes", np.array([1, 2], np.int64))], "mask_unsqueeze")
    inv = b.op("Sub", [b.const("one", np.array(1.0, np.float32)), m], "mask_inv")
    return b.op("Mul", [inv, b.const("neg", np.array(-10000.0, np.float32))], "mask_bias")


def _attention(b: _Builder, x: str, seq: int, hidden: int, heads: int, bias: str | None) -> str:
    dh = hidden // heads
    q = _heads(b, _linear(b, x, hidden, hidden, "query"), seq, heads, dh, [0, 2, 1, 3])
    k = _heads(b, _linear(b, x, hidden, hidden, "key"), seq, heads, dh, [0, 2, 3, 1])
    v = _heads(b, _linear(b, x, hidden, hidden, "value"), seq, heads, dh, [0, 2, 1, 3])
    scores = b.op("Div", [b.op("MatMul", [q, k], "scores"), b.const("scale", np.array(math.sqrt(dh), np.float32))],
                  "scaled")
    if bias is not None:
        scores = b.op("Add", [scores, bias], "masked")
    probs = b.op("Softmax", [scores], "softmax", axis=-1)
    ctx = b.op("Transpose", [b.op("MatMul", [probs, v], "context")], "transpose", perm=[0, 2, 1, 3])
    ctx = b.op("Reshape", [ctx, b.const("shape", np.array([1, seq, hidden], np.int64))], "merge_heads")
    return _linear(b, ctx, hidden, hidden, "attn_out")


def bert_tiny(seq: int = 128, layers: int = 2, hidden: int = 128, heads: int = 2, vocab: int = 30522,
              fused_layernorm: bool = False, attention_mask: bool = True, seed: int = 0) -> onnx.ModelProto:
    """BERT encoder: inputs "input_ids" (1, seq) int64 and (when `attention_mask`) "attention_mask" (1, seq) int64,
    1 = token, 0 = padding; outputs "last_hidden_state" (1, seq, hidden) and "pooler_output" (1, hidden) (tanh
    of a linear map of the first token)."""
    b = _Builder(seed)
    bias = _mask_bias(b) if attention_mask else None
    words = b.op("Gather", [b.const("word_emb", b.normal(1.0, (vocab, hidden))), "input_ids"], "word_emb", axis=0)
    emb = b.op("Add", [words, b.const("pos_emb", b.normal(0.3, (1, seq, hidden)))], "add_pos")
    emb = b.op("Add", [emb, b.const("type_emb", b.normal(0.3, (hidden,)))], "add_type")
    x = _layer_norm(b, emb, hidden, fused_layernorm)
    for _ in range(layers):
        x = _layer_norm(b, b.op("Add", [x, _attention(b, x, seq, hidden, heads, bias)], "residual"), hidden,
                        fused_layernorm)
        ff = _linear(b, _gelu(b, _linear(b, x, hidden, 4 * hidden, "ffn_in")), 4 * hidden, hidden, "ffn_out")
        x = _layer_norm(b, b.op("Add", [x, ff], "residual"), hidden, fused_layernorm)
    b.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="last_hidden_state"))
    first = b.op("Gather", [x, b.const("cls", np.array(0, np.int64))], "cls", axis=1)
    w = b.const("pool_w", b.normal(1.0 / math.sqrt(hidden), (hidden, hidden)))
    b.op("Tanh", [b.op("Gemm", [first, w, b.const("pool_b", b.normal(0.02, (hidden,)))], "pooler")], "tanh",
         out="pooler_output")
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, [1, seq])
              for n in ("input_ids", "attention_mask")[:1 + attention_mask]]
    return b.model("bert_tiny", inputs,
                   [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [1, seq, hidden]),
                    helper.make_tensor_value_info("pooler_output", TensorProto.FLOAT, [1, hidden])])
