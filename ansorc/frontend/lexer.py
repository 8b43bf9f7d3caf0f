"""Hand-written lexer for expression files: bytes or text in, a list of tokens out.

Newlines end statements, except inside ( ) and [ ], so a long expression can be wrapped in parentheses.
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from .errors import TeSyntaxError

KEYWORDS = frozenset({"param", "input", "output", "tensor", "where", "if", "else", "and", "or", "not"})
OPERATORS = ("//", "**", "<=", ">=", "==", "!=", "+", "-", "*", "/", "%", "<", ">", "=", "(", ")", "[", "]",
             ",", ":", ";")
# Characters people reach for from other languages, with what to write instead.
_HINTS = {"!": "use 'not' or '!='", "&": "use 'and'", "|": "use 'or'", "?": "use 'a if cond else b'",
          "{": "index with [ ]", "}": "index with [ ]", "\\": "wrap a long expression in parentheses",
          ".": "a number needs a digit next to its '.'", "'": "there are no strings", '"': "there are no strings"}


@dataclass(frozen=True)
class Token:
    kind: str      # NAME, INT, FLOAT, OP, NEWLINE, EOF
    text: str
    line: int
    col: int
    value: int | float | None = None


def decode_source(data: bytes, filename: str) -> str:
    """UTF-8 text of a file; a stray byte is an error at its line and column."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        good = data[:e.start].decode("utf-8", errors="replace")
        line = good.count("\n") + 1
        col = len(good) - (good.rfind("\n") + 1) + 1
        raise TeSyntaxError(f"invalid UTF-8 byte 0x{data[e.start]:02x}: this is not a text file "
                            "(expected UTF-8 text)", filename, line, col) from None
    return text


def _is_word_char(c: str) -> bool:
    # '$' and non-ASCII letters are read as part of a word so that the error names the whole bad word.
    return c.isalnum() or c in "_$"


def _check_characters(text: str, filename: str) -> None:
    line, col = 1, 1
    for c in text:
        if c == "\n":
            line, col = line + 1, 1
            continue
        if c not in "\t\r" and unicodedata.category(c) in ("Cc", "Cs", "Cf", "Co", "Cn", "Zl", "Zp"):
            raise TeSyntaxError(f"control or unassigned character U+{ord(c):04X} (expected printable text)",
                                filename, line, col)
        col += 1


def tokenize(text: str, filename: str = "<string>") -> list:
    if text.startswith("\ufeff"):  # a byte-order mark is invisible: columns count without it
        text = text[1:]
    _check_characters(text, filename)
    tokens: list[Token] = []
    depth = 0
    pos, line, line_start, n = 0, 1, 0, len(text)

    def err(message: str, at: int) -> TeSyntaxError:
        return TeSyntaxError(message, filename, line, at - line_start + 1)

    while pos < n:
        c = text[pos]
        col = pos - line_start + 1
        if c == "\n":
            if depth == 0 and tokens and tokens[-1].kind != "NEWLINE":
                tokens.append(Token("NEWLINE", "\\n", line, col))
            pos, line, line_start = pos + 1, line + 1, pos + 1
        elif c in " \t\r":
            pos += 1
        elif c == "#":
            end = text.find("\n", pos)
            pos = n if end < 0 else end
        elif c.isdigit() or (c == "." and pos + 1 < n and text[pos + 1].isdigit()):
            pos = _number(text, pos, line, col, tokens, err)
        elif _is_word_char(c):
            start = pos
            while pos < n and _is_word_char(text[pos]):
                pos += 1
            word = text[start:pos]
            if not (word.isascii() and "$" not in word):
                raise err(f"'{word}' is not a valid name (expected a C identifier: ASCII letters, digits and '_')",
                          start)
            tokens.append(Token("NAME", word, line, col))
        else:
            op = next((o for o in OPERATORS if text.startswith(o, pos)), None)
            if op is None:
                hint = _HINTS.get(c, "expected a name, number, operator or '#' comment")
                raise err(f"unexpected character '{c}' ({hint})", pos)
            depth = depth + 1 if op in "([" else max(depth - 1, 0) if op in ")]" else depth
            tokens.append(Token("OP", op, line, col))
            pos += len(op)
    if tokens and tokens[-1].kind != "NEWLINE":
        tokens.append(Token("NEWLINE", "\\n", line, pos - line_start + 1))
    tokens.append(Token("EOF", "end of file", line, pos - line_start + 1))
    return tokens


def _number(text: str, pos: int, line: int, col: int, tokens: list, err) -> int:
    start, n = pos, len(text)
    while pos < n and text[pos].isdigit():
        pos += 1
    is_float = False
    if pos < n and text[pos] == ".":
        is_float, pos = True, pos + 1
        while pos < n and text[pos].isdigit():
            pos += 1
    if pos < n and text[pos] in "eE":
        exp = pos + 1
        if exp < n and text[exp] in "+-":
            exp += 1
        if exp < n and text[exp].isdigit():
            is_float, pos = True, exp
            while pos < n and text[pos].isdigit():
                pos += 1
    if pos < n and (_is_word_char(text[pos]) or text[pos] == "."):
        end = pos
        while end < n and (_is_word_char(text[end]) or text[end] == "."):
            end += 1
        raise err(f"invalid number '{text[start:end]}' (expected digits, an optional '.' part and exponent)", start)
    literal = text[start:pos]
    if not literal.isascii():  # str.isdigit accepts other scripts' digits; the language is ASCII
        raise err(f"invalid number '{literal}' (expected ASCII digits)", start)
    if len(literal) > 40:
        raise err(f"number '{literal[:20]}...' is too long (expected at most 40 characters)", start)
    if is_float:
        value = float(literal)
        if value > 3.4028234663852886e38:
            raise err(f"float literal {literal} is out of range (expected at most about 3.4e38)", start)
        tokens.append(Token("FLOAT", literal, line, col, value))
    else:
        tokens.append(Token("INT", literal, line, col, int(literal)))
    return pos
