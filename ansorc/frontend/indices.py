"""Index analysis of one definition: which indices each reduction reduces, each index's range, and the
interval arithmetic that proves a read out of bounds.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import nodes as n
from .consts import FUNCTIONS, REDUCERS, check_name, eval_size
from .errors import TeError


@dataclass(frozen=True)
class IndexRange:
    """lo <= index < hi, and where that came from (for messages)."""
    lo: int
    hi: int
    origin: str


def is_reduction(node: n.Node) -> bool:
    return isinstance(node, n.FuncCall) and node.func in REDUCERS and len(node.args) == 1


@dataclass
class IndexAnalysis:
    """Result of `analyze`: ranges of all indices, and the axes each reduction reduces (keyed by node id)."""
    ranges: dict            # index name -> IndexRange
    left: tuple             # left-side index names
    reduce_axes: dict       # id(reduction node) -> tuple of index names


def analyze(d: n.Definition, params: dict, shapes: dict, tensor_names: set, declared: tuple | None,
            filename: str) -> IndexAnalysis:
    """shapes: tensor name -> shape of every tensor this definition may read; tensor_names: all tensors of the
    file; declared: the shape from an `output`/`tensor` declaration, if any."""
    def fail(message: str, at: n.Node) -> TeError:
        return TeError(message, filename, at.line, at.col)

    left: list[str] = []
    for i in d.indices:
        check_name(i.id, "an index", filename, i.line, i.col)
        if i.id in params or i.id in tensor_names:
            kind = "size parameter" if i.id in params else "tensor"
            raise fail(f"index '{i.id}' has the name of a {kind} (expected a distinct index name)", i)
        if i.id in left:
            raise fail(f"index '{i.id}' appears twice on the left side of {d.name} (expected distinct indices)", i)
        left.append(i.id)
    if declared is not None and len(declared) != len(left):
        raise fail(f"{d.name} is declared with {len(declared)} dimensions but defined with {len(left)} indices "
                   f"(expected {len(declared)})", d)

    occurrences: dict[str, list] = {}   # RHS-only index -> [(Name node, enclosing reductions, outermost first)]
    _collect(d.value, (), set(left), params, shapes, tensor_names, occurrences, filename)
    reduce_axes = _assign_reductions(d, occurrences, filename)

    ranges: dict[str, IndexRange] = {}
    for p, name in enumerate(left):
        if declared is not None:
            ranges[name] = IndexRange(0, declared[p], f"dimension {p} of the declaration of {d.name}")
    seen = set()
    for r in d.ranges:
        if r.name in seen:
            raise fail(f"'where' gives the range of '{r.name}' twice (expected one range per index)", r)
        seen.add(r.name)
        if r.name not in left and r.name not in occurrences:
            raise fail(f"'where' gives a range for '{r.name}', which this definition does not use "
                       "(expected one of its indices)", r)
        lo = 0 if r.lo is None else eval_size(r.lo, params, filename, "a range bound") + int(r.lo_strict)
        hi = eval_size(r.hi, params, filename, "a range bound") + int(r.hi_inclusive)
        if hi <= lo:
            raise fail(f"the range of '{r.name}' is empty ({lo} <= {r.name} < {hi}; expected a non-empty range)", r)
        if r.name in left and lo != 0:
            raise fail(f"left-side index '{r.name}' must start at 0, got {lo} (expected 'where {r.name} < ...')", r)
        _merge(ranges, r.name, IndexRange(lo, hi, f"'where' at {r.line}:{r.col}"), r, filename)
    for ref in (x for x in n.walk(d.value) if isinstance(x, n.TensorRef)):
        for p, idx in enumerate(ref.indices):
            if isinstance(idx, n.Name) and idx.id not in params and p < len(shapes[ref.tensor]):
                origin = f"dimension {p} of {ref.tensor} at {idx.line}:{idx.col}"
                _merge(ranges, idx.id, IndexRange(0, shapes[ref.tensor][p], origin), idx, filename)
    used = {x.id for x in n.walk(d.value) if isinstance(x, n.Name)}
    for name, at in [(i.id, i) for i in d.indices] + [(k, v[0][0]) for k, v in occurrences.items()]:
        if name not in ranges and name not in used:
            raise fail(f"cannot infer the range of index '{name}': the right side does not use it (expected a "
                       f"declaration of {d.name} or 'where {name} < ...')", at)
        if name not in ranges:
            raise fail(f"cannot infer the range of index '{name}': it is only used in arithmetic (expected it "
                       f"alone as an index somewhere, 'where {name} < ...', or a declaration of {d.name})", at)
    return IndexAnalysis(ranges, tuple(left), reduce_axes)


def _merge(ranges: dict, name: str, new: IndexRange, at: n.Node, filename: str) -> None:
    old = ranges.get(name)
    if old is None:
        ranges[name] = new
    elif (old.lo, old.hi) != (new.lo, new.hi):
        raise TeError(f"shape mismatch: index '{name}' ranges over {_show(new)} by {new.origin} but over "
                      f"{_show(old)} by {old.origin} (expected the same range)", filename, at.line, at.col)


def _show(r: IndexRange) -> str:
    return str(r.hi) if r.lo == 0 else f"{r.lo}..{r.hi - 1}"


def _collect(node, reductions: tuple, left: set, params: dict, shapes: dict, tensor_names: set, out: dict,
             filename: str) -> None:
    """Record every RHS-only index occurrence with its enclosing reductions; check calls and references."""
    stack = [(node, reductions)]
    while stack:
        node, reductions = stack.pop()
        if isinstance(node, n.Name):
            if node.id in tensor_names:
                raise TeError(f"tensor '{node.id}' used without indices (expected {node.id}[...])", filename,
                              node.line, node.col)
            if node.id not in params and node.id not in left:
                check_name(node.id, "an index", filename, node.line, node.col)
                out.setdefault(node.id, []).append((node, reductions))
        elif isinstance(node, n.TensorRef):
            shape = shapes.get(node.tensor)
            if shape is None:
                raise TeError(f"unknown tensor '{node.tensor}' (expected a declared input or a defined tensor)",
                              filename, node.line, node.col)
            if len(node.indices) != len(shape):
                raise TeError(f"{node.tensor} has {len(shape)} dimensions but is indexed with {len(node.indices)} "
                              f"(expected {len(shape)} indices)", filename, node.line, node.col)
        elif isinstance(node, n.FuncCall):
            arities = FUNCTIONS.get(node.func)
            if arities is None:
                hint = "index a tensor with [ ]" if node.func in tensor_names else \
                    "expected one of " + ", ".join(FUNCTIONS)
                raise TeError(f"unknown function '{node.func}' ({hint})", filename, node.line, node.col)
            if len(node.args) not in arities:
                want = " or ".join(map(str, arities))
                raise TeError(f"{node.func}() takes {want} argument{'s' if want != '1' else ''}, got "
                              f"{len(node.args)} (expected {want})", filename, node.line, node.col)
            if is_reduction(node):
                reductions = reductions + (node,)
        stack.extend((c, reductions) for c in reversed(n.children(node)))


def _assign_reductions(d: n.Definition, occurrences: dict, filename: str) -> dict:
    """Each RHS-only index is reduced by the innermost reduction that encloses all of its uses."""
    axes: dict[int, list] = {}
    for name, uses in occurrences.items():
        common = list(uses[0][1])
        for _, reds in uses[1:]:
            k = 0
            while k < min(len(common), len(reds)) and common[k] is reds[k]:
                k += 1
            del common[k:]
        if not common:
            free = next((u for u, reds in uses if not reds), None)
            if free is not None:
                raise TeError(f"index '{name}' is not on the left side of {d.name} and not inside sum/max/min "
                              f"(expected it on the left, inside a reduction, or 'param {name} = ...' if it is a "
                              "size)", filename, free.line, free.col)
            second = next(u for u, reds in uses if reds[0] is not uses[0][1][0])
            raise TeError(f"index '{name}' is reduced by two separate reductions (expected a different index name "
                          "in each reduction)", filename, second.line, second.col)
        axes.setdefault(id(common[-1]), []).append(name)
    for red in (x for x in n.walk(d.value) if is_reduction(x)):
        if id(red) not in axes:
            raise TeError(f"{red.func}(...) has nothing to reduce: every index in it is on the left side of "
                          f"{d.name} (expected an index that appears only on the right)", filename, red.line, red.col)
    return {k: tuple(v) for k, v in axes.items()}


# ----------------------------------------------------------------------------- interval arithmetic

@dataclass(frozen=True)
class Interval:
    """Values an integer index expression can take. exact: both ends are attained (each index appears once
    in an affine-like expression), so an end outside the tensor is a proven out-of-bounds read."""
    lo: int
    hi: int
    exact: bool
    names: frozenset


def interval(node: n.Node, ranges: dict, params: dict) -> Interval | None:
    """None when unknown (a tensor value, a float, a call)."""
    if isinstance(node, n.Num):
        return None if isinstance(node.value, float) else Interval(node.value, node.value, True, frozenset())
    if isinstance(node, n.Name):
        if node.id in params:
            return Interval(params[node.id], params[node.id], True, frozenset())
        r = ranges.get(node.id)
        return None if r is None else Interval(r.lo, r.hi - 1, True, frozenset({node.id}))
    if isinstance(node, n.Unary) and node.op == "-":
        a = interval(node.operand, ranges, params)
        return None if a is None else Interval(-a.hi, -a.lo, a.exact, a.names)
    if isinstance(node, n.BinOp) and node.op in ("+", "-", "*", "//", "%"):
        a, b = interval(node.left, ranges, params), interval(node.right, ranges, params)
        if a is None or b is None:
            return None
        exact = a.exact and b.exact and not (a.names & b.names)
        names = a.names | b.names
        if node.op == "+":
            return Interval(a.lo + b.lo, a.hi + b.hi, exact, names)
        if node.op == "-":
            return Interval(a.lo - b.hi, a.hi - b.lo, exact, names)
        if node.op == "*":
            corners = (a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi)
            return Interval(min(corners), max(corners), exact, names)
        if b.lo != b.hi or b.lo == 0:
            return None
        c = b.lo
        if node.op == "//":  # monotone in the dividend, so the ends stay attained
            ends = (a.lo // c, a.hi // c)
            return Interval(min(ends), max(ends), a.exact, names)
        if c > 0 and a.lo // c == a.hi // c:
            return Interval(a.lo % c, a.hi % c, a.exact, names)
        return Interval(min(0, c + 1), max(0, c - 1), a.exact and c > 0, names)
    if isinstance(node, n.FuncCall) and node.func in ("max", "min") and len(node.args) == 2:
        a, b = (interval(x, ranges, params) for x in node.args)
        if a is None or b is None:
            return None
        pick = max if node.func == "max" else min
        return Interval(pick(a.lo, b.lo), pick(a.hi, b.hi), False, a.names | b.names)
    if isinstance(node, (n.IfExp, n.FuncCall)) and (isinstance(node, n.IfExp) or node.func == "select"):
        t, f = (node.then, node.orelse) if isinstance(node, n.IfExp) else node.args[1:]
        a, b = interval(t, ranges, params), interval(f, ranges, params)
        if a is None or b is None:
            return None
        return Interval(min(a.lo, b.lo), max(a.hi, b.hi), False, a.names | b.names)
    return None


# ----------------------------------------------------------------------------- guards

def linear(node: n.Node, params: dict) -> tuple | None:
    """(terms, constant) with terms {index name or canonical `//`/`%`/product atom: coefficient}, or None."""
    if isinstance(node, n.Num):
        return None if isinstance(node.value, float) else ({}, node.value)
    if isinstance(node, n.Name):
        return ({}, params[node.id]) if node.id in params else ({node.id: 1}, 0)
    if isinstance(node, n.Unary) and node.op == "-":
        a = linear(node.operand, params)
        return None if a is None else _scale(a, -1)
    if not (isinstance(node, n.BinOp) and node.op in ("+", "-", "*", "//", "%")):
        return None
    a, b = linear(node.left, params), linear(node.right, params)
    if a is None or b is None:
        return None
    if node.op in ("+", "-"):
        return _add(a, _scale(b, 1 if node.op == "+" else -1))
    if node.op == "*" and (not a[0] or not b[0]):
        return _scale(b, a[1]) if not a[0] else _scale(a, b[1])
    if node.op != "*" and (b[0] or b[1] == 0):
        return None
    return ({f"{node.op}({_canon(a)}, {_canon(b)})": 1}, 0)  # a non-linear part, compared as a whole


def _scale(a: tuple, k: int) -> tuple:
    return ({t: c * k for t, c in a[0].items() if c * k}, a[1] * k)


def _add(a: tuple, b: tuple) -> tuple:
    terms = dict(a[0])
    for t, c in b[0].items():
        terms[t] = terms.get(t, 0) + c
    return ({t: c for t, c in terms.items() if c}, a[1] + b[1])


def _canon(a: tuple) -> str:
    return repr((sorted(a[0].items()), a[1]))


_FLIP = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}


def facts(cond: n.Node, params: dict, holds: bool = True) -> tuple:
    """What `cond` (or its negation) tells about integer expressions, as linear forms known to be >= 0."""
    if isinstance(cond, n.Unary) and cond.op == "not":
        return facts(cond.operand, params, not holds)
    if isinstance(cond, n.BoolOp):
        if (cond.op == "and") == holds:  # a and b holds, or a or b fails: both parts are known
            return facts(cond.left, params, holds) + facts(cond.right, params, holds)
        return ()
    if not isinstance(cond, n.Compare) or (not holds and len(cond.ops) > 1):
        return ()
    out = []
    for op, a, b in zip(cond.ops, cond.operands, cond.operands[1:]):
        la, lb = linear(a, params), linear(b, params)
        if la is None or lb is None:
            continue
        diff = _add(la, _scale(lb, -1))  # a - b
        op = op if holds else _FLIP[op]
        out += {">=": [diff], ">": [_add(diff, ({}, -1))], "<=": [_scale(diff, -1)],
                "<": [_add(_scale(diff, -1), ({}, -1))], "==": [diff, _scale(diff, -1)], "!=": []}[op]
    return tuple(out)


def implied(target: tuple, known: tuple, ranges: dict) -> bool:
    """Does some fact F >= 0 give target >= 0, with target - F >= 0 over the index ranges?"""
    for fact in known:
        rest = _add(target, _scale(fact, -1))
        low = rest[1]
        for t, c in rest[0].items():
            r = ranges.get(t)
            if r is None:
                break
            low += c * r.lo if c > 0 else c * (r.hi - 1)
        else:
            if low >= 0:
                return True
    return False
