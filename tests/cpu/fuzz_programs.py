"""Random te programs for the sanitizer fuzz test (test_fuzz_sanitize.py) and its long run (bench/fuzz_sanitize.py).

A program has one or two inputs and one to three computed stages, small random shapes, reads of any earlier
tensor with affine and non-affine subscripts (shifts, strides, floor division and modulo, i*i, abs, min/max,
two axes summed, constants), some of them guarded the way padding is, optional reductions, and integer
programs with // and % of tensor values (zero divisors included). Many are out of bounds on purpose: those must
be rejected by te.compute. `Chooser` is the only source of randomness, so hypothesis (shrinking) and a plain
seeded generator (the long run) drive the same code.
"""
from __future__ import annotations

import random

from ansorc.ir.program import te


class Chooser:
    """randint/choice/coin over random.Random; hypothesis wraps data.draw in the same three methods."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def randint(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def choice(self, seq):
        return seq[self.randint(0, len(seq) - 1)]

    def coin(self, p: float) -> bool:
        return self.randint(0, 99) < int(p * 100)


def _subscript(c: Chooser, axes: list, size: int):
    """A subscript expression over the axes (IterVars) for a dimension of `size`; may go out of bounds."""
    v = c.choice(axes)
    k = c.randint(1, 3)
    kind = c.choice(["v", "v", "v", "shift", "flip", "stride", "div", "mod", "square", "abs", "clamp", "two",
                     "const", "modsize"])
    if kind == "shift":
        return v + c.randint(-2, 2)
    if kind == "flip":
        return (size - 1 + c.randint(-1, 1)) - v
    if kind == "stride":
        return v * k + c.randint(0, 1)
    if kind == "div":
        return v // k
    if kind == "mod":
        return v % k
    if kind == "square":
        return v * v
    if kind == "abs":
        return te.abs(v - c.randint(0, size))
    if kind == "clamp":
        return te.min(te.max(v + c.randint(-2, 2), 0), size - 1 + c.randint(0, 1))
    if kind == "two":
        return v + c.choice(axes) - c.randint(0, 1)
    if kind == "const":
        return te.const(c.randint(0, size))
    if kind == "modsize":
        return (v * k + c.randint(0, 5)) % size
    return v.var if hasattr(v, "var") else v


def _read(c: Chooser, tensor, axes: list):
    subs = [_subscript(c, axes, s) for s in tensor.shape]
    value = tensor[tuple(subs)]
    if c.coin(0.3):  # guarded as padding is: in range, or the identity
        conds = []
        for e, s in zip(subs, tensor.shape):
            conds += [e >= 0, e < s]
        value = te.if_then_else(te.all(*conds), value, te.const(0, tensor.dtype))
    return value


def _combine(c: Chooser, a, b, dtype: str):
    if dtype == "int32":
        return c.choice([lambda: a + b, lambda: a // b, lambda: a % b, lambda: a * b - b])()
    return c.choice([lambda: a + b, lambda: a * b, lambda: a - b * 0.5, lambda: te.max(a, b)])()


def _shape(c: Chooser) -> tuple:
    return tuple(c.randint(1, 9) for _ in range(c.randint(1, 2)))


def random_program(c: Chooser) -> list:
    """Tensors in argument order (inputs, then the output). Raises ValueError (BoundsError) when a read may
    leave its tensor: that is the check under test."""
    dtype = "int32" if c.coin(0.2) else "float32"
    inputs = [te.placeholder(_shape(c), dtype, f"in{k}") for k in range(c.randint(1, 2))]
    tensors = list(inputs)
    for s in range(c.randint(1, 3)):
        shape = _shape(c)
        reduce = c.coin(0.35)
        k = te.reduce_axis((0, c.randint(1, 6)), "r") if reduce else None

        def body(*idx, k=k, srcs=tuple(tensors)):
            axes = list(idx) + ([k] if k is not None else [])
            terms = [_read(c, c.choice(srcs), axes) for _ in range(c.randint(1, 2))]
            value = terms[0] if len(terms) == 1 else _combine(c, terms[0], terms[1], dtype)
            return te.sum(value, axis=k) if k is not None else value
        names = ["i", "j"][:len(shape)]
        fn = (lambda i: body(i)) if len(names) == 1 else (lambda i, j: body(i, j))
        tensors.append(te.compute(shape, fn, name=f"s{s}"))
    return inputs + [tensors[-1]]
