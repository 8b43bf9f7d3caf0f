"""Lowering one checked definition to a te compute: typing, bounds proofs, and lifting nested reductions.

Values are IR expressions, or plain Python numbers for constants ("weak" literals) so that `0.0` takes the
float type of the other operand and constant index arithmetic folds.
"""
from __future__ import annotations

import inspect
import math

from ..ir.program import expr as ir
from ..ir.program import te
from ..ir.program.bounds import BoundsError
from . import nodes as n
from .consts import INT32_MAX, SATURATING, TENSOR_DTYPES
from .errors import TeError
from .indices import IndexAnalysis, facts, implied, interval, is_reduction, linear

_ARITH = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": lambda a, b: a / b,
          "//": lambda a, b: a // b, "%": lambda a, b: a % b}
_COMPARE = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
            ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}
# the conversions that never lose a value, made implicitly where a declared type asks (others need a cast)
_WIDENS = {"int8": ("int16", "int32", "int64"), "uint8": ("int16", "int32", "int64"), "int16": ("int32", "int64"),
           "int32": ("int64",), "float16": ("float32", "float64"), "bfloat16": ("float32", "float64"),
           "float32": ("float64",)}


def kind(v) -> str:
    """'bool', 'int' or 'float' of an IR expression or a Python constant."""
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    return "bool" if v.dtype == "bool" else "float" if ir.is_float(v.dtype) else "int"


def type_name(v) -> str:
    return v.dtype if isinstance(v, ir.Expr) else {"int": "an integer", "float": "a float", "bool": "a boolean"}[
        kind(v)] + " constant"


def _identity(op: str, a, b):
    """x + 0, x - 0, x * 1, 1 * x, 0 + x, x // 1 are x: keeps `h*S + rh` a plain `h + rh` when S = 1."""
    for x, c, ops in ((a, b, ("+", "-", "*", "/", "//")), (b, a, ("+", "*"))):
        if isinstance(x, ir.Expr) and not isinstance(c, (ir.Expr, bool)) and op in ops and \
                not (kind(x) == "int" and isinstance(c, float)):
            if c == (0 if op in ("+", "-") else 1) and (op != "/" or kind(x) == "float"):
                return x
    return None


def _span(lo: int, hi: int) -> str:
    return str(lo) if lo == hi else f"{lo}..{hi}"


def with_signature(body, names: list):
    """A te.compute function whose parameters are the file's index names (te names axes after them)."""
    def fcompute(*_axes):
        return body
    fcompute.__signature__ = inspect.Signature(
        [inspect.Parameter(x, inspect.Parameter.POSITIONAL_OR_KEYWORD) for x in names])
    return fcompute


class Lowering:
    def __init__(self, d: n.Definition, info: IndexAnalysis, params: dict, tensors: dict, taken: set,
                 filename: str):
        self.d, self.info, self.params, self.tensors = d, info, params, tensors
        self.taken, self.filename = taken, filename
        self.lifted: list = []  # te tensors created for reductions nested inside expressions
        self.lost_guards = 0    # > 0 while lowering a lifted reduction that sat inside a condition

    def fail(self, message: str, at: n.Node) -> TeError:
        return TeError(message, self.filename, at.line, at.col)

    # ------------------------------------------------------------------ the definition
    def compute(self, declared_dtype: str | None) -> te.Tensor:
        d, info = self.d, self.info
        shape = tuple(info.ranges[x].hi for x in info.left)
        if math.prod(shape) > INT32_MAX:
            raise self.fail(f"{d.name} has {math.prod(shape)} elements (expected at most {INT32_MAX})", d)
        root = d.value
        if is_reduction(root):
            source = self.numeric(self.lower(root.args[0], ()), root, f"the argument of {root.func}()")
            dtype = self.result_dtype(source, declared_dtype, root)
            body = self.reduce(root, self.materialize(source, dtype, root))  # accumulate in the result's type
        else:
            value = self.lower(root, ())
            dtype = self.result_dtype(value, declared_dtype, root)
            body = self.materialize(value, dtype, root)
        return self.te_compute(shape, body, list(info.left), d.name, d)

    def result_dtype(self, value, declared: str | None, at: n.Node) -> str:
        k = kind(value)
        if k == "bool":
            raise self.fail(f"{self.d.name} would hold a condition (expected a number; use select(cond, 1.0, "
                            "0.0))", at)
        weak = not isinstance(value, ir.Expr)
        own = value.dtype if not weak else "float32" if k == "float" else "int32"
        if declared is None:
            return own
        # int -> float and widening are implicit; float -> int and narrowing need a cast (a constant adapts)
        same_kind = ir.is_float(own) == ir.is_float(declared)
        if (k == "float" and not ir.is_float(declared)) or \
                (not weak and same_kind and own != declared and declared not in _WIDENS.get(own, ())):
            raise self.fail(f"type mismatch: {self.d.name} is declared {declared} but its value is {own} "
                            f"(expected a value of type {declared}; convert with {declared}(...))", at)
        return declared

    def materialize(self, value, dtype: str, at: n.Node) -> ir.Expr:
        if isinstance(value, ir.Expr):
            return value.astype(dtype)
        try:
            return ir.const(int(value) if not ir.is_float(dtype) else value, dtype)
        except ValueError as e:   # a constant outside a narrow type
            raise self.fail(f"type mismatch: {e}", at) from None

    def te_compute(self, shape: tuple, body, names: list, name: str, at: n.Node) -> te.Tensor:
        try:
            return te.compute(shape, with_signature(body, names), name=name)
        except BoundsError as e:  # a subscript this file's checker could not judge (non-affine, a tensor value)
            raise self.fail(f"index out of range: {e}", at) from None
        except (TypeError, ValueError, IndexError) as e:  # the IR's own checks, reported at the definition
            raise self.fail(f"cannot build {name}: {e} (expected a computation the IR accepts)", at) from None

    def reduce(self, red: n.FuncCall, source) -> ir.Expr:
        axes = [te.reduce_axis((0, self.info.ranges[x].hi - self.info.ranges[x].lo), name=x)
                for x in self.info.reduce_axes[id(red)]]
        try:
            return getattr(te, red.func)(ir.as_expr(source), axis=axes)
        except ValueError as e:   # a 16-bit float source: the hint says how to accumulate it
            raise self.fail(f"type mismatch: {e}", red) from None

    def lift(self, red: n.FuncCall, known: tuple) -> ir.Expr:
        """A reduction inside a larger expression becomes its own compute over the indices it still uses."""
        # computed on its own, for every point, so the conditions around the reduction no longer guard it
        self.lost_guards += bool(known)
        source = self.numeric(self.lower(red.args[0], ()), red, f"the argument of {red.func}()")
        self.lost_guards -= bool(known)
        body = self.reduce(red, source)
        own = set(self.info.reduce_axes[id(red)])
        used = ir.free_vars(ir.as_expr(source)) - own
        order = list(self.info.left) + list(self.info.ranges)
        spatial = sorted(used, key=order.index)
        name = self.fresh(f"{self.d.name}_{red.func}")
        if not spatial:  # a scalar reduction: a one-element tensor, read at 0
            dummy = self.fresh("z")
            tensor = self.te_compute((1,), body, [dummy], name, red)
            self.lifted.append(tensor)
            return tensor[0]
        shape = tuple(self.info.ranges[x].hi - self.info.ranges[x].lo for x in spatial)
        tensor = self.te_compute(shape, body, spatial, name, red)
        self.lifted.append(tensor)
        return tensor[tuple(ir.Var(x) for x in spatial)]

    def fresh(self, base: str) -> str:
        k, name = 0, base
        while name in self.taken:
            k, name = k + 1, f"{base}{k + 1}"
        self.taken.add(name)
        return name

    # ------------------------------------------------------------------ expressions
    def numeric(self, v, at: n.Node, what: str):
        if kind(v) == "bool":
            raise self.fail(f"type mismatch: {what} is a condition (expected a number)", at)
        return v

    def condition(self, v, at: n.Node, what: str):
        if kind(v) != "bool":
            raise self.fail(f"type mismatch: {what} is {type_name(v)} (expected a condition such as a < b)", at)
        return v

    def lower(self, node: n.Node, known: tuple):
        try:
            return self._lower(node, known)
        except (TypeError, ValueError, ZeroDivisionError, OverflowError) as e:
            raise self.fail(f"invalid expression '{n.unparse(node)}': {e} (expected a computable value)", node) \
                from None

    def _lower(self, node: n.Node, known: tuple):
        if isinstance(node, n.Num):
            if isinstance(node.value, int) and abs(node.value) > INT32_MAX:
                raise self.fail(f"integer {node.value} does not fit in int32 (expected |value| <= {INT32_MAX})",
                                node)
            return node.value
        if isinstance(node, n.Name):
            if node.id in self.params:
                return self.params[node.id]
            r = self.info.ranges[node.id]
            return ir.Var(node.id) + r.lo if r.lo else ir.Var(node.id)
        if isinstance(node, n.TensorRef):
            return self.read(node, known)
        if isinstance(node, n.Unary):
            v = self.lower(node.operand, known)
            if node.op == "not":
                v = self.condition(v, node.operand, "the operand of 'not'")
                return (not v) if isinstance(v, bool) else ir.logic("!", v)
            return -self.numeric(v, node.operand, "the operand of '-'")
        if isinstance(node, n.BinOp):
            return self.binop(node, known)
        if isinstance(node, n.BoolOp):
            a = self.condition(self.lower(node.left, known), node.left, f"the left operand of '{node.op}'")
            b = self.condition(self.lower(node.right, known), node.right, f"the right operand of '{node.op}'")
            if isinstance(a, bool) and isinstance(b, bool):
                return (a and b) if node.op == "and" else (a or b)
            return ir.logic("&&" if node.op == "and" else "||", a, b)
        if isinstance(node, n.Compare):
            return self.compare(node, known)
        if isinstance(node, n.IfExp):
            return self.select(node, node.cond, node.then, node.orelse, known)
        if isinstance(node, n.FuncCall):
            return self.call(node, known)
        raise self.fail(f"unexpected '{n.unparse(node)}' in an expression", node)

    def binop(self, node: n.BinOp, known: tuple):
        a = self.numeric(self.lower(node.left, known), node.left, f"the left operand of '{node.op}'")
        b = self.numeric(self.lower(node.right, known), node.right, f"the right operand of '{node.op}'")
        ka, kb = kind(a), kind(b)
        if node.op == "**":
            return self.power(node, a, b)
        if node.op in ("//", "%") and "float" in (ka, kb):
            raise self.fail(f"type mismatch: '{node.op}' takes integers, got {type_name(a)} and {type_name(b)} "
                            "(expected integer operands; use '/' for floats)", node)
        if node.op == "/" and ka == kb == "int":
            raise self.fail("type mismatch: '/' of two integers (expected '//' for integer division, or a "
                            "float operand such as float32(x))", node)
        if node.op in ("/", "//", "%") and not isinstance(b, ir.Expr) and b == 0:
            raise self.fail("division by zero (expected a nonzero divisor)", node.right)
        result = _identity(node.op, a, b)
        if result is None:
            result = _ARITH[node.op](a, b)
        if kind(result) == "int" and not isinstance(result, ir.Expr) and abs(result) > INT32_MAX:
            raise self.fail(f"constant {result} does not fit in int32 (expected |value| <= {INT32_MAX})", node)
        if kind(result) == "float" and not isinstance(result, ir.Expr) and not abs(result) <= 3.4028234663852886e38:
            raise self.fail(f"constant {result} overflows float32 (expected a finite value)", node)
        return result

    def power(self, node: n.BinOp, a, b):
        if not isinstance(b, ir.Expr) and kind(b) == "int" and 0 <= b <= 4 and isinstance(a, ir.Expr):
            if b == 0:
                return ir.const(1, a.dtype)
            result = a  # small integer powers multiply out: x**2 is x*x, not a call to pow()
            for _ in range(b - 1):
                result = result * a
            return result
        if isinstance(a, ir.Expr) or isinstance(b, ir.Expr):
            return te.pow(a, b)
        if kind(a) == kind(b) == "int" and b >= 0 and (abs(a) <= 1 or b * abs(a).bit_length() <= 62):
            return a ** b
        return math.pow(a, b)  # raises on overflow and on a negative base with a fractional power

    def compare(self, node: n.Compare, known: tuple):
        values = [self.numeric(self.lower(x, known), x, "an operand of a comparison") for x in node.operands]
        parts = []  # a < b < c means a < b and b < c; constant links fold away
        for op, a, b in zip(node.ops, values, values[1:]):
            if isinstance(a, ir.Expr) or isinstance(b, ir.Expr):
                parts.append(ir.compare(op, a, b))
            elif not _COMPARE[op](a, b):
                return False
        result = parts[0] if parts else True
        for c in parts[1:]:
            result = ir.logic("&&", result, c)
        return result

    def select(self, node: n.Node, cond: n.Node, then: n.Node, orelse: n.Node, known: tuple):
        c = self.condition(self.lower(cond, known), cond, "the condition")
        # each branch knows its condition's verdict: that is what lets a padding read go out of bounds
        t = self.lower(then, known + facts(cond, self.params, True))
        f = self.lower(orelse, known + facts(cond, self.params, False))
        if (kind(t) == "bool") != (kind(f) == "bool"):
            number = t if kind(f) == "bool" else f
            raise self.fail(f"type mismatch: one branch is a condition and the other {type_name(number)} "
                            "(expected two numbers)", node)
        if isinstance(c, bool):
            return t if c else f
        return ir.select(c, t, f)

    def call(self, node: n.FuncCall, known: tuple):
        f, args = node.func, node.args
        if is_reduction(node):
            return self.lift(node, known)
        if f == "select":
            return self.select(node, *args, known)
        values = [self.lower(a, known) for a in args]
        if f in TENSOR_DTYPES:
            v = values[0]
            if not isinstance(v, ir.Expr):
                return ir.const(v if ir.is_float(f) else int(v), f)
            return v.astype(f)
        if f in SATURATING:
            v = self.numeric(values[0], args[0], f"the argument of {f}()")
            return te.saturate_cast(v if isinstance(v, ir.Expr) else ir.as_expr(v), SATURATING[f])
        for a, v in zip(args, values):
            self.numeric(v, a, f"the argument of {f}()")
        if f in ("max", "min"):
            if not any(isinstance(v, ir.Expr) for v in values):
                return (max if f == "max" else min)(*values)
            return ir.binary(f, *values)
        return getattr(te, f)(*values)

    def read(self, node: n.TensorRef, known: tuple) -> ir.Expr:
        tensor = self.tensors[node.tensor]
        indices = []
        for p, idx in enumerate(node.indices):
            v = self.lower(idx, known)
            if kind(v) != "int":
                raise self.fail(f"type mismatch: index {p} of {node.tensor} is {type_name(v)} (expected an "
                                "integer expression)", n.start(idx))
            self.check_bounds(node, p, idx, tensor.shape[p], known)
            indices.append(v)
        return tensor[tuple(indices)]

    def check_bounds(self, ref: n.TensorRef, p: int, idx: n.Node, size: int, known: tuple) -> None:
        """An error when some point reads outside the tensor: the index's exact interval leaves 0..size-1 and no
        enclosing condition rules that side out."""
        iv = interval(idx, self.info.ranges, self.params)
        if iv is None:
            return
        always_out = iv.hi < 0 or iv.lo >= size
        if not always_out:
            if not iv.exact:
                return
            lin = linear(idx, self.params)
            low_ok = iv.lo >= 0 or (lin is not None and implied(lin, known, self.info.ranges))
            high_ok = iv.hi < size or (lin is not None and implied(
                ({t: -c for t, c in lin[0].items()}, size - 1 - lin[1]), known, self.info.ranges))
            if low_ok and high_ok:
                return
        text = n.unparse(idx)
        if always_out:
            hint = ""
        elif self.lost_guards:
            hint = ("; a reduction inside an expression is computed for every point, outside the condition around "
                    "it: move the condition into the reduction or pad in a tensor of its own")
        elif known:
            hint = f"; the enclosing condition does not keep it in range, as 0 <= {text} < {size} would"
        else:
            hint = f"; for padding, read it as '... if 0 <= {text} < {size} else 0.0'"
        raise self.fail(f"index out of range: {ref.tensor}[{', '.join(n.unparse(i) for i in ref.indices)}] "
                        f"dimension {p} takes values {_span(iv.lo, iv.hi)} (expected 0..{size - 1}{hint})",
                        n.start(idx))
