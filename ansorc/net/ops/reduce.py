"""ONNX reductions (ReduceSum/Mean/Max/Min/Prod/SumSquare/L1/L2/LogSum/LogSumExp) and ArgMax/ArgMin lowered to te.

Each is one reduction compute over the listed axes (a te reduction is a whole compute body), plus an element-wise
compute for what follows the reduction (divide, sqrt, log), as workloads.nrm. Axes come from the attribute
(ReduceSum before opset 13, the others before 18) or from the constant second input."""
from __future__ import annotations

import math

import numpy as np

from ...ir.program import te
from .nn_util import FLOATS, as_tensor, compute, const_input, norm_axes, norm_axis, reader, spec, te_shape

INTS = ("int32", "int64")
PROD_LIMIT = 64  # ReduceProd is unrolled into one product of reads (te has no product reducer)


def reduced_shape(shape, axes, keepdims: bool) -> tuple:
    return tuple(1 if d in axes else n for d, n in enumerate(shape) if keepdims or d not in axes)


def reduce_compute(shape, axes, keepdims, combiner, source, name: str, tag: str = "reduce"):
    """out[...] = combiner over `axes` of source(full index into a tensor of `shape`); the result has the ONNX
    shape reduced_shape(...) held as a te shape. Without axes, the source is applied element-wise."""
    rs = {a: te.reduce_axis((0, shape[a]), f"r{a}") for a in axes}
    out = reduced_shape(shape, axes, keepdims)

    def body(*idx):
        it, full = iter(idx), []
        for d in range(len(shape)):
            if d in rs:
                full.append(rs[d].var)
                if keepdims:
                    next(it)
            else:
                full.append(next(it))
        expr = source(tuple(full))
        return combiner(expr, axis=[rs[a] for a in sorted(rs)]) if rs else expr
    return compute(te_shape(out), body, name, tag)


def stat_index(full, axes) -> tuple:
    """The index into a keepdims=0 reduction over `axes` of the element at `full`."""
    return tuple(i for d, i in enumerate(full) if d not in axes) or (0,)


def _axes(node, ins, shape) -> tuple | None:
    """The reduced axes; None when the op is a no-op (empty axes with noop_with_empty_axes=1)."""
    given = const_input(node, ins[1] if len(ins) > 1 else None, "the axes input")
    if given is None and "axes" in node.attrs:
        given = np.asarray(node.attrs["axes"], dtype=np.int64)
    if given is None or given.size == 0:
        if node.attrs.get("noop_with_empty_axes", 0):
            return None
        return tuple(range(len(shape)))
    return norm_axes(node, given.ravel().tolist(), len(shape))


# per op: (source of the reduction, combiner, what follows it given (value, count)); None: nothing follows
_SIMPLE = {
    "ReduceSum": (lambda v: v, te.sum, None),
    "ReduceMean": (lambda v: v, te.sum, lambda s, n: s / float(n)),
    "ReduceMax": (lambda v: v, te.max, None),
    "ReduceMin": (lambda v: v, te.min, None),
    "ReduceSumSquare": (lambda v: v * v, te.sum, None),
    "ReduceL1": (lambda v: te.abs(v), te.sum, None),
    "ReduceL2": (lambda v: v * v, te.sum, lambda s, n: te.sqrt(s)),
    "ReduceLogSum": (lambda v: v, te.sum, lambda s, n: te.log(s)),
}


def lower_reduce(node, ins, ctx):
    shape = tuple(node.in_shapes[0])
    x = as_tensor(ins[0], ctx, f"{node.name}_x")
    read = reader(x, shape)
    axes = _axes(node, ins, shape)
    keep = bool(node.attrs.get("keepdims", 1))
    axes = () if axes is None else axes
    count = math.prod(shape[a] for a in axes)
    if node.op_type == "ReduceLogSumExp":
        return [_log_sum_exp(node, read, shape, axes, keep, ctx)]
    if node.op_type == "ReduceProd":
        return [_prod(node, read, shape, axes, keep, ctx)]
    source, combiner, post = _SIMPLE[node.op_type]
    name = ctx.name(node.name if post is None else f"{node.name}_reduce")
    red = reduce_compute(shape, axes, keep, combiner, lambda i: source(read(i)), name)
    if post is None:
        return [red]
    return [compute(red.shape, lambda *i: post(red[i], count), ctx.name(node.name), "reduce_post")]


def _log_sum_exp(node, read, shape, axes, keep, ctx):
    """log(sum(exp(x - max))) + max: the shift keeps exp from overflowing."""
    mx = reduce_compute(shape, axes, False, te.max, read, ctx.name(f"{node.name}_max"))
    s = reduce_compute(shape, axes, keep, te.sum, lambda i: te.exp(read(i) - mx[stat_index(i, axes)]),
                       ctx.name(f"{node.name}_sum"))
    out = reduced_shape(shape, axes, keep)

    def body(*idx):  # mx is laid out without the reduced dims
        return te.log(s[idx]) + mx[stat_index(idx, axes) if keep else idx]
    return compute(te_shape(out), body, ctx.name(node.name), "reduce_post")


def _prod(node, read, shape, axes, keep, ctx):
    taps = math.prod(shape[a] for a in axes)
    if taps > PROD_LIMIT:
        raise node.unsupported(f"ReduceProd over {taps} elements (at most {PROD_LIMIT})")
    out = reduced_shape(shape, axes, keep)

    def body(*idx):
        it = iter(idx)
        base = []
        for d in range(len(shape)):
            if d not in axes or keep:
                base.append(next(it))
            else:
                base.append(None)
        expr = None
        for combo in np.ndindex(*[shape[a] for a in axes]):
            full = list(base)
            for a, v in zip(axes, combo):
                full[a] = int(v)
            term = read(tuple(full))
            expr = term if expr is None else expr * term
        return expr
    return compute(te_shape(out), body, ctx.name(node.name), "reduce_prod")


def lower_arg(node, ins, ctx):
    """ArgMax/ArgMin: the extreme value, then the first (or last) index holding it."""
    shape = tuple(node.in_shapes[0])
    x = as_tensor(ins[0], ctx, f"{node.name}_x")
    read = reader(x, shape)
    axis = norm_axis(node, int(node.attrs.get("axis", 0)), len(shape))
    keep = bool(node.attrs.get("keepdims", 1))
    last = bool(node.attrs.get("select_last_index", 0))
    best = reduce_compute(shape, (axis,), False, te.max if node.op_type == "ArgMax" else te.min, read,
                          ctx.name(f"{node.name}_value"))
    miss = te.const(-1 if last else 2**62, "int64")

    def source(i):
        hit = read(i).equal(best[stat_index(i, (axis,))])
        return te.if_then_else(hit, i[axis].astype("int64"), miss)
    return [reduce_compute(shape, (axis,), keep, te.max if last else te.min, source, ctx.name(node.name), "arg")]


_RED_ATTRS = ("axes", "keepdims", "noop_with_empty_axes")
OPS = {op: spec(lower_reduce, FLOATS if op in ("ReduceMean", "ReduceL2", "ReduceLogSum") else FLOATS + INTS,
                _RED_ATTRS, "axes as attribute or constant input")
       for op in list(_SIMPLE) + ["ReduceProd"]}
OPS["ReduceLogSumExp"] = spec(lower_reduce, FLOATS, _RED_ATTRS, "axes as attribute or constant input")
OPS["ReduceProd"] = spec(lower_reduce, FLOATS + INTS, _RED_ATTRS, f"at most {PROD_LIMIT} elements per output")
OPS["ArgMax"] = spec(lower_arg, FLOATS + INTS, ("axis", "keepdims", "select_last_index"), "int64 output")
OPS["ArgMin"] = spec(lower_arg, FLOATS + INTS, ("axis", "keepdims", "select_last_index"), "int64 output")
