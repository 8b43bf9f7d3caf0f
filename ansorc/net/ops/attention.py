"""ONNX Attention (opset 23+) lowered to te, following onnx's reference semantics.

scores = Q K^T (one multiply-add reduction per (batch, head), as workloads.tbg), then scale, softcap, and an
additive bias built inline from the mask (float, or bool as 0/-inf, its last dim padded with -inf), the causal
frontier, the sliding window and nonpad_kv_seqlen; a softmax whose fully masked rows give 0 (max-reduce, exp,
sum-reduce, divide, as workloads.sfm); Y = P V. 3-D inputs are read as (batch, seq, heads*size) in place; grouped
query attention reads kv head h // (q_heads / kv_heads). past_key/past_value are concatenated in front of K/V."""
from __future__ import annotations

from dataclasses import dataclass

from ...ir.program import te
from .nn_util import FLOATS, as_tensor, broadcast_index, compute, lowest, reader, spec
from .reduce import reduce_compute


def _view(node, x, shape, heads):
    """(reader (b, h, s, d) -> Expr, heads, seq, size) of a 4-D or 3-D (batch, seq, heads*size) input."""
    if len(shape) == 4:
        return (lambda b, h, s, d: x[b, h, s, d]), shape[1], shape[2], shape[3]
    if not heads or shape[2] % heads:
        raise node.unsupported(f"a 3-D input of shape {list(shape)} needs q_num_heads/kv_num_heads dividing it")
    size = shape[2] // heads
    return (lambda b, h, s, d: x[b, s, h * size + d if size > 1 else h]), heads, shape[1], size


def _present(node, k, past, shape, ctx, name):
    """The key (or value) cache (B, heads, past + seq, size): past then the new entries; a reader of it."""
    read, heads, seq, size = k
    if past is None:
        return read, None, seq
    sp = shape[2]
    full = (shape[0], heads, sp + seq, size)

    def body(b, h, j, d):
        # each read sits in the taken arm of the select that guards it: the IR verifier proves bounds from those
        # facts only, also after the schedule fuses j with other loops; the final 0 is never taken
        new = te.if_then_else(j >= sp, read(b, h, j - sp, d), te.const(0, past.dtype))
        return te.if_then_else(j < sp, past[b, h, j, d], new)
    t = compute(full, body, ctx.name(f"{node.name}_{name}"), "kv_cache")
    return (lambda b, h, j, d: t[b, h, j, d]), t, sp + seq


def _bias(node, ins, ctx, sq, skv, offset_past):
    """A function (b, h, i, j) -> additive bias Expr (None when there is none)."""
    neg = lowest(node.in_dtypes[0])
    mask = ins[3] if len(ins) > 3 else None
    nonpad = ins[6] if len(ins) > 6 else None
    causal = bool(node.attrs.get("is_causal", 0))
    left, right = int(node.attrs.get("left_window_size", -1)), int(node.attrs.get("right_window_size", -1))
    if mask is None and nonpad is None and not causal and left < 0 and right < 0:
        return None
    if nonpad is not None and offset_past:
        raise node.unsupported("nonpad_kv_seqlen together with past_key/past_value")
    mshape = tuple(node.in_shapes[3]) if mask is not None else None
    mread = reader(as_tensor(mask, ctx, f"{node.name}_mask"), mshape) if mask is not None else None
    npread = reader(as_tensor(nonpad, ctx, f"{node.name}_nonpad"), (node.in_shapes[6][0],)) \
        if nonpad is not None else None
    is_bool = mask is not None and node.in_dtypes[3] == "bool"

    def bias(b, h, i, j):
        conds = []
        offset = offset_past if npread is None else npread((b,)).astype("int32") - sq
        if causal:
            conds.append(j <= i + offset)
        if left >= 0:
            conds.append(i + offset - j <= left)
        if right >= 0:
            conds.append(j - (i + offset) <= right)
        if npread is not None:
            conds.append(j < npread((b,)).astype("int32"))
        value = te.const(0, neg.dtype)
        if mread is not None:
            idx = broadcast_index((b, h, i, j), mshape[:-1] + (skv,))[:-1] + (j,)
            if mshape[-1] < skv:  # the reference pads a short mask with -inf / False
                conds.append(j < mshape[-1])
            m = mread(idx)
            value = te.if_then_else(m, value, neg) if is_bool else m
        return te.if_then_else(te.all(*conds), value, neg) if conds else value
    return bias


@dataclass(frozen=True)
class _Parts:
    """The inputs read as 4-D (batch, heads, seq, size) functions, with the caches and the head mapping."""
    q: tuple            # (reader, heads, seq, size) of Q
    k: tuple            # the same for K / V as given (before the cache)
    v: tuple
    kr: object          # reader of the keys attended to (past + new)
    vr: object
    present: tuple      # present_key / present_value computes (None without a cache)
    skv: int            # keys attended to
    past_len: int
    kvh: object         # q head -> kv head


def _parts(node, ins, shapes, ctx) -> _Parts:
    if len(shapes[0]) not in (3, 4) or len(shapes[1]) != len(shapes[0]) or len(shapes[2]) != len(shapes[0]):
        raise node.unsupported("Q, K and V must all be 3-D or all 4-D")
    if (ins[4] is None) != (ins[5] is None):
        raise node.unsupported("past_key and past_value must be given together")
    q_, k_, v_ = (as_tensor(x, ctx, f"{node.name}_{n}") for x, n in zip(ins[:3], "qkv"))
    kv_heads = node.attrs.get("kv_num_heads")
    q = _view(node, q_, shapes[0], node.attrs.get("q_num_heads"))
    k, v = _view(node, k_, shapes[1], kv_heads), _view(node, v_, shapes[2], kv_heads)
    if q[1] % k[1] or k[1] != v[1] or k[3] != q[3] or k[2] != v[2]:
        raise node.unsupported(f"heads/sizes of Q {list(shapes[0])}, K {list(shapes[1])}, V {list(shapes[2])} "
                               "do not match")
    past = [None if x is None else as_tensor(x, ctx, f"{node.name}_past{n}") for x, n in zip(ins[4:6], "kv")]
    kr, present_k, skv = _present(node, k, past[0], shapes[4], ctx, "present_key")
    vr, present_v, _ = _present(node, v, past[1], shapes[5], ctx, "present_value")
    rep = q[1] // k[1]
    kvh = (lambda h: h) if rep == 1 else (lambda h: h // rep)
    return _Parts(q, k, v, kr, vr, (present_k, present_v), skv, shapes[4][2] if past[0] is not None else 0, kvh)


def lower_attention(node, ins, ctx):
    shapes = [None if s is None else tuple(s) for s in node.in_shapes] + [None] * 7
    ins = list(ins) + [None] * (7 - len(ins))
    p = _parts(node, ins, shapes, ctx)
    (qr, hq, sq, dq), B = p.q, shapes[0][0]
    scale = node.attrs.get("scale")
    scale = float(scale) if scale is not None else 1.0 / float(dq) ** 0.5
    softcap = float(node.attrs.get("softcap", 0.0) or 0.0)
    r = te.reduce_axis((0, dq), "d")
    scores = compute((B, hq, sq, p.skv),
                     lambda b, h, i, j: te.sum(qr(b, h, i, r.var) * p.kr(b, p.kvh(h), j, r.var), axis=r),
                     ctx.name(f"{node.name}_scores"), "attention_scores")

    def capped(*i):
        s = scores[i] * scale
        return te.tanh(s / softcap) * softcap if softcap > 0 else s
    bias = _bias(node, ins, ctx, sq, p.skv, p.past_len)
    logits = compute(scores.shape, lambda *i: capped(*i) + bias(*i) if bias is not None else capped(*i),
                     ctx.name(f"{node.name}_logits"), "attention_logits")
    probs = _softmax(node, logits, ctx)
    outs = [_weighted(node, probs, p.vr, p.kvh, p.v[3], len(shapes[0]) == 3, ctx)] + _presents(node, p, B, ctx)
    if len(node.out_shapes) > 3 and node.out_shapes[3] is not None:
        mode = int(node.attrs.get("qk_matmul_output_mode", 0))
        if mode not in (0, 1, 2, 3):
            raise node.unsupported(f"qk_matmul_output_mode={mode}")
        # mode 0 is the scaled product before softcap (onnxruntime; onnx's reference applies softcap to it too,
        # its tests never combine the two), 1 after softcap, 2 with the bias, 3 the probabilities
        raw = (lambda *i: scores[i] * scale) if mode == 0 else capped
        outs.append(probs if mode == 3 else logits if mode == 2 else
                    compute(logits.shape, raw, ctx.name(f"{node.name}_qk"), "attention_qk"))
    return outs


def _presents(node, p: _Parts, B: int, ctx) -> list:
    """present_key / present_value when asked for (None in their place otherwise, so later outputs keep their
    ONNX positions); without a cache they are K / V as 4-D."""
    outs = []
    for n, (present, rd, view) in enumerate(zip(p.present, (p.kr, p.vr), (p.k, p.v)), start=1):
        if len(node.out_shapes) <= n or node.out_shapes[n] is None:
            outs.append(None)
        else:
            outs.append(present if present is not None else compute(
                (B, view[1], view[2], view[3]), lambda b, h, j, d, rd=rd: rd(b, h, j, d),
                ctx.name(f"{node.name}_present{n}"), "kv_cache"))
    return outs


def _softmax(node, logits, ctx):
    """Softmax over the last axis; a row that is all -inf gives zeros (the reference's convention)."""
    shape = logits.shape
    axes = (3,)
    mx = reduce_compute(shape, axes, False, te.max, lambda i: logits[i], ctx.name(f"{node.name}_max"))
    neg, zero = lowest(logits.dtype), te.const(0, logits.dtype)

    def expo(b, h, i, j):
        m = mx[b, h, i]
        return te.exp(logits[b, h, i, j] - te.if_then_else(m.equal(neg), zero, m))
    ex = compute(shape, expo, ctx.name(f"{node.name}_exp"), "softmax_exp")
    sm = reduce_compute(shape, axes, False, te.sum, lambda i: ex[i], ctx.name(f"{node.name}_sum"))
    one = te.const(1, logits.dtype)
    return compute(shape, lambda b, h, i, j: ex[b, h, i, j] / te.if_then_else(sm[b, h, i].equal(zero), one,
                                                                              sm[b, h, i]),
                   ctx.name(f"{node.name}_probs"), "softmax")


def _weighted(node, probs, vr, kvh, dv, flat: bool, ctx):
    """Y = P V, as (B, heads, Sq, Dv) or, for 3-D inputs, (B, Sq, heads * Dv)."""
    B, hq, sq, skv = probs.shape
    j = te.reduce_axis((0, skv), "j")
    name = ctx.name(node.name)
    if not flat:
        return compute((B, hq, sq, dv), lambda b, h, i, d: te.sum(probs[b, h, i, j.var] * vr(b, kvh(h), j.var, d),
                                                                  axis=j), name, "attention_out")

    def body(b, i, c):
        h, d = (c // dv, c % dv) if dv > 1 else (c, 0)
        return te.sum(probs[b, h, i, j.var] * vr(b, kvh(h), j.var, d), axis=j)
    return compute((B, sq, hq * dv), body, name, "attention_out")


OPS = {"Attention": spec(lower_attention, FLOATS, (
    "is_causal", "kv_num_heads", "q_num_heads", "qk_matmul_output_mode", "scale", "softcap", "softmax_precision",
    "left_window_size", "right_window_size"), "float32/float64; masks float or bool; KV cache; GQA", 3)}
