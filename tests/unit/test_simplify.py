"""The index simplifier: linear normalization, floor div/mod with bounds, comparison folding."""
import itertools

from ansorc.ir.program.expr import Var
from ansorc.ir.program.simplify import bound, simplify

i, j, f = Var("i"), Var("j"), Var("f")
B = {"i": (0, 15), "j": (0, 63), "f": (0, 1023)}


def same(a, b):
    return repr(simplify(a, B)) == repr(b)


def test_linear_terms_cancel_and_fold():
    assert repr(simplify(i * 1 + 0 - i + j * 2 - j, B)) == "j"
    assert repr(simplify((i + 3) * 4 - 12, B)) == "(i * 4)"


def test_div_mod_of_split_index():
    assert repr(simplify((i * 64 + j) // 64, B)) == "i"
    assert repr(simplify((i * 64 + j) % 64, B)) == "j"
    assert repr(simplify((i * 4 + 3) // 2, B)) == "((i * 2) + 1)"


def test_fuse_then_split_is_identity():
    assert repr(simplify((f // 64) * 64 + f % 64, B)) == "f"


def test_nested_div_and_mod():
    assert repr(simplify((f // 4) // 8, B)) == "(f // 32)"
    assert repr(simplify((f % 64) % 8, B)) == "(f % 8)"


def test_compare_folds_with_bounds():
    assert repr(simplify(i * 64 + j < 1024, B)) == "True"
    assert repr(simplify(i * 64 + j < 1000, B)) == "(((i * 64) + j) < 1000)"
    assert repr(simplify(i - 16 >= 0, B)) == "False"


def test_unit_range_var_is_constant():
    assert repr(simplify(Var("z") * 8 + j, {"z": (0, 0), "j": (0, 7)})) == "j"


def test_bounds():
    assert bound(i * 64 + j, B) == (0, 1023)
    assert bound((f // 8) % 16, B) == (0, 15)


def test_simplified_value_is_unchanged_exhaustively():
    """Floor semantics: the simplified expression evaluates the same as the original on every point."""
    exprs = [(i * 6 + j) // 4, (i * 6 + j) % 4, ((i * 8 + j) // 2) % 3, (i - 7) // 3, (i - 7) % 3,
             ((i * 16 + j) // 16) * 16 + (i * 16 + j) % 16]
    small = {"i": (0, 9), "j": (0, 5)}
    for e in exprs:
        s = simplify(e, small)
        for vi, vj in itertools.product(range(10), range(6)):
            env = {"i": vi, "j": vj}
            assert _eval(e, env) == _eval(s, env), (e, s, env)


def _eval(e, env):
    from ansorc.ir.program.expr import Binary, Const
    if isinstance(e, Var):
        return env[e.name]
    if isinstance(e, Const):
        return e.value
    assert isinstance(e, Binary)
    a, b = _eval(e.a, env), _eval(e.b, env)
    return {"+": a + b, "-": a - b, "*": a * b, "//": a // b if b else 0, "%": a % b if b else 0,
            "min": min(a, b), "max": max(a, b)}[e.op]


def test_a_lane_below_the_alignment_of_the_rest_folds_out_of_div_and_mod():
    """(32a + 16j + l) // 128 with l < 16: the rest is a multiple of 16 that divides 128, so l never carries (a
    grouped conv's channel group read by a vector of 16 output channels is one element, not a gather)."""
    a, l = Var("a"), Var("l")
    b = {"a": (0, 15), "j": (0, 1), "l": (0, 15)}
    assert repr(simplify((a * 32 + j * 16 + l) // 128, b)) == repr((a * 32) // 128)
    assert "l" not in repr(simplify((a * 32 + l + 3) // 64, {"a": (-4, 9), "l": (0, 28)}))
    assert "l" in repr(simplify((a * 32 + j * 16 + l) // 128, {**b, "l": (0, 16)}))   # 16 may carry: kept


def test_aligned_div_and_mod_keep_their_value_on_random_expressions():
    import random
    rng = random.Random(7)
    a, l = Var("a"), Var("l")
    for _ in range(100):
        ca, cj, k = (rng.choice([1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64]) for _ in range(3))
        c = rng.choice([2, 4, 8, 16, 32, 64, 96, 128, 256])
        lo = rng.randint(-20, 0)
        bnd = {"a": (lo, lo + rng.randint(0, 12)), "j": (0, rng.randint(0, 3)), "l": (0, rng.randint(0, 20))}
        for e in ((a * ca + j * cj + l + k) // c, (a * ca + j * cj + l + k) % c, (a * ca + l * 2 - k) // c):
            s = simplify(e, bnd)
            for env in itertools.product(*(range(lo_, hi + 1) for lo_, hi in bnd.values())):
                env = dict(zip(bnd, env))
                assert _eval(e, env) == _eval(s, env), (e, s, env, bnd)
