"""ONNX operators lowered to te: Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split, Slice, Expand,
Tile, DepthToSpace/SpaceToDepth; Pad and the constant-producing ops (Shape, Size, Constant, ConstantOfShape,
Range) live in shape_const.py. Interface: common.py.
"""
from __future__ import annotations

import numpy as np

from ... import te
from ...ir.program.expr import const
from ..network import NetError
from .common import OpSpec
from .util import (MOVED, as_tensor, axes, axis, broadcast, check_dtypes, compute, const_input, int_list, numel, reader,
                   shape_of)


def _read(x, shape, idx):
    """x at ONNX indices `idx` (rank 0 -> the te tensor's single element)."""
    return x[tuple(idx)] if shape else x[0]


def reshape_to(node, x, src: tuple, dst: tuple, ctx):
    """x (ONNX shape src) viewed as dst: the same tensor when te shapes agree, else a compute whose reads
    decompose the index only inside blocks of dims of equal size (so (B, S, H) -> (B, S, h, d) reads
    x[b, s, i * d + j], and a move of unit dims no division at all)."""
    if isinstance(x, np.ndarray):
        return x.reshape(dst)
    if numel(src) != numel(dst):
        raise NetError(f"{node.where()}: cannot reshape {list(src)} ({numel(src)} elements) to {list(dst)}")
    if (tuple(src) or (1,)) == (tuple(dst) or (1,)):
        return x
    return compute(dst, lambda i: _read(x, src, _reshape_index(src, dst, i)), ctx, node)


def _reshape_index(src: tuple, dst: tuple, i) -> list:
    """Source indices of output indices i, block by block over the dims that are not 1."""
    ks = [d for d, n in enumerate(src) if n != 1]
    kd = [d for d, n in enumerate(dst) if n != 1]
    idx, a, b = [0] * len(src), 0, 0
    while a < len(ks):
        sa, sb, ps, pd = [ks[a]], [kd[b]], src[ks[a]], dst[kd[b]]
        while ps != pd:  # the smallest run of source and output dims holding the same number of elements
            if ps < pd:
                a += 1
                sa.append(ks[a])
                ps *= src[ks[a]]
            else:
                b += 1
                sb.append(kd[b])
                pd *= dst[kd[b]]
        a, b = a + 1, b + 1
        flat, stride = None, 1
        for d in reversed(sb):
            term = i[d] if stride == 1 else i[d] * stride
            flat, stride = term if flat is None else term + flat, stride * dst[d]
        stride = 1
        for d in reversed(sa):
            part = flat if d == sa[0] else flat % (stride * src[d])
            idx[d], stride = part // stride if stride > 1 else part, stride * src[d]
    return idx


def _reshape(node, ins, ctx):
    check_dtypes(node, MOVED, 0, 1)
    src = shape_of(node, 0, ins[0])
    if node.attrs.get("_opset", 14) < 5:
        spec = int_list(node, node.attrs.get("shape", []), "shape")
    else:
        spec = int_list(node, const_input(node, ins, 1, "shape"), "shape")
    allowzero = int(node.attrs.get("allowzero", 0))
    if not allowzero and any(v == 0 and d >= len(src) for d, v in enumerate(spec)):
        raise NetError(f"{node.where()}: shape {spec} copies a dimension (0) beyond the input's rank {len(src)}")
    dst = [src[d] if v == 0 and not allowzero else v for d, v in enumerate(spec)]
    if dst.count(-1) > 1 or any(v < -1 for v in dst):
        raise NetError(f"{node.where()}: invalid shape {spec}")
    if -1 in dst:
        known = numel(v for v in dst if v != -1)
        if known == 0 or numel(src) % known:
            raise NetError(f"{node.where()}: cannot reshape {list(src)} to {spec}")
        dst[dst.index(-1)] = numel(src) // known
    return [reshape_to(node, ins[0], src, tuple(dst), ctx)]


def _flatten(node, ins, ctx):
    check_dtypes(node, MOVED)
    src = shape_of(node, 0, ins[0])
    a = int(node.attrs.get("axis", 1))
    a = len(src) if a == len(src) else axis(node, a, len(src))
    return [reshape_to(node, ins[0], src, (numel(src[:a]), numel(src[a:])), ctx)]


def _axes_arg(node, ins, name="axes"):
    """Axes as an attribute (older opsets) or the constant input 1 (None when absent)."""
    if name in node.attrs:
        return int_list(node, node.attrs[name], name)
    x = const_input(node, ins, 1, name)
    return None if x is None else int_list(node, x, name)


def _squeeze(node, ins, ctx):
    check_dtypes(node, MOVED, 0, 1)
    src = shape_of(node, 0, ins[0])
    given = _axes_arg(node, ins)
    drop = [d for d, n in enumerate(src) if n == 1] if given is None else axes(node, given, len(src))
    if any(src[d] != 1 for d in drop):
        raise NetError(f"{node.where()}: cannot squeeze axes {given} of shape {list(src)} (not of size 1)")
    return [reshape_to(node, ins[0], src, tuple(n for d, n in enumerate(src) if d not in drop), ctx)]


def _unsqueeze(node, ins, ctx):
    check_dtypes(node, MOVED, 0, 1)
    src = shape_of(node, 0, ins[0])
    given = _axes_arg(node, ins)
    if given is None:
        raise NetError(f"{node.where()}: Unsqueeze needs axes")
    rank = len(src) + len(given)
    new = set(axes(node, given, rank))
    rest = iter(src)
    dst = tuple(1 if d in new else next(rest) for d in range(rank))
    return [reshape_to(node, ins[0], src, dst, ctx)]


def _transpose(node, ins, ctx):
    check_dtypes(node, MOVED)
    x, src = ins[0], shape_of(node, 0, ins[0])
    perm = node.attrs.get("perm") or list(reversed(range(len(src))))
    perm = [axis(node, p, len(src), "perm entry") for p in perm]
    if sorted(perm) != list(range(len(src))):
        raise NetError(f"{node.where()}: perm {perm} is not a permutation of {len(src)} axes")
    if isinstance(x, np.ndarray):
        return [np.ascontiguousarray(np.transpose(x, perm))]
    dst = tuple(src[p] for p in perm)
    if perm == sorted(perm):
        return [x]
    where = {p: k for k, p in enumerate(perm)}
    return [compute(dst, lambda i: _read(x, src, [i[where[d]] for d in range(len(src))]), ctx, node)]


def _concat(node, ins, ctx):
    check_dtypes(node, MOVED)
    xs = [x for x in ins if x is not None]
    shapes = [shape_of(node, i, x) for i, x in enumerate(xs)]
    rank = len(shapes[0])
    a = axis(node, node.attrs.get("axis", 0), rank)
    if any(len(s) != rank or s[:a] + s[a + 1:] != shapes[0][:a] + shapes[0][a + 1:] for s in shapes):
        raise NetError(f"{node.where()}: shapes {shapes} do not concatenate along axis {a}")
    parts = [(x, s) for x, s in zip(xs, shapes) if s[a] > 0]
    if all(isinstance(x, np.ndarray) for x, _ in parts):
        return [np.concatenate([x for x, _ in parts], axis=a)]
    parts = [(as_tensor(x, ctx), s) for x, s in parts]
    dst = shapes[0][:a] + (sum(s[a] for _, s in parts),) + shapes[0][a + 1:]

    offsets = [int(v) for v in np.cumsum([0] + [s[a] for _, s in parts])]

    def body(i):
        # every part's read is guarded in the taken arm of its select (both bounds checkers use those facts); the
        # final 0 is never taken
        out = const(0, parts[0][0].dtype)
        for k in reversed(range(len(parts))):
            (t, s), lo = parts[k], offsets[k]
            here = t[tuple(i[:a]) + (i[a] - lo,) + tuple(i[a + 1:])]
            conds = ([i[a] >= lo] if k > 0 else []) + ([i[a] < lo + s[a]] if k < len(parts) - 1 else [])
            out = te.if_then_else(te.all(*conds), here, out) if conds else here
        return out
    return [compute(dst, body, ctx, node)]


def _window(node, x, src, starts, steps, dst, ctx):
    """out[i] = x[starts + i * steps] over shape dst."""
    return compute(dst, lambda i: _read(x, src, [s + k * st if st != 1 else k + s
                                                 for s, st, k in zip(starts, steps, i)]), ctx, node)


def _split_sizes(node, ins, src, a):
    n_out = len(node.out_shapes)
    if "split" in node.attrs:
        sizes = int_list(node, node.attrs["split"], "split")
    elif len(ins) > 1 and ins[1] is not None:
        sizes = int_list(node, const_input(node, ins, 1, "split"), "split")
    else:
        n = int(node.attrs.get("num_outputs", n_out))
        chunk = -(-src[a] // n)
        sizes = [min(chunk, src[a] - k * chunk) for k in range(n)]
    if sum(sizes) != src[a] or len(sizes) != n_out or min(sizes) < 0:
        raise NetError(f"{node.where()}: split sizes {sizes} do not cover dimension {src[a]} in {n_out} outputs")
    return sizes


def _split(node, ins, ctx):
    check_dtypes(node, MOVED, 0, 1)
    x, src = ins[0], shape_of(node, 0, ins[0])
    a = axis(node, node.attrs.get("axis", 0), len(src))
    outs, lo = [], 0
    for size in _split_sizes(node, ins, src, a):
        if isinstance(x, np.ndarray):
            outs.append(np.take(x, range(lo, lo + size), axis=a))
        else:
            starts = [lo if d == a else 0 for d in range(len(src))]
            dst = src[:a] + (size,) + src[a + 1:]
            outs.append(_window(node, x, src, starts, [1] * len(src), dst, ctx))
        lo += size
    return outs


def _slice_args(node, ins, rank):
    if node.attrs.get("_opset", 13) < 10:
        starts, ends = node.attrs.get("starts", []), node.attrs.get("ends", [])
        ax, steps = node.attrs.get("axes"), None
    else:
        starts, ends = const_input(node, ins, 1, "starts"), const_input(node, ins, 2, "ends")
        ax, steps = const_input(node, ins, 3, "axes"), const_input(node, ins, 4, "steps")
    starts, ends = int_list(node, starts, "starts"), int_list(node, ends, "ends")
    ax = list(range(len(starts))) if ax is None else axes(node, int_list(node, ax, "axes"), rank)
    steps = [1] * len(starts) if steps is None else int_list(node, steps, "steps")
    if not len(starts) == len(ends) == len(ax) == len(steps) or 0 in steps:
        raise NetError(f"{node.where()}: starts/ends/axes/steps disagree or a step is 0")
    return starts, ends, ax, steps


def _slice(node, ins, ctx):
    check_dtypes(node, MOVED, 0, 1)
    x, src = ins[0], shape_of(node, 0, ins[0])
    begin, step, dst = [0] * len(src), [1] * len(src), list(src)
    for s, e, a, st in zip(*_slice_args(node, ins, len(src))):
        r = range(*slice(s, e, st).indices(src[a]))  # Python's clamping is ONNX's
        begin[a], step[a], dst[a] = r.start, r.step, len(r)
    if isinstance(x, np.ndarray):
        return [np.ascontiguousarray(x[np.ix_(*[b + st * np.arange(n) for b, st, n in zip(begin, step, dst)])])]
    if tuple(dst) == tuple(src) and set(step) == {1}:
        return [x]  # the whole tensor
    return [_window(node, x, src, begin, step, tuple(dst), ctx)]


def _expand(node, ins, ctx):
    check_dtypes(node, MOVED, 0, 1)
    src = shape_of(node, 0, ins[0])
    dst = broadcast(node, src, tuple(int_list(node, const_input(node, ins, 1, "shape"), "shape")))
    if isinstance(ins[0], np.ndarray):
        return [np.ascontiguousarray(np.broadcast_to(ins[0], dst))]
    if dst == src:
        return [ins[0]]
    read = reader(ins[0], src, len(dst), ctx)
    return [compute(dst, read, ctx, node)]


def _tile(node, ins, ctx):
    check_dtypes(node, MOVED, 0, 1)
    x, src = ins[0], shape_of(node, 0, ins[0])
    reps = int_list(node, const_input(node, ins, 1, "repeats"), "repeats")
    if len(reps) != len(src) or min(reps, default=1) < 1:
        raise NetError(f"{node.where()}: repeats {reps} do not match rank {len(src)}")
    if isinstance(x, np.ndarray):
        return [np.tile(x, reps)]
    dst = tuple(n * r for n, r in zip(src, reps))
    return [compute(dst, lambda i: _read(x, src, [k % n if r > 1 else k for k, n, r in zip(i, src, reps)]),
                    ctx, node)]


def _depth_space(node, ins, ctx):
    check_dtypes(node, MOVED)
    x, src = as_tensor(ins[0], ctx), shape_of(node, 0, ins[0])
    b = int(node.attrs.get("blocksize", 0))
    if len(src) != 4 or b < 1:
        raise NetError(f"{node.where()}: needs a 4-D NCHW input and blocksize >= 1")
    n, c, h, w = src
    mode = node.attrs.get("mode", "DCR")
    if mode not in ("DCR", "CRD"):
        raise node.unsupported(f"mode={mode!r} (supported: DCR, CRD)")
    if node.op_type == "SpaceToDepth":
        if h % b or w % b:
            raise NetError(f"{node.where()}: H and W ({h}, {w}) must be multiples of blocksize {b}")
        dst = (n, c * b * b, h // b, w // b)
        if mode == "CRD":  # out channel = (c * b + bh) * b + bw
            return [compute(dst, lambda i: x[i[0], i[1] // (b * b), i[2] * b + (i[1] // b) % b,
                                              i[3] * b + i[1] % b], ctx, node)]
        return [compute(dst, lambda i: x[i[0], i[1] % c, i[2] * b + i[1] // (c * b),
                                          i[3] * b + (i[1] // c) % b], ctx, node)]
    if c % (b * b):
        raise NetError(f"{node.where()}: C ({c}) must be a multiple of blocksize^2 ({b * b})")
    co, crd = c // (b * b), mode == "CRD"

    def body(i):
        bh, bw = i[2] % b, i[3] % b
        ch = i[1] * (b * b) + bh * b + bw if crd else (bh * b + bw) * co + i[1]
        return x[i[0], ch, i[2] // b, i[3] // b]
    return [compute((n, co, h * b, w * b), body, ctx, node)]


OPS: dict = {
    "Reshape": OpSpec(_reshape, MOVED, ("allowzero", "shape", "consumed_inputs"),
                      "constant shape (0 and -1, allowzero)"),
    "Flatten": OpSpec(_flatten, MOVED, ("axis",)),
    "Squeeze": OpSpec(_squeeze, MOVED, ("axes",), "axes as attribute or constant input"),
    "Unsqueeze": OpSpec(_unsqueeze, MOVED, ("axes",), "axes as attribute or constant input"),
    "Transpose": OpSpec(_transpose, MOVED, ("perm",)),
    "Concat": OpSpec(_concat, MOVED, ("axis",)),
    "Split": OpSpec(_split, MOVED, ("axis", "split", "num_outputs"), "constant split sizes"),
    "Slice": OpSpec(_slice, MOVED, ("starts", "ends", "axes"), "constant starts/ends/axes/steps"),
    "Expand": OpSpec(_expand, MOVED, (), "constant shape"),
    "Tile": OpSpec(_tile, MOVED, (), "constant repeats"),
    "DepthToSpace": OpSpec(_depth_space, MOVED, ("blocksize", "mode")),
    "SpaceToDepth": OpSpec(_depth_space, MOVED, ("blocksize", "mode")),
}
