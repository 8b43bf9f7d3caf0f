"""Names and integer constants: what a name may be, built-in functions, and size-expression evaluation."""
from __future__ import annotations

from . import nodes as n
from ..ir.program.c_reserved import reserved_reason
from .errors import TeError

TENSOR_DTYPES = ("float32", "float64", "int32", "int64", "int8", "uint8", "int16", "float16", "bfloat16")
SATURATING = {f"saturate_{t}": t for t in ("int8", "uint8", "int16", "int32")}  # saturate_int8(x), ...
INT32_MAX = 2**31 - 1
REDUCERS = ("sum", "max", "min")
# name -> allowed argument counts; max/min take 1 (a reduction) or 2 (element-wise)
FUNCTIONS = {"sum": (1,), "max": (1, 2), "min": (1, 2), "select": (3,), "pow": (2,),
             **{f: (1,) for f in ("exp", "log", "sqrt", "tanh", "sigmoid", "abs", "floor", "ceil")},
             **{t: (1,) for t in TENSOR_DTYPES}, **{f: (1,) for f in SATURATING}}


def check_name(name: str, what: str, filename: str, line: int, col: int) -> None:
    """A name becomes a C identifier in generated code, so it must be a usable one."""
    if name in FUNCTIONS:
        raise TeError(f"'{name}' is a built-in function and cannot name {what} (expected another name)",
                      filename, line, col)
    why = reserved_reason(name)
    if why:
        raise TeError(f"'{name}' is {why} and cannot name {what} (expected another name)", filename, line, col)


def eval_size(node: n.Node, params: dict, filename: str, what: str) -> int:
    """Value of an integer expression over size parameters (a dimension, a default, a `where` bound)."""
    value = _eval(node, params, filename, what)
    if abs(value) > INT32_MAX:
        raise TeError(f"{what} = {value} is too large (expected at most {INT32_MAX} in magnitude)", filename,
                      node.line, node.col)
    return value


def _eval(node: n.Node, params: dict, filename: str, what: str) -> int:
    def fail(message: str, at: n.Node = node) -> TeError:
        return TeError(message, filename, at.line, at.col)

    if isinstance(node, n.Num):
        if isinstance(node.value, float):
            raise fail(f"{what} must be an integer, got {node.value!r} (expected a whole number)")
        return node.value
    if isinstance(node, n.Name):
        if node.id not in params:
            raise fail(f"undeclared size parameter '{node.id}' in {what} (expected a name declared earlier with "
                       f"'param {node.id} = ...')")
        return params[node.id]
    if isinstance(node, n.Unary) and node.op == "-":
        return -_eval(node.operand, params, filename, what)
    if isinstance(node, n.BinOp):
        a = _eval(node.left, params, filename, what)
        b = _eval(node.right, params, filename, what)
        if node.op == "/":
            raise fail(f"'/' in {what} (expected '//' for integer division)")
        if node.op in ("//", "%") and b == 0:
            raise fail(f"division by zero in {what} (expected a nonzero divisor)")
        if node.op == "**" and (b < 0 or (abs(a) > 1 and b * max(abs(a).bit_length(), 1) > 64)):
            raise fail(f"{a} ** {b} in {what} is out of range (expected a non-negative, small power)")
        result = {"+": a + b, "-": a - b, "*": a * b, "//": a // b if b else 0, "%": a % b if b else 0,
                  "**": a ** b if node.op == "**" else 0}[node.op]
        if abs(result) > 2**62:  # keep intermediates small; the final check is against int32
            raise fail(f"{what} overflows (expected values below 2**31)")
        return result
    raise fail(f"'{n.unparse(node)}' cannot be used in {what} (expected an integer expression of numbers and size "
               "parameters with + - * // % **)")
