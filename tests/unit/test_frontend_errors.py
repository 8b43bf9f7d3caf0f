"""Every kind of error in an expression file: one line `file:line:col: error: what (expected what)`, pointing
at the offending place."""
from __future__ import annotations

import re

import pytest

from ansorc.frontend import TeError, TeSyntaxError, load, parse_defines, parse_text

HEAD = "param N = 8, K = 4\ninput A: float32[N, K]\ninput B: float32[K, N]\n"  # statements below start on line 4

# (kind, text, line, col, fragment of the message)
CASES = [
    # syntax
    ("syntax: missing operand", HEAD + "output C[i, j] = A[i, j] *\n", 4, 27, "unexpected end of line"),
    ("syntax: missing comma", HEAD + "output C[i j] = A[i, j]\n", 4, 12, "expected ',' or ']'"),
    ("syntax: expression on the left", HEAD + "output C[i + 1] = A[i, 0]\n", 4, 12, "plain index names"),
    ("syntax: unclosed bracket", "input A: float32[4\noutput C[i] = A[i]\n", 2, 1, "expected ',' or ']'"),
    ("syntax: unclosed paren", "input A: float32[4]\noutput C[i] = (A[i]\n", 3, 1, "')' to close"),
    ("syntax: C operator", "input A: float32[4]\noutput C[i] = A[i] if i > 0 && i < 3 else 0.0\n", 2, 29,
     "use 'and'"),
    ("syntax: missing else", "input A: float32[4]\noutput C[i] = A[i] if i > 0\n", 2, 28, "'else'"),
    ("syntax: bad number", "input A: float32[4]\noutput C[i] = A[i] * 2x\n", 2, 22, "invalid number '2x'"),
    ("syntax: keyword as name", "input if: float32[4]\n", 1, 7, "unexpected 'if'"),
    ("syntax: garbage statement", "input A: float32[4]\n= 3\n", 2, 1, "expected a statement"),
    ("syntax: two statements on a line", "input A: float32[4] input B: float32[4]\n", 1, 21,
     "end of line or ';'"),
    ("syntax: empty brackets", "input A: float32[4]\noutput C[i] = A[]\n", 2, 17, "an index inside A[ ]"),
    ("syntax: nested too deeply", "input A: float32[4]\noutput C[i] = " + "(" * 60 + "A[i]" + ")" * 60 + "\n", 2,
     55, "nested too deeply"),
    ("syntax: expression too long", "input A: float32[4]\noutput C[i] = " + " + ".join(["A[i]"] * 150) + "\n", 2,
     374, "too deeply nested"),
    # names
    ("unknown tensor", HEAD + "output C[i, j] = sum(A[i, k] * Z[k, j])\n", 4, 32, "unknown tensor 'Z'"),
    ("unknown tensor: a parameter", HEAD + "output C[i] = N[i]\n", 4, 15, "'N': a size parameter"),
    ("tensor without indices", HEAD + "output C[i, k] = A + 1.0\n", 4, 18, "tensor 'A' used without indices"),
    ("undeclared size parameter: dimension", HEAD + "input Z: float32[N, Q]\noutput C[i] = Z[i, 0]\n", 4, 21,
     "undeclared size parameter 'Q'"),
    ("undeclared size parameter: default", "param M = Q + 1\n", 1, 11, "undeclared size parameter 'Q'"),
    ("undeclared size parameter: used later", "param M = Q\nparam Q = 3\n", 1, 11, "undeclared size parameter"),
    ("free index", HEAD + "output C[i] = A[i, q]\n", 4, 20, "index 'q' is not on the left side"),
    ("C keyword as tensor name", "input int: float32[4]\noutput C[i] = int[i]\n", 1, 1, "'int' is a C keyword"),
    ("C keyword as index", "input A: float32[4]\noutput C[for] = A[for]\n", 2, 10, "'for' is a C keyword"),
    ("invalid identifier", "input x$y: float32[4]\n", 1, 7, "'x$y' is not a valid name"),
    ("non-ASCII identifier", "input café: float32[4]\n", 1, 7, "not a valid name"),
    ("reserved identifier", "input __A: float32[4]\n", 1, 1, "reserved in C"),
    ("builtin as name", "input exp: float32[4]\n", 1, 1, "built-in function"),
    ("index named like a tensor", HEAD + "output C[A, k] = B[k, A]\n", 4, 10, "has the name of a tensor"),
    ("duplicate input", HEAD + "input A: float32[N]\noutput C[i] = A[i, 0]\n", 4, 1, "duplicate definition of 'A'"),
    ("duplicate definition", HEAD + "output C[i, k] = A[i, k]\nC[i, k] = A[i, k]\n", 5, 1, "duplicate definition"),
    ("duplicate parameter", HEAD + "param N = 3\n", 4, 7, "duplicate definition of 'N' (first at 1:7"),
    ("assignment to an input", HEAD + "A[i, k] = B[k, i]\noutput C[i] = A[i, 0]\n", 4, 1, "duplicate definition"),
    ("duplicate index on the left", HEAD + "output C[i, i] = A[i, i]\n", 4, 13, "appears twice"),
    # structure
    ("cyclic definition: direct", HEAD + "output C[i, k] = C[i, k] + A[i, k]\n", 4, 18, "cyclic definition: C -> C"),
    ("cyclic definition: indirect", HEAD + "X[i, k] = Y[i, k]\nY[i, k] = X[i, k]\noutput C[i, k] = Y[i, k]\n", 5,
     11, "cyclic definition: X -> Y -> X"),
    ("computed but unused", HEAD + "T[i, k] = A[i, k]\noutput C[i, k] = A[i, k]\n", 4, 1, "never used"),
    ("no output", HEAD + "C[i, k] = A[i, k]\n", 1, 1, "no output"),
    ("declared but not defined", HEAD + "output C: float32[N]\n", 4, 1, "declared but never defined"),
    ("empty file", "   # nothing here\n\n", 1, 1, "empty file"),
    ("empty text", "", 1, 1, "empty file"),
    # shapes and ranges
    ("shape mismatch between uses", HEAD + "output C[i, j] = sum(A[i, k] * A[k, j])\n", 4, 34, "shape mismatch"),
    ("shape mismatch with declaration", HEAD + "output C: float32[N, 5]\nC[i, j] = sum(A[i, k] * B[k, j])\n", 5,
     30, "shape mismatch: index 'j'"),
    ("wrong number of indices on the left", HEAD + "output C: float32[N]\nC[i, k] = A[i, k]\n", 5, 1,
     "declared with 1 dimensions but defined with 2"),
    ("index out of range", HEAD + "output C: float32[N]\nC[i] = A[i + 1, 0]\n", 5, 10, "index out of range"),
    ("index out of range: constant", HEAD + "output C[i] = A[i, K]\n", 4, 20, "takes values 4 (expected 0..3"),
    ("index out of range: negative", HEAD + "output C[i] = sum(A[i, k - 1] * B[k, i])\n", 4, 24, "-1..2"),
    ("index out of range even when guarded", HEAD + "output C[i] = A[i, K + 1] if i > 0 else 0.0\n", 4, 20,
     "index out of range"),
    ("index out of range: guard too loose", HEAD + "output C: float32[N + 2]\nC[i] = A[i - 1, 0] if 1 <= i < N + 2 "
     "else 0.0\n", 5, 10, "the enclosing condition does not keep it in range"),
    ("index out of range: guard on the other side", HEAD + "output C: float32[N]\n"
     "C[i] = A[i + 1, 0] if i > 0 else 0.0\n", 5, 10, "takes values 1..8"),
    ("index out of range: reduction lifted out of its guard", HEAD + "output C: float32[N]\n"
     "C[i] = A[i - 1, 0] * max(A[i - 1, q]) if i >= 1 else 0.0\n", 5, 28, "outside the condition around it"),
    ("range cannot be inferred", HEAD + "output C[i] = A[2 * i, 0]\n", 4, 10, "cannot infer the range of index 'i'"),
    ("range of an unused left index", HEAD + "output C[i, j] = A[i, 0]\n", 4, 13, "does not use it"),
    ("defines that are not a dict", HEAD + "output C[i, k] = A[i, k]\n", 1, 1, "defines is a list (expected a dict"),
    ("reduction index on the left side", HEAD + "output C[i, k] = sum(A[i, k])\n", 4, 18, "nothing to reduce"),
    ("index reduced by two reductions", HEAD + "output C[i] = sum(A[i, k]) + sum(B[k, i])\n", 4, 36,
     "two separate reductions"),
    ("where: empty range", HEAD + "output C[i] = max(A[i, r]) where r < 0\n", 4, 34, "is empty"),
    ("where: unused index", HEAD + "output C[i] = A[i, 0] where q < 3\n", 4, 29, "does not use"),
    ("where: left index not from 0", HEAD + "output C[i] = A[i, 0] where 1 <= i < 8\n", 4, 34, "must start at 0"),
    ("where: disagrees with a use", HEAD + "output C[i] = sum(A[i, k]) where k < 3\n", 4, 24, "shape mismatch"),
    ("zero dimension", "param N = 0\ninput A: float32[N]\n", 2, 18, "dimension of A is 0"),
    ("negative dimension", "param N = 3\ninput A: float32[N - 5]\n", 2, 20, "dimension of A is -2"),
    ("tensor too large", "input A: float32[65536, 65536]\n", 1, 1, "elements"),
    ("non-integer size parameter", "param N = 2.5\ninput A: float32[N]\n", 1, 11, "must be an integer, got 2.5"),
    ("non-integer dimension", "input A: float32[4 / 2]\n", 1, 20, "'/' in a dimension"),
    ("division by zero in a size", "param N = 4 // 0\n", 1, 13, "division by zero"),
    ("size overflow", "param N = 2 ** 40\n", 1, 13, "out of range"),
    # arity and functions
    ("wrong number of indices", HEAD + "output C[i] = A[i]\n", 4, 15, "indexed with 1 (expected 2"),
    ("wrong number of arguments", HEAD + "output C[i, k] = exp(A[i, k], 2.0)\n", 4, 18, "exp() takes 1 argument"),
    ("max with three arguments", HEAD + "output C[i, k] = max(A[i, k], 2, 3)\n", 4, 18, "takes 1 or 2 arguments"),
    ("select with two arguments", HEAD + "output C[i, k] = select(i > 0, A[i, k])\n", 4, 18, "takes 3"),
    ("unknown function", HEAD + "output C[i, k] = foo(A[i, k])\n", 4, 18, "unknown function 'foo'"),
    ("tensor called like a function", HEAD + "output C[i, k] = A(i, k)\n", 4, 18, "index a tensor with [ ]"),
    ("unknown dtype", "input A: float8[4]\n", 1, 10, "unknown dtype 'float8'"),
    # types
    ("type mismatch: float index", HEAD + "output C[i, k] = A[i, k] + A[i * 0.5, k]\n", 4, 30,
     "index 0 of A is float32"),
    ("type mismatch: float value into int tensor", HEAD + "output C: int32[N, K]\nC[i, k] = A[i, k]\n", 5, 11,
     "declared int32 but its value is float32"),
    ("type mismatch: narrowing", "input A: float64[4]\noutput C: float32[4]\nC[i] = A[i]\n", 3, 8,
     "declared float32 but its value is float64"),
    ("type mismatch: condition as value", HEAD + "output C[i, k] = A[i, k] > 0.0\n", 4, 18, "would hold a condition"),
    ("type mismatch: integer division with /", HEAD + "output C[i, k] = A[i, k] + i / 2\n", 4, 30, "'/' of two"),
    ("type mismatch: // on floats", HEAD + "output C[i, k] = A[i, k] // 2.0\n", 4, 26, "'//' takes integers"),
    ("type mismatch: number as condition", HEAD + "output C[i, k] = A[i, k] if A[i, k] else 0.0\n", 4, 29,
     "expected a condition"),
    ("type mismatch: arithmetic on a condition", HEAD + "output C[i, k] = (i > 0) * A[i, k]\n", 4, 19,
     "is a condition"),
    ("type mismatch: and on numbers", HEAD + "output C[i, k] = A[i, k] if i and k else 0.0\n", 4, 29,
     "expected a condition"),
    ("type mismatch: branches", HEAD + "output C[i, k] = A[i, k] + select(i > 0, i > 1, 1.0)\n", 4, 28,
     "one branch"),
    ("integer literal too large", HEAD + "output C[i, k] = A[i, k] * 99999999999\n", 4, 28, "does not fit in int32"),
    ("division by zero", HEAD + "output C[i, k] = A[i, k] + A[i // 0, k]\n", 4, 35, "division by zero"),
    ("float literal out of range", HEAD + "output C[i, k] = A[i, k] * 1e39\n", 4, 28, "out of range"),
    # text that is not text
    ("control byte", "param N = 4\x00\n", 1, 12, "U+0000"),
    ("escape sequence", "input A: float32[4]\n\x1b[31m", 2, 1, "U+001B"),
]


@pytest.mark.parametrize("kind,text,line,col,fragment", CASES, ids=[c[0] for c in CASES])
def test_error_is_reported_at_the_right_place(kind, text, line, col, fragment):
    with pytest.raises(TeError) as info:
        parse_text(text, "t.te", ["N=3"] if kind == "defines that are not a dict" else None)
    err = info.value
    message = str(err)
    assert fragment in message, message
    assert (err.filename, err.line, err.col) == ("t.te", line, col), message
    assert re.fullmatch(r"t\.te:\d+:\d+: error: [^\n]+\(expected[^\n]*\)[^\n]*|t\.te:\d+:\d+: error: [^\n]+\([^\n]+\)",
                        message), message
    assert "\n" not in message and message.startswith(f"t.te:{line}:{col}: error: ")


def test_syntax_errors_are_a_subclass():
    with pytest.raises(TeSyntaxError):
        parse_text("input A: float32[4\n")
    assert issubclass(TeSyntaxError, TeError)


DEFINE_TEXT = "param N = 8\ninput A: float32[N]\noutput B[i] = A[i]\n"


@pytest.mark.parametrize("defines,line,col,fragment", [
    ({"Q": 3}, 1, 1, "-D Q=3: no size parameter named 'Q' (expected one of: N)"),
    ({"N": "abc"}, 1, 7, "non-integer size: -D N=abc"),
    ({"N": "2.5"}, 1, 7, "non-integer size"),
    ({"N": 2.5}, 1, 7, "non-integer size"),
    ({"N": True}, 1, 7, "non-integer size"),
    ({"N": 0}, 2, 18, "dimension of A is 0"),
    ({"N": -4}, 2, 18, "dimension of A is -4"),
    ({"N": 2**40}, 1, 7, "too large"),
])
def test_bad_defines(defines, line, col, fragment):
    with pytest.raises(TeError) as info:
        parse_text(DEFINE_TEXT, "d.te", defines)
    assert fragment in str(info.value) and (info.value.line, info.value.col) == (line, col), str(info.value)


def test_good_defines_accept_ints_and_numeric_strings():
    assert parse_text(DEFINE_TEXT, defines={"N": " 16 "}).params == {"N": 16}
    assert parse_text(DEFINE_TEXT, defines={"N": 3}).outputs[0].shape == (3,)


def test_command_line_defines():
    assert parse_defines(["N=16", " K = 3 "]) == {"N": "16", "K": "3"}
    assert parse_text(DEFINE_TEXT, defines=parse_defines(["N=5"])).outputs[0].shape == (5,)
    with pytest.raises(TeError, match=r"^<command line>:1:1: error: -D N: expected NAME=INTEGER"):
        parse_defines(["N"])
    with pytest.raises(TeError, match="non-integer size: -D N=abc"):
        parse_text(DEFINE_TEXT, "d.te", parse_defines(["N=abc"]))


def test_binary_junk_in_a_file(tmp_path):
    f = tmp_path / "junk.te"
    f.write_bytes(b"param N = 4\ninput A: float32[N]\n\xff\xfe\x00garbage")
    with pytest.raises(TeError) as info:
        load(f)
    assert str(info.value).startswith(f"{f}:3:1: error: invalid UTF-8 byte 0xff")
    g = tmp_path / "elf.te"
    g.write_bytes(b"\x7fELF\x02\x01\x01\x00")
    with pytest.raises(TeError, match=r"elf\.te:1:1: error: control"):
        load(g)
    g.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)))
    with pytest.raises(TeError, match="invalid UTF-8 byte 0x80"):
        load(g)
    with pytest.raises(TeError, match="invalid UTF-8 byte 0xc3"):
        parse_text(b"input A: float32[4]\n# caf\xc3\n")


def test_error_message_stays_on_one_line_for_odd_input():
    with pytest.raises(TeError) as info:
        parse_text("input A: float32[4]\noutput B[i] = A[i] ?\n", "we\nird.te")
    assert "\n" not in str(info.value) and "use 'a if cond else b'" in str(info.value)
