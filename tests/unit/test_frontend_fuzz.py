"""Fuzzing the frontend: for any text, bytes, mutation of a valid file or set of defines, parsing either returns
a Program the IR accepts or raises TeError with a one-line message, and never any other exception."""
from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ansorc.frontend import Program, TeError, parse_text
from ansorc.ir.program.dag import ComputeDAG

EXAMPLES = {p.stem: p.read_text() for p in sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.te"))}
TOKENS = ["param", "input", "output", "tensor", "where", "if", "else", "and", "or", "not", "sum", "max", "min",
          "exp", "sqrt", "select", "float32", "int32", "A", "B", "C", "N", "K", "i", "j", "k", "0", "1", "2", "0.5",
          "1e3", "-", "+", "*", "/", "//", "%", "**", "<", "<=", "==", "!=", "=", "(", ")", "[", "]", ",", ":",
          ";", "\n", "#", " ", "int", "x$y", "\x00", "é", "99999999999"]
FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def check(text, defines=None):
    try:
        prog = parse_text(text, "fuzz.te", defines)
    except TeError as e:
        message = str(e)
        assert message.startswith("fuzz.te:") and ": error: " in message and "\n" not in message
        return None
    assert isinstance(prog, Program) and prog.outputs
    ComputeDAG(prog.tensors)  # whatever the frontend accepts, the IR accepts
    return prog


@FUZZ
@given(st.one_of(st.text(max_size=200),
                 st.text(alphabet="ABCNijk []()=+-*/%<>:,.#0123456789\n", max_size=200),
                 st.lists(st.sampled_from(TOKENS), max_size=60).map(" ".join)))
def test_arbitrary_text_parses_or_raises_te_error(text):
    check(text)


@FUZZ
@given(st.binary(max_size=200))
def test_arbitrary_bytes_parse_or_raise_te_error(data):
    check(data)


@st.composite
def mutated_example(draw):
    text = EXAMPLES[draw(st.sampled_from(sorted(EXAMPLES)))]
    for _ in range(draw(st.integers(1, 4))):
        pos = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["delete", "insert", "token", "replace", "duplicate", "truncate"]))
        if action == "delete":
            text = text[:pos] + text[pos + draw(st.integers(1, 8)):]
        elif action == "insert":
            text = text[:pos] + draw(st.text(max_size=6)) + text[pos:]
        elif action == "token":
            text = text[:pos] + " " + draw(st.sampled_from(TOKENS)) + " " + text[pos:]
        elif action == "replace" and pos < len(text):
            text = text[:pos] + draw(st.sampled_from("0123456789ijkNAB[](),+-*<=.# \n")) + text[pos + 1:]
        elif action == "duplicate":
            lines = text.splitlines(keepends=True)
            if lines:
                k = draw(st.integers(0, len(lines) - 1))
                text = "".join(lines[:k + 1] + [lines[k]] + lines[k + 1:])
        elif action == "truncate":
            text = text[:pos]
    return text


@FUZZ
@given(mutated_example())
def test_mutated_examples_parse_or_raise_te_error(text):
    check(text)


GENERATED_HEAD = "param N = 4, K = 3\ninput A: float32[N, K]\ninput B: float32[K, N]\ninput I: int32[N]\n"


def expressions(depth: int = 3):
    """Random expressions over A, B, I and indices i, j, k, r: mostly well-formed, sometimes ill-typed."""
    leaf = st.one_of(st.sampled_from(["i", "k", "r", "N", "K", "0", "1", "2", "0.5", "-1"]),
                     st.builds("A[{}, {}]".format, st.sampled_from(["i", "j", "k", "i + 1", "I[j]", "0"]),
                               st.sampled_from(["k", "j", "r", "k - 1", "2"])),
                     st.builds("B[{}, {}]".format, st.sampled_from(["k", "r", "j // 2"]),
                               st.sampled_from(["i", "j", "N - 1 - i"])))
    if depth == 0:
        return leaf
    sub = expressions(depth - 1)
    return st.one_of(
        leaf,
        st.builds("({} {} {})".format, sub, st.sampled_from(["+", "-", "*", "/", "//", "%", "**", "<", "==",
                                                             "and", "or"]), sub),
        st.builds("{}({})".format, st.sampled_from(["sum", "max", "min", "exp", "sqrt", "abs", "float32",
                                                    "int32", "not"]), sub),
        st.builds("{}({}, {})".format, st.sampled_from(["max", "min", "pow"]), sub, sub),
        st.builds("({} if {} else {})".format, sub, sub, sub),
        st.builds("select({}, {}, {})".format, sub, sub, sub))


@FUZZ
@given(st.sampled_from([("output C[i]", ""), ("output C[i, j]", ""), ("C[i]", "output C: float32[N]\n"),
                        ("C[i, k]", "output C: int32[N, K]\n"), ("C[i, k]", "output C: float32[N, K]\n")]),
       st.sampled_from(["{}", "sum({})", "max({})", "exp(min({}))"]), expressions(),
       st.sampled_from(["", "", " where r < 3", " where -1 <= r < 2", " where j < 2"]))
def test_generated_definitions_parse_or_raise_te_error(left_decl, wrap, value, where):
    left, decl = left_decl
    check(f"{GENERATED_HEAD}{decl}{left} = {wrap.format(value)}{where}\n")


def float_expressions(depth: int = 3):
    """Well-typed, in-bounds values for `C[i] = sum(...)` with i < N and k < K: these must be accepted."""
    leaf = st.sampled_from(["A[i, k]", "B[k, i]", "A[i, 0] * 2", "B[k, N - 1 - i]", "0.5", "2.0", "float32(k)",
                            "A[I[i] % N, k]", "(A[i + 1, k] if i + 1 < N else 0.0)",
                            "select(0 <= i - 1 and k < K, B[k, i - 1], -1.0)",
                            "(0.0 if i < 1 else A[i - 1, k])", "A[(i * 3 + k) // 4, (k + 1) % K]"])
    if depth == 0:
        return leaf
    sub = float_expressions(depth - 1)
    cond = st.builds("{} {} {}".format, st.sampled_from(["i", "k", "A[i, k]", "i + k"]),
                     st.sampled_from(["<", "<=", "==", "!=", ">"]), st.sampled_from(["1", "k", "0.0", "N // 2"]))
    return st.one_of(leaf,
                     st.builds("({} {} {})".format, sub, st.sampled_from(["+", "-", "*", "/"]), sub),
                     st.builds("{}({})".format, st.sampled_from(["exp", "abs", "tanh", "sigmoid", "-", "float32"]),
                               sub),
                     st.builds("{}({}, {})".format, st.sampled_from(["max", "min"]), sub, sub),
                     st.builds("({} if {} else {})".format, sub, cond, sub),
                     st.builds("({} ** 2)".format, sub))


@FUZZ
@given(st.sampled_from(["output C[i] = sum(A[i, k] * {})", "output C[i] = sum({} - B[k, i]) / max(A[i, q])",
                        "output C: float32[N]\nC[i] = min(B[k, i] + {})",
                        "output C: float64[N]\nC[i] = sqrt(sum(abs({}) * B[k, i]))"]), float_expressions())
def test_well_typed_definitions_are_accepted(template, value):
    try:
        prog = parse_text(f"{GENERATED_HEAD}{template.format(value)}\n", "gen.te")
    except TeError as e:  # x - x can fold to a zero divisor; any other error fails the test
        assume("division by zero" not in str(e))
        raise
    assert prog.outputs[0].shape == (4,)
    ComputeDAG(prog.tensors)


@FUZZ
@given(st.sampled_from(sorted(EXAMPLES)),
       st.dictionaries(st.sampled_from(["N", "H", "W", "K", "S", "P", "M", "CI", "CO", "Q", "", "1x"]),
                       st.one_of(st.integers(-3, 70), st.sampled_from(["8", "abc", "2.5", "", " 4", "-1", "1e3"]),
                                 st.floats(allow_nan=True), st.booleans(), st.none()),
                       max_size=3))
def test_examples_with_arbitrary_defines(name, defines):
    check(EXAMPLES[name], defines)
