"""The simplifier's memo of integer index expressions: the same trees as without it, keyed by the bounds of the
expression's own variables, never for trees whose equality is not exact, and bounded in size."""
import random

import pytest

import ansorc.ir.program.simplify as simp
from ansorc.ir.program.expr import Binary, Const, Read, Var
from ansorc.ir.program.simplify import simplify

i, j, f = Var("i"), Var("j"), Var("f")


@pytest.fixture(autouse=True)
def empty_memo():
    simp._INDEX_MEMO.clear()
    yield
    simp._INDEX_MEMO.clear()


def _random_index(rng, depth=3):
    if depth == 0 or rng.random() < 0.25:
        return rng.choice([i, j, f, Const(rng.randint(-5, 70), "int32")])
    op = rng.choice(["+", "-", "*", "//", "%", "min", "max"])
    a = _random_index(rng, depth - 1)
    b = Const(rng.choice([1, 2, 3, 4, 8, 16, 64]), "int32") if op in ("*", "//", "%") else \
        _random_index(rng, depth - 1)
    return Binary(op, a, b, "int32")


def test_memoized_results_are_the_unmemoized_trees_under_each_bounds():
    rng = random.Random(3)
    exprs = [_random_index(rng) for _ in range(300)]
    for bounds in ({"i": (0, 15), "j": (0, 63), "f": (0, 1023)}, {"i": (0, 0), "j": (2, 5)}, {}):
        for e in exprs + exprs:   # the second pass answers from the memo
            assert repr(simplify(e, bounds)) == repr(simp._simplify(e, bounds)), (e, bounds)
    assert len(simp._INDEX_MEMO) > 0


def test_the_key_reads_the_bounds_of_the_expression_variables_only():
    e = (i * 64 + j) % 64
    assert repr(simplify(e, {"i": (0, 3), "j": (0, 63)})) == "j"
    assert repr(simplify(e, {"i": (0, 3), "j": (0, 127)})) == "(j % 64)"   # j's bounds changed: not the memo's j
    k1 = simp._index_key(e, {"i": (0, 3), "j": (0, 63), "f": (0, 9)})
    k2 = simp._index_key(e, {"i": (0, 3), "j": (0, 63), "f": (5, 5)})
    assert k1 == k2   # f does not occur in e


def test_trees_whose_equality_is_not_exact_are_not_keyed():
    bounds = {"i": (0, 15)}
    assert simp._index_key(Binary("+", i, Const(True, "int32"), "int32"), bounds) is None   # True == 1
    assert simp._index_key(Binary("+", i, Const(1.0, "int32"), "int32"), bounds) is None    # 1.0 == 1
    assert simp._index_key(Binary("+", Var("x", "float32"), Const(1, "float32"), "float32"), bounds) is None
    assert simp._index_key(Binary("+", i, Read("A", (i,), "int32"), "int32"), bounds) is None
    assert simp._index_key(Binary("+", i, Const(1, "int32"), "int32"), bounds) is not None


def test_the_memo_is_emptied_when_full(monkeypatch):
    monkeypatch.setattr(simp, "INDEX_MEMO_SIZE", 4)
    for k in range(10):
        simplify(i * 2 + k, {"i": (0, 15)})
        assert len(simp._INDEX_MEMO) <= 4
