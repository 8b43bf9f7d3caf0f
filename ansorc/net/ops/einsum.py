"""Einsum lowered to one te compute: the product of the operands' reads, summed over the letters not in the output
(explicit `->` or numpy's implicit output; `...` broadcast as numpy; repeated letters read diagonals)."""
from __future__ import annotations

import math
import string

from ...ir.program import te
from .nn_util import FLOATS, as_tensor, compute, reader, spec, te_shape

_SPARE = string.ascii_uppercase  # letters for ellipsis dims (ONNX equations use lower-case letters)


def _parse(node, equation: str, ranks) -> tuple:
    """(operand letter lists, output letters, ellipsis letters) with each `...` expanded."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise node.unsupported(f"equation {equation!r} names {len(terms)} operands, the node has {len(ranks)}")
    if any(c not in string.ascii_lowercase + "." for c in lhs.replace(",", "") + rhs):
        raise node.unsupported(f"equation {equation!r}: only lower-case letters and '...' are supported")
    n_ell = max((rank - len(t.replace("...", "")) for t, rank in zip(terms, ranks) if "..." in t), default=0)
    ell = list(_SPARE[:n_ell])
    ops = []
    for t, rank in zip(terms, ranks):
        if "..." in t:
            head, tail = t.split("...")
            k = rank - len(head) - len(tail)
            ops.append(list(head) + ell[n_ell - k:] + list(tail))
        else:
            ops.append(list(t))
        if len(ops[-1]) != rank:
            raise node.unsupported(f"equation {equation!r}: term {t!r} does not match an operand of rank {rank}")
    if arrow:
        head, _, tail = rhs.partition("...")
        out = list(head) + (ell + list(tail) if "..." in rhs else [])
    else:
        counts = {c: sum(o.count(c) for o in ops) for o in ops for c in o}
        out = ell + sorted(c for c, n in counts.items() if n == 1 and c not in ell)
    return ops, out


def lower_einsum(node, ins, ctx):
    shapes = [tuple(s) for s in node.in_shapes]
    ops, out = _parse(node, str(node.attrs.get("equation", "")), [len(s) for s in shapes])
    sizes = {}
    for letters, shape in zip(ops, shapes):
        for c, n in zip(letters, shape):
            if sizes.get(c, 1) not in (1, n) and n != 1:
                raise node.unsupported(f"letter {c!r} has sizes {sizes[c]} and {n}")
            sizes[c] = max(sizes.get(c, 1), n)
    if any(c not in sizes for c in out) or len(set(out)) != len(out):
        raise node.unsupported(f"output letters {''.join(out)!r} must be distinct letters of the inputs")
    summed = [c for c in sizes if c not in out]
    raxes = {c: te.reduce_axis((0, sizes[c]), f"r_{c}") for c in summed}
    tensors = [reader(as_tensor(x, ctx, f"{node.name}_in{i}"), s) for i, (x, s) in enumerate(zip(ins, shapes))]

    def body(*idx):
        var = dict(zip(out, idx))
        var.update({c: a.var for c, a in raxes.items()})
        expr = None
        for read, letters, shape in zip(tensors, ops, shapes):
            term = read(tuple(0 if n == 1 and sizes[c] > 1 else var[c] for c, n in zip(letters, shape)))
            expr = term if expr is None else expr * term
        return te.sum(expr, axis=list(raxes.values())) if raxes else expr
    shape = te_shape(tuple(sizes[c] for c in out))
    if math.prod(shape) < 1:
        raise node.unsupported("empty output")
    return [compute(shape, body, ctx.name(node.name), "einsum")]


OPS = {"Einsum": spec(lower_einsum, FLOATS + ("int32", "int64"), ("equation",),
                      "lower-case letters, '...', implicit output, diagonals")}
