"""Reference evaluator: runs a te graph with vectorized numpy. It is the oracle every kernel is checked against.

Each compute op is evaluated over index grids (one broadcast dimension per spatial axis, then one per reduce
axis). Float math runs in float64, integer math in int64 with floor `//` and `%` (numpy's semantics, the same as
the IR's), and each op's result is rounded to its dtype at the end. Inside the argument of a conversion to an
integer or 16-bit type (a Cast or te.saturate_cast) each float32 operation is rounded to float32 where it happens,
as the kernel computes it: one IEEE operation gives the same bits, so a truncation, a rint or a bfloat16 rounding
of it agrees with the kernel's (conversions and the narrow types: convert.py). A sum is contracted
with np.einsum over its product factors (BLAS for matmul/conv shapes), so no full iteration space is
materialized; ops are chunked over their leading axes so that no intermediate exceeds `chunk_elems` elements.

Reads inside a select branch are only checked where that branch is live: indices are clipped into range and the
dead lanes masked by np.where, while an out-of-range read in a live lane raises IndexError (a bug in the graph).
A checked index (an index read from data) out of range in a live lane raises EvaluateError naming the tensor
it indexes: the input is wrong, as onnxruntime reports for Gather.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from . import convert
from .dtypes import NP_DTYPE
from ...errors import AnsorcError
from .expr import (Binary, Call, Cast, CheckedIndex, Compare, Const, Logic, Read, Reduce, Select, Var, free_vars,
                   is_float, walk)
from .graph import CycleError, postorder
from .simplify import linear_form, simplify
from .te import ComputeOp, PlaceholderOp, Tensor


class EvaluateError(AnsorcError, TypeError, ValueError, KeyError, IndexError):
    """The reference evaluation cannot run (missing or misshapen input, unsupported node, index outside an
    array). It derives from each builtin class these errors were raised as before."""

    def __str__(self) -> str:  # a KeyError would quote its message
        return str(self.args[0]) if self.args else ""

CHUNK_ELEMS = 1 << 22  # 4M elements: 32 MB per float64 intermediate

NP_DTYPES = NP_DTYPE

_BINARY = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide, "//": np.floor_divide,
           "%": np.mod, "min": np.minimum, "max": np.maximum}
_COMPARE = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal, "==": np.equal,
            "!=": np.not_equal}
_CALL = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "tanh": np.tanh, "abs": np.abs, "floor": np.floor,
         "ceil": np.ceil, "pow": np.power, "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x))}
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


_wide = convert.wide_type   # the numpy type the oracle computes a `dtype` value in


def _round32(v):
    return np.asarray(v, dtype=np.float64).astype(np.float32).astype(np.float64)


# ----------------------------------------------------------------------------- public API

def evaluate(outputs, inputs: dict, *, chunk_elems: int = CHUNK_ELEMS) -> dict:
    """Evaluate every compute op reachable from `outputs`; returns {name: array} for all of them."""
    if isinstance(outputs, Tensor):
        outputs = [outputs]
    order = _topo(outputs)
    arrays: dict = {}
    for op in order:
        if isinstance(op, PlaceholderOp):
            if op.name not in inputs:
                raise EvaluateError(f"evaluate: no input array for placeholder {op.name!r}")
            a = np.asarray(inputs[op.name])
            if a.shape != op.shape:
                raise EvaluateError(f"evaluate: input {op.name!r} has shape {a.shape}, the placeholder {op.shape}")
            arrays[op.name] = convert.storage(a, op.dtype)
    for name, a in inputs.items():  # Reads without a tensor link resolve by name
        arrays.setdefault(name, np.asarray(a))
    results = {}
    with np.errstate(all="ignore"):  # dead select lanes may divide by zero or take log(-1)
        for op in order:
            if isinstance(op, ComputeOp):
                arrays[op.name] = results[op.name] = _eval_op(op, arrays, int(chunk_elems))
    return results


def random_inputs(tensors, seed: int = 0) -> dict:
    """Random arrays for every placeholder reachable from `tensors`: floats uniform in [-1, 1], ints in [-8, 8],
    except that ints read as checked indices (`A[checked(B[i] + c, n)]`) are drawn so that the index is in range."""
    if isinstance(tensors, Tensor):
        tensors = [tensors]
    rng = np.random.default_rng(seed)
    out = {}
    order = _topo(tensors)
    index_ranges = _index_ranges(order)
    for op in order:
        if not isinstance(op, PlaceholderOp):
            continue
        if op.name in index_ranges:
            lo, hi = index_ranges[op.name]
            out[op.name] = rng.integers(lo, hi + 1, op.shape).astype(NP_DTYPES[op.dtype])
        elif is_float(op.dtype):
            out[op.name] = convert.storage(rng.uniform(-1.0, 1.0, op.shape).astype(np.float32), op.dtype)
        elif op.dtype == "bool":
            out[op.name] = rng.integers(0, 2, op.shape).astype(np.bool_)
        else:
            lo = -8 if op.dtype != "uint8" else 0
            out[op.name] = rng.integers(lo, lo + 17, op.shape).astype(NP_DTYPES[op.dtype])
    return out


def _index_ranges(order) -> dict:
    """placeholder name -> (lo, hi): values that keep every checked index it feeds in range, where the index is
    the placeholder's element plus a constant (a select around it, as the ONNX wrap of negative indices, is
    looked through: its else-arm is the index itself)."""
    ranges = {}
    for op in order:
        if not isinstance(op, ComputeOp):
            continue
        for c in (n for n in walk(op.body) if isinstance(n, CheckedIndex)):
            v = c.value.f if isinstance(c.value, Select) else c.value
            terms, k = linear_form(simplify(v.value if isinstance(v, Cast) else v))
            [(t, coef)] = terms.items() if len(terms) == 1 else [(None, 0)]
            if not (isinstance(t, Read) and coef == 1 and isinstance(getattr(t.tensor, "op", None), PlaceholderOp)):
                continue
            lo, hi = ranges.get(t.name, (-2**31, 2**31 - 1))
            lo, hi = max(lo, -k), min(hi, c.extent - 1 - k)
            if lo <= hi:
                ranges[t.name] = (lo, hi)
    return ranges


# ----------------------------------------------------------------------------- graph order

def _producers(op) -> list:
    if isinstance(op, PlaceholderOp):
        return []
    deps = list(op.inputs)
    for r in walk(op.body):
        if isinstance(r, Read) and r.tensor is not None and r.tensor not in deps:
            deps.append(r.tensor)
    return [t.op for t in deps]


def _topo(outputs) -> list:
    """Ops in dependency order (producers first); two different ops may not share a name."""
    try:
        order = postorder([t.op for t in outputs], _producers)
    except CycleError as e:
        raise EvaluateError(f"evaluate: the graph has a cycle through {e.args[0].name!r}") from None
    by_name = {}
    for op in order:
        if by_name.setdefault(op.name, op) is not op:
            raise EvaluateError(f"evaluate: two different tensors are both named {op.name!r}")
    return order


# ----------------------------------------------------------------------------- one compute op

def _factors(e) -> list:
    return _factors(e.a) + _factors(e.b) if isinstance(e, Binary) and e.op == "*" else [e]


def _eval_op(op: ComputeOp, arrays: dict, limit: int) -> np.ndarray:
    body, combiner, raxes = op.body, op.combiner, op.reduce_axes
    if combiner is None and isinstance(body, Reduce):  # tolerate a hand-built op holding the Reduce node
        body, combiner, raxes = body.source, body.combiner, body.axes
    if combiner not in (None, "sum", "max", "min"):
        raise EvaluateError(f"evaluate: compute {op.name!r} has unknown combiner {combiner!r}")
    axes = tuple(op.axes) + tuple(raxes)
    n, nd = len(op.axes), len(axes)
    pos = {a.name: d for d, a in enumerate(axes)}
    exts = [a.extent for a in axes]
    spatial = set(range(n))
    contract = combiner == "sum" and op.dtype != "bool"
    factors = _factors(body) if contract else [body]
    # the dims each intermediate can span: what bounds memory when choosing chunks
    pieces = [{pos[v] for v in free_vars(f) if v in pos} for f in factors] + [spatial]
    if not contract:
        pieces = [pieces[0] | spatial]
    out = np.empty(op.shape, dtype=_wide(op.dtype))
    for ranges in _chunks(exts, pieces, limit):
        grids = {}
        for d, (a, (lo, hi)) in enumerate(zip(axes, ranges)):
            shape = [1] * nd
            shape[d] = hi - lo
            grids[a.name] = np.arange(lo, hi, dtype=np.int64).reshape(shape)
        ctx = _Ctx(arrays, grids, nd)
        cshape = tuple(hi - lo for lo, hi in ranges)
        sp = tuple(slice(lo, hi) for lo, hi in ranges[:n])
        if combiner is None:
            out[sp] = ctx.ev(body)
            continue
        if contract:
            part = _contract(ctx, factors, cshape, n)
        else:
            part = _reduce(ctx, body, combiner, cshape, n)
        if all(lo == 0 for lo, _ in ranges[n:]):  # first block of the reduce axes
            out[sp] = part
        elif combiner == "sum":
            out[sp] += part
        else:
            out[sp] = (np.maximum if combiner == "max" else np.minimum)(out[sp], part)
    return convert.narrow(out, op.dtype)


def _chunks(exts, pieces, limit):
    """Per-axis (lo, hi) ranges covering the iteration space such that every piece (the set of dims one
    intermediate spans) stays within `limit` elements. Blocks are halved greedily on the axis shared by the most
    oversized pieces (the largest on a tie), which keeps the chunk count, and with it the re-gathering of the
    pieces that do not span the halved axis, small. Spatial axes come first, so for each output block the
    reduce blocks start with the one at lo = 0."""
    blocks = list(exts)

    def size(p):
        return math.prod(blocks[a] for a in p)

    while True:
        over = [p for p in pieces if size(p) > limit]
        if not over:
            break
        a = max((a for a in range(len(exts)) if blocks[a] > 1),
                key=lambda a: (sum(a in p for p in over), blocks[a]))
        blocks[a] = -(-blocks[a] // 2)
    for los in itertools.product(*(range(0, e, b) for e, b in zip(exts, blocks))):
        yield [(lo, min(lo + b, e)) for lo, b, e in zip(los, blocks, exts)]


def _as_nd(v, nd: int) -> np.ndarray:
    v = np.asarray(v)
    return v.reshape((1,) * nd) if v.ndim == 0 else v


def _contract(ctx, factors, cshape, n):
    """sum over the reduce dims of a product of factors, with einsum on their non-broadcast dims."""
    nd = len(cshape)
    scale, operands, subs, present = 1, [], [], set()
    for f in factors:
        v = np.asarray(ctx.ev(f))
        if v.ndim == 0:
            scale = scale * v
            continue
        keep = [d for d in range(nd) if v.shape[d] > 1]
        operands.append(v.reshape([v.shape[d] for d in keep]))
        subs.append("".join(_LETTERS[d] for d in keep))
        present.update(keep)
    for d in range(n, nd):  # a reduce dim no factor depends on contributes extent times the same value
        if d not in present:
            scale = scale * cshape[d]
    out_dims = [d for d in range(n) if d in present]
    if operands:
        spec = ",".join(subs) + "->" + "".join(_LETTERS[d] for d in out_dims)
        r = np.einsum(spec, *operands, optimize=len(operands) > 1)
    else:
        r = np.asarray(1, dtype=np.result_type(scale))
    return np.reshape(r, [cshape[d] if d in present else 1 for d in range(n)]) * scale


def _reduce(ctx, body, combiner, cshape, n):
    nd = len(cshape)
    v = np.asarray(ctx.ev(body))
    v = _as_nd(v, nd)
    if combiner == "sum":  # bool sums only: materialize
        return np.broadcast_to(v, cshape).sum(axis=tuple(range(n, nd)))
    dims = tuple(d for d in range(n, nd) if v.shape[d] > 1)  # max/min over a broadcast dim is a no-op
    if dims:
        v = (np.max if combiner == "max" else np.min)(v, axis=dims, keepdims=True)
    return v.reshape(v.shape[:n])


# ----------------------------------------------------------------------------- expressions

def _and(mask, cond):
    return cond if mask is None else np.logical_and(mask, cond)


class _Ctx:
    """Evaluates expression nodes over the index grids of one chunk; `mask` marks the live lanes."""

    def __init__(self, arrays, grids, nd):
        self.arrays, self.grids, self.nd = arrays, grids, nd
        self.reading = []   # the tensors whose subscripts are being evaluated (innermost last)
        self.exact = False  # inside a conversion to an integer or 16-bit type (converted)

    def ev(self, e, mask=None):
        if isinstance(e, Var):
            if e.name not in self.grids:
                raise EvaluateError(f"evaluate: variable {e.name!r} is not an axis of this compute")
            return self.grids[e.name]
        if isinstance(e, Const):
            if e.dtype == "float32":  # the kernel sees the float32 constant
                return np.float64(np.float32(e.value))
            return _wide(e.dtype)(e.value)
        if isinstance(e, Binary):
            v = _BINARY[e.op](self.ev(e.a, mask), self.ev(e.b, mask))
            return _round32(v) if self.exact and e.dtype == "float32" else v
        if isinstance(e, Compare):
            return _COMPARE[e.op](self.ev(e.a, mask), self.ev(e.b, mask))
        if isinstance(e, Logic):
            a = self.ev(e.a, mask)
            if e.op == "!":
                return np.logical_not(a)
            if e.op == "&&":  # short-circuit: b only matters where a holds
                return np.logical_and(a, self.ev(e.b, _and(mask, a)))
            return np.logical_or(a, self.ev(e.b, _and(mask, np.logical_not(a))))
        if isinstance(e, Select):
            c = self.ev(e.cond, mask)
            t = self.ev(e.t, _and(mask, c))
            f = self.ev(e.f, _and(mask, np.logical_not(c)))
            return np.where(c, t, f)
        if isinstance(e, Cast):  # round/wrap to the target type, then widen again
            return convert.cast(self.converted(e.value, e.dtype, mask), e.dtype)
        if isinstance(e, Call) and e.name == "saturate":
            return convert.saturate(self.converted(e.args[0], e.dtype, mask), e.dtype)
        if isinstance(e, Call):
            if e.name not in _CALL:
                raise EvaluateError(f"evaluate: unknown math function {e.name!r}")
            return _CALL[e.name](*(self.ev(a, mask) for a in e.args))
        if isinstance(e, Read):
            return self.read(e, mask)
        if isinstance(e, CheckedIndex):
            return self.checked(e, mask)
        if isinstance(e, Reduce):
            raise EvaluateError("evaluate: a reduction may only be the whole body of a compute")
        raise EvaluateError(f"evaluate: unsupported expression node {type(e).__name__}")

    def converted(self, e, dtype: str, mask):
        """The value a conversion to `dtype` converts: exact float32 arithmetic where `dtype` is an integer or a
        16-bit float type."""
        saved = self.exact
        self.exact = saved or dtype not in ("float32", "float64")
        try:
            return self.ev(e, mask)
        finally:
            self.exact = saved

    def checked(self, e: CheckedIndex, mask):
        v = np.asarray(self.ev(e.value, mask), dtype=np.int64)
        bad = (v < 0) | (v >= e.extent)
        live = bad if mask is None else np.logical_and(bad, mask)
        if np.any(live):
            at = np.unravel_index(np.argmax(np.broadcast_to(live, np.broadcast_shapes(live.shape, v.shape))),
                                  np.broadcast_shapes(live.shape, v.shape))
            value = int(np.broadcast_to(v, np.broadcast_shapes(live.shape, v.shape))[at])
            where = f"in {self.reading[-1]}" if self.reading else f"in {e!r}"
            raise EvaluateError(f"evaluate: index {value} out of range {where} (expected 0..{e.extent - 1})")
        return np.clip(v, 0, e.extent - 1)

    def read(self, e: Read, mask):
        self.reading.append(e.name)
        try:
            return self._read(e, mask)
        finally:
            self.reading.pop()

    def _read(self, e: Read, mask):
        if e.name not in self.arrays:
            raise EvaluateError(f"evaluate: no array named {e.name!r} (read by {e!r})")
        arr = self.arrays[e.name]
        if arr.ndim != len(e.indices):
            raise EvaluateError(f"evaluate: {e!r} has {len(e.indices)} indices, {e.name!r} has {arr.ndim} dims")
        raw, idx, bad = [], [], None
        for size, ie in zip(arr.shape, e.indices):
            i = np.asarray(self.ev(ie, mask), dtype=np.int64)
            raw.append(i)
            if i.size and (i.min() < 0 or i.max() >= size):
                o = (i < 0) | (i >= size)
                bad = o if bad is None else bad | o
                i = np.clip(i, 0, size - 1)
            idx.append(i)
        if bad is not None:
            live = bad if mask is None else np.logical_and(bad, mask)
            if np.any(live):
                raw_nd = [_as_nd(r, self.nd) for r in raw]  # the other indices may vary along other axes
                live = _as_nd(live, self.nd)
                live = np.broadcast_to(live, np.broadcast_shapes(live.shape, *(r.shape for r in raw_nd)))
                at = np.unravel_index(np.argmax(live), live.shape)
                vals = tuple(int(np.broadcast_to(r, live.shape)[at]) for r in raw_nd)
                raise EvaluateError(f"evaluate: {e!r} reads {e.name}{list(vals)} outside shape {arr.shape}")
        return convert.widen(arr[tuple(idx)], e.dtype)
