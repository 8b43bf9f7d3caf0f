"""Recursive-descent parser: tokens in, a `Module` syntax tree out. Only the grammar is checked here."""
from __future__ import annotations

from . import nodes as n
from .errors import TeSyntaxError
from .lexer import KEYWORDS, Token, tokenize

MAX_NESTING = 40   # parser recursion: parentheses, calls, unary operators
MAX_DEPTH = 100    # height of an expression tree, which later passes walk recursively
COMPARE_OPS = ("<", "<=", ">", ">=", "==", "!=")


def parse(text: str, filename: str = "<string>") -> n.Module:
    return _Parser(tokenize(text, filename), filename).module()


def _describe(tok: Token) -> str:
    if tok.kind == "NAME":
        return f"'{tok.text}'"
    if tok.kind in ("INT", "FLOAT"):
        return f"number {tok.text}"
    if tok.kind == "NEWLINE":
        return "end of line"
    if tok.kind == "EOF":
        return "end of file"
    return f"'{tok.text}'"


class _Parser:
    def __init__(self, tokens: list, filename: str):
        self.tokens, self.filename, self.pos, self.nesting = tokens, filename, 0, 0

    # ------------------------------------------------------------------ token helpers
    @property
    def tok(self) -> Token:
        return self.tokens[self.pos]

    def advance(self) -> Token:
        tok = self.tokens[self.pos]
        if tok.kind != "EOF":
            self.pos += 1
        return tok

    def at(self, text: str) -> bool:
        return self.tok.kind in ("OP", "NAME") and self.tok.text == text

    def accept(self, text: str) -> Token | None:
        return self.advance() if self.at(text) else None

    def error(self, expected: str, tok: Token | None = None) -> TeSyntaxError:
        tok = tok or self.tok
        return TeSyntaxError(f"unexpected {_describe(tok)} (expected {expected})", self.filename, tok.line, tok.col)

    def expect(self, text: str, expected: str | None = None) -> Token:
        if not self.at(text):
            raise self.error(expected or f"'{text}'")
        return self.advance()

    def name(self, what: str) -> Token:
        tok = self.tok
        if tok.kind != "NAME" or tok.text in KEYWORDS:
            raise self.error(what)
        return self.advance()

    def deeper(self):
        self.nesting += 1
        if self.nesting > MAX_NESTING:
            raise TeSyntaxError(f"expression nested too deeply (expected at most {MAX_NESTING} levels)",
                                self.filename, self.tok.line, self.tok.col)

    # ------------------------------------------------------------------ statements
    def module(self) -> n.Module:
        statements = []
        while self.tok.kind != "EOF":
            if self.tok.kind == "NEWLINE" or self.at(";"):
                self.advance()
                continue
            statements.append(self.statement())
            if not (self.tok.kind in ("NEWLINE", "EOF") or self.at(";")):
                raise self.error("end of line or ';' after the statement")
        if not statements:
            raise TeSyntaxError("empty file (expected param, input, tensor and output statements)",
                                self.filename, 1, 1)
        return n.Module(1, 1, tuple(statements))

    def statement(self):
        tok = self.tok
        if self.accept("param"):
            items = [self.param_item()]
            while self.accept(","):
                items.append(self.param_item())
            return n.ParamStmt(tok.line, tok.col, tuple(items))
        if self.at("input") or self.at("tensor"):
            self.advance()
            return self.declaration(tok)
        is_output = self.accept("output") is not None
        if is_output or (tok.kind == "NAME" and tok.text not in KEYWORDS):
            name = self.name("a tensor name")
            if is_output and self.at(":"):
                return self.declaration(tok, name)
            return self.definition(tok, name, is_output)
        raise self.error("a statement: param, input, tensor, output or 'T[i, ...] = ...'")

    def param_item(self) -> n.ParamItem:
        name = self.name("a parameter name")
        self.expect("=", "'=' and the parameter's default value")
        return n.ParamItem(name.line, name.col, name.text, self.expr_tree())

    def declaration(self, start: Token, name: Token | None = None) -> n.Decl:
        name = name or self.name("a tensor name")
        self.expect(":", "':' and a type such as float32[N, M]")
        dtype = self.name("a dtype such as float32")
        self.expect("[", "'[' and the tensor's dimensions")
        dims = [self.expr_tree()]
        while self.accept(","):
            dims.append(self.expr_tree())
        self.expect("]", "',' or ']' after a dimension")
        return n.Decl(start.line, start.col, start.text, name.text, dtype.text, tuple(dims), dtype.line, dtype.col)

    def definition(self, start: Token, name: Token, is_output: bool) -> n.Definition:
        self.expect("[", f"'[' and the indices of {name.text}, as in {name.text}[i, j] = ...")
        indices = []
        while True:
            tok = self.tok
            if tok.kind != "NAME" or tok.text in KEYWORDS:
                raise self.error("an index name: the left side takes plain names such as [i, j]")
            indices.append(n.Name(tok.line, tok.col, self.advance().text))
            if not self.accept(","):
                break
        self.expect("]", "',' or ']': the left side takes plain index names such as [i, j]")
        self.expect("=", "'=' and the tensor's value")
        value = self.expr_tree()
        ranges = []
        if self.accept("where"):
            ranges.append(self.range_decl())
            while self.accept(","):
                ranges.append(self.range_decl())
        return n.Definition(start.line, start.col, is_output, name.text, tuple(indices), value, tuple(ranges))

    def range_decl(self) -> n.RangeDecl:
        first = self.arith()
        op1 = self.range_op()
        second = self.arith()
        if self.at("<") or self.at("<="):
            op2 = self.range_op()
            third = self.arith()
            if not isinstance(second, n.Name):
                raise self.error_at(second, "an index name between the bounds, as in 0 <= r < 3")
            return n.RangeDecl(second.line, second.col, second.id, first, third, op1 == "<", op2 == "<=")
        if not isinstance(first, n.Name):
            raise self.error_at(first, "an index name before '<', as in r < 3")
        return n.RangeDecl(first.line, first.col, first.id, None, second, False, op1 == "<=")

    def range_op(self) -> str:
        if not (self.at("<") or self.at("<=")):
            raise self.error("'<' or '<=' in a range such as 0 <= r < 3")
        return self.advance().text

    def error_at(self, node: n.Node, expected: str) -> TeSyntaxError:
        return TeSyntaxError(f"unexpected '{n.unparse(node)}' (expected {expected})", self.filename, node.line,
                             node.col)

    # ------------------------------------------------------------------ expressions
    def expr_tree(self) -> n.Node:
        node = self.expr()
        _check_depth(node, self.filename)
        return node

    def expr(self) -> n.Node:
        self.deeper()
        node = self.or_expr()
        tok = self.accept("if")
        if tok:
            cond = self.or_expr()
            self.expect("else", "'else' and the value when the condition is false")
            node = n.IfExp(tok.line, tok.col, cond, node, self.expr())
        self.nesting -= 1
        return node

    def or_expr(self) -> n.Node:
        node = self.and_expr()
        while self.at("or"):
            tok = self.advance()
            node = n.BoolOp(tok.line, tok.col, "or", node, self.and_expr())
        return node

    def and_expr(self) -> n.Node:
        node = self.not_expr()
        while self.at("and"):
            tok = self.advance()
            node = n.BoolOp(tok.line, tok.col, "and", node, self.not_expr())
        return node

    def not_expr(self) -> n.Node:
        tok = self.accept("not")
        if tok is None:
            return self.comparison()
        self.deeper()
        node = n.Unary(tok.line, tok.col, "not", self.not_expr())
        self.nesting -= 1
        return node

    def comparison(self) -> n.Node:
        first = self.arith()
        ops, operands = [], [first]
        while self.tok.kind == "OP" and self.tok.text in COMPARE_OPS:
            ops.append(self.advance().text)
            operands.append(self.arith())
        if not ops:
            return first
        return n.Compare(first.line, first.col, tuple(ops), tuple(operands))

    def arith(self) -> n.Node:
        node = self.term()
        while self.at("+") or self.at("-"):
            tok = self.advance()
            node = n.BinOp(tok.line, tok.col, tok.text, node, self.term())
        return node

    def term(self) -> n.Node:
        node = self.unary()
        while self.tok.kind == "OP" and self.tok.text in ("*", "/", "//", "%"):
            tok = self.advance()
            node = n.BinOp(tok.line, tok.col, tok.text, node, self.unary())
        return node

    def unary(self) -> n.Node:
        if self.at("-") or self.at("+"):
            tok = self.advance()
            self.deeper()
            operand = self.unary()
            self.nesting -= 1
            if isinstance(operand, n.Num) and tok.text == "-":  # fold, so that -1 is a literal
                return n.Num(tok.line, tok.col, -operand.value)
            return operand if tok.text == "+" else n.Unary(tok.line, tok.col, "-", operand)
        return self.power()

    def power(self) -> n.Node:
        base = self.primary()
        tok = self.accept("**")
        if tok is None:
            return base
        self.deeper()
        exponent = self.unary()  # right-associative, and binds tighter than a unary minus on its left
        self.nesting -= 1
        return n.BinOp(tok.line, tok.col, "**", base, exponent)

    def primary(self) -> n.Node:
        tok = self.tok
        if tok.kind in ("INT", "FLOAT"):
            self.advance()
            return n.Num(tok.line, tok.col, tok.value)
        if self.accept("("):
            node = self.expr()
            self.expect(")", "')' to close the '(' at " f"{tok.line}:{tok.col}")
            return node
        if tok.kind == "NAME" and tok.text not in KEYWORDS:
            self.advance()
            if self.accept("["):
                return n.TensorRef(tok.line, tok.col, tok.text, self.arguments("]", tok))
            if self.accept("("):
                return n.FuncCall(tok.line, tok.col, tok.text, self.arguments(")", tok))
            return n.Name(tok.line, tok.col, tok.text)
        raise self.error("a number, a name, a tensor element such as A[i, j], a call or '('")

    def arguments(self, close: str, opener: Token) -> tuple:
        args = []
        if self.at(close):
            if close == "]":
                raise self.error(f"an index inside {opener.text}[ ]")
            self.advance()
            return ()
        while True:
            args.append(self.expr())
            if not self.accept(","):
                break
        self.expect(close, f"',' or '{close}' to close the one at {opener.line}:{opener.col + len(opener.text)}")
        return tuple(args)


def _check_depth(root: n.Node, filename: str) -> None:
    stack = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise TeSyntaxError(f"expression too deeply nested (expected at most {MAX_DEPTH} levels; split it into "
                                "intermediate tensors)", filename, node.line, node.col)
        stack.extend((c, depth + 1) for c in n.children(node))
