"""Build-time bounds check of a compute: every tensor read is proven inside its tensor, or the compute is rejected.

The proof is interval analysis (`simplify.bound`) over the axes' ranges, refined by the conditions that guard
the read: the taken arm of a select knows its condition holds (the other arm that it fails), and the second
operand of `&&` / `||` knows the first held / failed. These are exactly the places where both the numpy
evaluator (masked lanes) and the generated C (`?:`, `&&`, `||`, per-lane vector selects) never evaluate a read,
so padding written as `if_then_else(all(i >= p, i < p + n), A[i - p], 0)` is accepted. A guard helps in two
ways: a condition on one axis narrows that axis' range (`i >= p`), and a condition on any integer expression
proves a subscript equal to it plus a non-negative rest (`0 <= B[i]` proves `A[B[i]]` from below).
An index read from data is proven by `te.checked_index(e, n)`, which ranges over 0..n-1 (simplify.bound): the
kernel checks it at run time, so it is never an unchecked read.
"""
from __future__ import annotations

from ...errors import AnsorcError
from .expr import Binary, Compare, Expr, Logic, Read, Select, Var, children, is_float, reads
from .simplify import bound, linear_form, simplify

INT_RANGE = {"int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1), "bool": (0, 1)}
_FLIP = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}


class BoundsError(AnsorcError, ValueError):
    """A read that cannot be proven inside its tensor (a build-time error)."""


def check_reads(op_name: str, axes: tuple, body: Expr) -> None:
    """Raise BoundsError unless every linked Read in `body` stays inside its tensor's shape for every point of
    `axes` (IterVars over [0, extent)), taking guards into account."""
    base = {a.name: (0, a.extent - 1) for a in axes}
    stack = [(body, ())]
    while stack:  # iterative: bodies from long expression files nest deeply
        e, facts = stack.pop()
        if isinstance(e, Select):
            stack += [(e.cond, facts), (e.t, facts + _facts(e.cond, True)), (e.f, facts + _facts(e.cond, False))]
            continue
        if isinstance(e, Logic) and e.op in ("&&", "||"):
            stack += [(e.a, facts), (e.b, facts + _facts(e.a, e.op == "&&"))]
            continue
        if isinstance(e, Read) and e.tensor is not None:
            _check_read(op_name, e, base, facts)
        stack += [(c, facts) for c in children(e)]


def _check_read(op_name: str, r: Read, base: dict, facts: tuple) -> None:
    bounds = _narrow(base, facts)
    if bounds is None:
        return  # the guards contradict each other: this read never happens
    shape = r.tensor.shape
    for p, (idx, size) in enumerate(zip(r.indices, shape)):
        _check_overflow(op_name, r, idx, bounds)
        s = simplify(idx, bounds)
        iv = _meet(bound(idx, bounds), bound(s, bounds))
        lo_ok = iv is not None and iv[0] >= 0
        hi_ok = iv is not None and iv[1] <= size - 1
        # the facts are simplified without the ranges (a guard's `(ph + p) % s` stays an atom even where the
        # ranges fold the subscript's to `ph`): compare both forms of the subscript
        for form in ((s, simplify(idx)) if facts else ()):
            if lo_ok and hi_ok:
                break
            terms, c = linear_form(form)
            lo_ok = lo_ok or _implied((terms, c), facts, bounds)
            hi_ok = hi_ok or _implied(({t: -k for t, k in terms.items()}, size - 1 - c), facts, bounds)
        if lo_ok and hi_ok:
            continue
        where = f"compute {op_name!r} reads {r!r}: subscript {p} ({idx!r})"
        if iv is None:
            hint = f"te.checked_index(e, {size}) for an index read from data, or " if reads(idx) else ""
            raise BoundsError(f"{where} cannot be proven inside 0..{size - 1} (dimension {p} of {r.name}, shape "
                              f"{list(shape)}); use {hint}a guard: if_then_else(all(0 <= e, e < {size}), ..., 0)")
        raise BoundsError(f"{where} ranges over {_span(iv)}, outside 0..{size - 1} (dimension {p} of {r.name}, "
                          f"shape {list(shape)})")


def _check_overflow(op_name: str, r: Read, idx: Expr, bounds: dict) -> None:
    """Index arithmetic must not leave its integer type: C would wrap (or trap) where numpy does not."""
    stack = [idx]
    while stack:
        e = stack.pop()
        if isinstance(e, Binary) and e.dtype in INT_RANGE:
            b = bound(e, bounds)
            lo, hi = INT_RANGE[e.dtype]
            if b is not None and (b[0] < lo or b[1] > hi):
                raise BoundsError(f"compute {op_name!r} reads {r!r}: {e!r} ranges over {_span(b)}, which "
                                  f"overflows {e.dtype}")
        stack.extend(children(e))


def _span(iv: tuple) -> str:
    return str(iv[0]) if iv[0] == iv[1] else f"{iv[0]}..{iv[1]}"


def _meet(a: tuple | None, b: tuple | None) -> tuple | None:
    if a is None or b is None:
        return a or b
    return (max(a[0], b[0]), min(a[1], b[1]))


# ----------------------------------------------------------------------------- guard facts

def _facts(cond: Expr, holds: bool) -> tuple:
    """What `cond` (or, holds=False, its negation) tells, as linear forms ({atom: coef}, const) known >= 0."""
    if isinstance(cond, Logic):
        if cond.op == "!":
            return _facts(cond.a, not holds)
        if (cond.op == "&&") == holds:  # a && b holds, or a || b fails: both parts are known
            return _facts(cond.a, holds) + _facts(cond.b, holds)
        return ()
    if not isinstance(cond, Compare) or is_float(cond.a.dtype) or cond.a.dtype == "bool":
        return ()
    op = cond.op if holds else _FLIP[cond.op]
    terms, c = linear_form(simplify(Binary("-", cond.a, cond.b, cond.a.dtype)))  # a - b
    neg = ({t: -k for t, k in terms.items()}, -c)
    return {">=": ((terms, c),), ">": ((terms, c - 1),), "<=": (neg,), "<": ((neg[0], neg[1] - 1),),
            "==": ((terms, c), neg), "!=": ()}[op]


def _narrow(base: dict, facts: tuple) -> dict | None:
    """Axis ranges narrowed by the facts on a single axis (k*v + c >= 0); None when a range becomes empty."""
    bounds = dict(base)
    for terms, c in facts:
        if len(terms) != 1:
            continue
        [(v, k)] = terms.items()
        if not isinstance(v, Var) or v.name not in bounds:
            continue
        lo, hi = bounds[v.name]
        if k > 0:
            lo = max(lo, -(c // k))  # v >= ceil(-c / k)
        else:
            hi = min(hi, c // -k)    # v <= floor(c / -k)
        if lo > hi:
            return None
        bounds[v.name] = (lo, hi)
    return bounds


def _implied(target: tuple, facts: tuple, bounds: dict) -> bool:
    """Is target >= 0, because target - F >= 0 over the ranges for some fact F >= 0?"""
    for fterms, fc in facts:
        terms = dict(target[0])
        for t, k in fterms.items():
            terms[t] = terms.get(t, 0) - k
        low = target[1] - fc
        for t, k in terms.items():
            if k == 0:
                continue
            b = bound(t, bounds)
            if b is None:
                break
            low += k * (b[0] if k > 0 else b[1])
        else:
            if low >= 0:
                return True
    return False


__all__ = ["BoundsError", "check_reads"]
