"""A small support table written for the importer's tests (the real one is ops_*.py, filled elsewhere):
Relu, Add, Mul, MatMul (2-D), Conv (2-D NCHW, group 1, pads/strides). Enough to import small graphs
and to run a handful of onnx node tests through the backend."""
from ansorc import te
from ansorc.net.ops.common import OpSpec


def _tensor(v, ctx, hint="c"):
    return v if isinstance(v, te.Tensor) else ctx.weight(v, hint)


def _out_shape(node):
    return tuple(node.out_shapes[0]) or (1,)


def _bcast(t, out, idx):
    """numpy broadcasting: read `t` at the output index `idx`."""
    off = len(out) - len(t.shape)
    return t[tuple(0 if t.shape[d] == 1 and out[d + off] != 1 else idx[d + off] for d in range(len(t.shape)))]


def _binary(fn):
    def lower(node, ins, ctx):
        a, b = (_tensor(v, ctx) for v in ins)
        out = _out_shape(node)
        return [te.compute(out, lambda *i: fn(_bcast(a, out, i), _bcast(b, out, i)), name=ctx.name(node.name))]
    return lower


def lower_relu(node, ins, ctx):
    x = _tensor(ins[0], ctx)
    return [te.compute(x.shape, lambda *i: te.max(x[i], te.const(0, x.dtype)), name=ctx.name(node.name))]


def lower_matmul(node, ins, ctx):
    a, b = (_tensor(v, ctx) for v in ins)
    if len(a.shape) != 2 or len(b.shape) != 2:
        raise node.unsupported("only 2-D MatMul in the test table")
    k = te.reduce_axis((0, a.shape[1]), name="k")
    return [te.compute((a.shape[0], b.shape[1]), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k),
                       name=ctx.name(node.name))]


def lower_conv(node, ins, ctx):
    x, w = _tensor(ins[0], ctx), _tensor(ins[1], ctx, "w")
    bias = _tensor(ins[2], ctx, "b") if len(ins) > 2 and ins[2] is not None else None
    if node.attrs.get("group", 1) != 1 or len(x.shape) != 4:
        raise node.unsupported("only 2-D, group-1 Conv in the test table")
    pt, pl, _, _ = node.attrs.get("pads", [0, 0, 0, 0])
    sh, sw = node.attrs.get("strides", [1, 1])
    _, c, h, wd = x.shape
    rc, ry, rx = (te.reduce_axis((0, e), name=nm) for e, nm in zip(w.shape[1:], ("rc", "ry", "rx")))

    def body(n, f, i, j):
        y, z = i * sh + ry - pt, j * sw + rx - pl
        inside = te.all(y >= 0, y < h, z >= 0, z < wd)
        return te.sum(te.if_then_else(inside, x[n, rc, y, z], te.const(0, x.dtype)) * w[f, rc, ry, rx],
                      axis=[rc, ry, rx])
    out = te.compute(_out_shape(node), body, name=ctx.name(node.name))
    if bias is None:
        return [out]
    return [te.compute(out.shape, lambda n, f, i, j: out[n, f, i, j] + bias[f], name=ctx.name(node.name + "_b"))]


TABLE = {
    "Relu": OpSpec(lower_relu, ("float32", "float64")),
    "Add": OpSpec(_binary(lambda a, b: a + b), ("float32", "float64", "int32", "int64")),
    "Mul": OpSpec(_binary(lambda a, b: a * b), ("float32", "float64", "int32", "int64")),
    "MatMul": OpSpec(lower_matmul, ("float32",)),
    "Conv": OpSpec(lower_conv, ("float32",), ("pads", "strides", "kernel_shape", "group")),
}


def lower_reshape(node, ins, ctx):
    """Row-major reshape to the inferred output shape: output index -> flat offset -> input index."""
    x, out = _tensor(ins[0], ctx), _out_shape(node)

    def body(*i):
        flat = 0
        for d, n in zip(i, out):
            flat = flat * n + d
        idx, rest = [], 1
        for n in reversed(x.shape):
            idx.append((flat // rest) % n)
            rest *= n
        return x[tuple(reversed(idx))]
    return [te.compute(out, body, name=ctx.name(node.name))]


TABLE["Reshape"] = OpSpec(lower_reshape, ("float32",), ("allowzero",))
