"""Syntax tree of an expression file: frozen dataclasses, every node carrying its 1-based line and column."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Node:
    line: int
    col: int


# ----------------------------------------------------------------------------- expressions

@dataclass(frozen=True)
class Num(Node):
    value: int | float  # a Python float only when the literal had a '.' or an exponent


@dataclass(frozen=True)
class Name(Node):
    id: str


@dataclass(frozen=True)
class TensorRef(Node):
    """`A[i, k + 1]`: one element of a tensor."""
    tensor: str
    indices: tuple


@dataclass(frozen=True)
class FuncCall(Node):
    """`exp(x)`, `sum(x)`, `max(a, b)`, `select(c, a, b)`, `float32(x)`."""
    func: str
    args: tuple


@dataclass(frozen=True)
class Unary(Node):
    op: str  # '-', '+', 'not'
    operand: Node


@dataclass(frozen=True)
class BinOp(Node):
    op: str  # + - * / // % **
    left: Node
    right: Node


@dataclass(frozen=True)
class BoolOp(Node):
    op: str  # 'and', 'or'
    left: Node
    right: Node


@dataclass(frozen=True)
class Compare(Node):
    """A chain `a < b <= c`, meaning `a < b and b <= c` (len(ops) == len(operands) - 1)."""
    ops: tuple
    operands: tuple


@dataclass(frozen=True)
class IfExp(Node):
    """`then if cond else orelse`."""
    cond: Node
    then: Node
    orelse: Node


# ----------------------------------------------------------------------------- statements

@dataclass(frozen=True)
class ParamItem(Node):
    name: str
    value: Node


@dataclass(frozen=True)
class ParamStmt(Node):
    items: tuple  # ParamItem


@dataclass(frozen=True)
class Decl(Node):
    """`input A: float32[N, K]`, `output O: float32[...]`, `tensor P: float32[...]`."""
    kind: str  # 'input' | 'output' | 'tensor'
    name: str
    dtype: str
    dims: tuple  # expressions of size parameters
    dtype_line: int
    dtype_col: int


@dataclass(frozen=True)
class RangeDecl(Node):
    """`where lo <= r < hi` (lo defaults to 0); stored half-open: lo <= r < hi."""
    name: str
    lo: Node | None
    hi: Node
    lo_strict: bool      # `lo < r`: the range starts at lo + 1
    hi_inclusive: bool   # `r <= hi`: the range ends at hi + 1


@dataclass(frozen=True)
class Definition(Node):
    """`[output] T[i, j] = value [where ...]`."""
    is_output: bool
    name: str
    indices: tuple  # Name
    value: Node
    ranges: tuple   # RangeDecl


@dataclass(frozen=True)
class Module(Node):
    statements: tuple


# ----------------------------------------------------------------------------- helpers

def children(node: Node) -> tuple:
    if isinstance(node, TensorRef):
        return node.indices
    if isinstance(node, FuncCall):
        return node.args
    if isinstance(node, Unary):
        return (node.operand,)
    if isinstance(node, (BinOp, BoolOp)):
        return (node.left, node.right)
    if isinstance(node, Compare):
        return node.operands
    if isinstance(node, IfExp):
        return (node.cond, node.then, node.orelse)
    return ()


def walk(node: Node):
    """Pre-order, iteratively (expressions are depth-limited by the parser, but stay safe)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(children(n)))


def start(node: Node) -> Node:
    """The leftmost node of an expression: where its text begins (operators sit at their own token)."""
    while True:
        if isinstance(node, (BinOp, BoolOp)):
            node = node.left
        elif isinstance(node, Compare):
            node = node.operands[0]
        elif isinstance(node, IfExp):
            node = node.then
        else:
            return node


_PREC = {"if": 0, "or": 1, "and": 2, "not": 3, "cmp": 4, "+": 5, "-": 5, "*": 6, "/": 6, "//": 6, "%": 6,
         "neg": 7, "**": 8, "atom": 9}


def unparse(node: Node) -> str:
    """Source-like text of an expression, for error messages."""
    text, _ = _unparse(node)
    return text if len(text) <= 80 else text[:77] + "..."


def _wrap(part: tuple, prec: int) -> str:
    return f"({part[0]})" if part[1] < prec else part[0]


def _unparse(node: Node) -> tuple:
    if isinstance(node, Num):
        return repr(node.value), _PREC["atom"]
    if isinstance(node, Name):
        return node.id, _PREC["atom"]
    if isinstance(node, TensorRef):
        return f"{node.tensor}[{', '.join(_unparse(i)[0] for i in node.indices)}]", _PREC["atom"]
    if isinstance(node, FuncCall):
        return f"{node.func}({', '.join(_unparse(a)[0] for a in node.args)})", _PREC["atom"]
    if isinstance(node, Unary):
        prec = _PREC["not" if node.op == "not" else "neg"]
        sep = " " if node.op == "not" else ""
        return f"{node.op}{sep}{_wrap(_unparse(node.operand), prec)}", prec
    if isinstance(node, (BinOp, BoolOp)):
        prec = _PREC[node.op]
        right_prec = prec if node.op == "**" else prec + 1
        left_prec = prec + 1 if node.op == "**" else prec
        return f"{_wrap(_unparse(node.left), left_prec)} {node.op} {_wrap(_unparse(node.right), right_prec)}", prec
    if isinstance(node, Compare):
        parts = [_wrap(_unparse(node.operands[0]), _PREC["cmp"] + 1)]
        for op, operand in zip(node.ops, node.operands[1:]):
            parts += [op, _wrap(_unparse(operand), _PREC["cmp"] + 1)]
        return " ".join(parts), _PREC["cmp"]
    if isinstance(node, IfExp):
        return (f"{_wrap(_unparse(node.then), 1)} if {_wrap(_unparse(node.cond), 1)} else "
                f"{_wrap(_unparse(node.orelse), 0)}"), _PREC["if"]
    return type(node).__name__, _PREC["atom"]
