"""Index analysis for the cost-model features: each access's per-variable strides and the elements, and cache
lines, it touches per loop level. features.py builds rows from these; features_table.py says what they mean.
"""
from __future__ import annotations

import math

from ..ir.program.dtypes import ITEMSIZE
from ..ir.program.expr import Binary, Cast, CheckedIndex, Const, Var, free_vars

_INF = float("inf")


class Access:
    """One distinct access (buffer, index tuple) of a store, with its strides and per-dimension terms."""
    __slots__ = ("shape", "elem", "groups", "var_map", "flat")


def _scale(lin, groups, k):
    ak = abs(k)
    return {v: c * k for v, c in lin.items()}, tuple(({v: c * k for v, c in g.items()}, cap * ak) for g, cap in groups)


def _lin(e):
    """e as (linear {var: coef}, groups ((coefs, cap), ...)): a group's span is min(cap, sum |coef|*(ext-1))."""
    t = type(e)
    if t is Var:
        return {e.name: 1.0}, ()
    if t is Const:
        return {}, ()
    if t is Binary:
        op = e.op
        if op == "+" or op == "-":
            la, ga = _lin(e.a)
            lb, gb = _lin(e.b)
            if not lb:
                return la, ga + gb
            out = dict(la)
            s = -1.0 if op == "-" else 1.0
            for v, c in lb.items():
                out[v] = out.get(v, 0.0) + s * c
            return out, ga + gb
        b = e.b
        if op == "*":
            if type(b) is Const:
                return _scale(*_lin(e.a), b.value)
            if type(e.a) is Const:
                return _scale(*_lin(b), e.a.value)
        elif op == "//" and type(b) is Const and b.value > 0:
            return _scale(*_lin(e.a), 1.0 / b.value)
        elif op == "%" and type(b) is Const and b.value > 0:
            la, ga = _lin(e.a)
            merged = dict(la)
            for g, _ in ga:
                merged.update(g)
            return {}, ((merged, b.value - 1.0),)
    if t is Cast:
        return _lin(e.value)
    if t is CheckedIndex:  # read from data: non-affine, but never outside 0..extent-1
        return {}, (({v: 1.0 for v in free_vars(e)}, e.extent - 1.0),)
    return {}, (({v: 1.0 for v in free_vars(e)}, _INF),)


def access(indices, buf, lin_cache: dict) -> Access:
    """The analysed access of `buf` at `indices`; lin_cache: id(index expr) -> analysis, shared per program."""
    a = Access()
    shape = buf.storage   # strides as laid out (a workspace's padded rows, ir/lowering/layout.py)
    a.shape, a.elem = shape, ITEMSIZE.get(buf.dtype, 4)
    var_map, flat, groups = {}, {}, []
    rs = 1
    cache = lin_cache
    for d in range(len(shape) - 1, -1, -1):
        e = indices[d]
        hit = cache.get(id(e))
        if hit is None:
            hit = cache[id(e)] = (e,) + _lin(e)
        _, lin, gs = hit
        for v, c in lin.items():
            if c:
                var_map.setdefault(v, []).append((d, -1, abs(c)))
                flat[v] = flat.get(v, 0.0) + c * rs
        for gi, (g, _) in enumerate(gs):
            for v, c in g.items():
                var_map.setdefault(v, []).append((d, gi, abs(c)))
                flat[v] = flat.get(v, 0.0) + c * rs
        groups.append(gs)
        rs *= shape[d]
    groups.reverse()
    a.groups, a.var_map, a.flat = groups, var_map, flat
    return a


def footprint(a: Access, loops) -> tuple:
    """Touched elements per loop level (index k: loops k.. vary; [n] = 1) and the outermost region per dim."""
    n = len(loops)
    shape, groups, vm = a.shape, a.groups, a.var_map
    nd = len(shape)
    lin = [0.0] * nd
    gs = [[0.0] * len(g) for g in groups]
    region = [1] * nd
    fp = [1] * (n + 1)
    cur = 1
    for k in range(n - 1, -1, -1):
        lp = loops[k]
        e1 = lp.ext - 1
        terms = vm.get(lp.var) if e1 else None
        if terms:
            for d, gi, c in terms:
                if gi < 0:
                    lin[d] += c * e1
                else:
                    gs[d][gi] += c * e1
            cur = 1
            for d in range(nd):
                span = lin[d]
                for gi, (_, cap) in enumerate(groups[d]):
                    s = gs[d][gi]
                    span += cap if s > cap else s
                r = min(shape[d], int(span + 1e-9) + 1)
                region[d] = r
                cur *= r
        fp[k] = cur
    return fp, region


def region_lines(region, shape, elem: int, cache_line: int) -> float:
    """Cache lines of a row-major box: the last dimension, merged with the ones before it while those after
    them are whole, is contiguous."""
    d = len(shape) - 1
    run = region[d] if d >= 0 else 1
    while d > 0 and region[d] == shape[d]:
        d -= 1
        run *= region[d]
    return float(math.prod(region[:max(d, 0)]) * math.ceil(run * elem / cache_line))


__all__ = ["Access", "access", "footprint", "region_lines"]
