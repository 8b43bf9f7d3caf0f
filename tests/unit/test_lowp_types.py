"""The narrow element types at the te level: int8, uint8, int16 compute in int32; float16 and bfloat16 are storage
types that compute in float32; casts, saturating casts and constants mean what ir/program/convert.py says, and
the numpy evaluator (the reference) computes exactly that. The compiled side: tests/cpu/test_kernels_lowp.py."""
import numpy as np
import pytest

from ansorc.codegen import lowp
from ansorc.errors import ExpressionError
from ansorc.frontend import TeError, parse_text
from ansorc.ir.program import convert, te
from ansorc.ir.program.expr import Cast, Const, Var, const
from ansorc.ir.program.evaluate import evaluate, random_inputs
from ansorc.ir.program.simplify import bound, simplify

NARROW = ("int8", "uint8", "int16")
HALVES = ("float16", "bfloat16")


def _one(dtype: str, n: int = 4):
    return te.placeholder((n,), dtype, f"x_{dtype}")


@pytest.mark.parametrize("dtype", NARROW)
def test_narrow_ints_compute_in_int32_and_keep_their_type_where_nothing_is_computed(dtype):
    x = _one(dtype)
    assert (x[0] + x[1]).dtype == (x[0] * 3).dtype == te.abs(x[0]).dtype == (-x[0]).dtype == "int32"
    assert (x[0] + te.var("n", "int64")).dtype == "int64" and (x[0] * 0.5).dtype == "float32"
    assert te.if_then_else(x[0] > 0, x[0], 0).dtype == dtype          # a select only chooses
    assert te.if_then_else(x[0] > 0, x[0], 100000).dtype == "int32"     # unless the number does not fit
    assert te.compute((4,), lambda i: x[i], name="c").dtype == dtype


@pytest.mark.parametrize("dtype", HALVES)
def test_16_bit_floats_are_storage_types_computing_in_float32(dtype):
    x = _one(dtype)
    assert (x[0] * x[1]).dtype == (x[0] + 1).dtype == te.exp(x[0]).dtype == "float32"
    assert (x[0] + te.var("d", "float64")).dtype == "float64"
    assert (x[0] * 0.1).b == Const(0.1, "float32")                     # the number is not rounded to 16 bits
    assert te.if_then_else(x[0] > 0, x[0], 0.0).dtype == dtype         # padding keeps the type
    assert te.if_then_else(x[0] > 0, x[0], 0.1).dtype == "float32"     # 0.1 is no 16-bit value
    k = te.reduce_axis((0, 4), "k")
    with pytest.raises(ExpressionError, match="accumulate in float32"):
        te.compute((1,), lambda i: te.sum(x[k], axis=k), name="s")
    s = te.compute((1,), lambda i: te.sum(x[k].astype("float32"), axis=k), name="s")
    assert s.dtype == "float32"


def test_constants_fit_their_type_and_16_bit_ones_hold_the_rounded_value():
    with pytest.raises(ExpressionError, match="does not fit in int8"):
        const(128, "int8")
    with pytest.raises(ExpressionError, match="does not fit in uint8"):
        const(-1, "uint8")
    assert const(255, "uint8").value == 255 and const(-32768, "int16").value == -32768
    assert const(0.1, "bfloat16").value == 0.10009765625 and const(0.1, "float16").value == float(np.float16(0.1))
    assert const(70000.0, "float16").value == np.inf and const(1 + 2**-8, "bfloat16").value == 1.0
    assert lowp.constant(1.0, "bfloat16") == "0x3f80" and lowp.constant(-2.0, "float16") == "0xc000"


def test_max_and_min_of_narrow_ints_start_from_the_type_bounds():
    x = _one("int8")
    k = te.reduce_axis((0, 4), "k")
    hi = te.compute((1,), lambda i: te.max(x[k], axis=k), name="hi")
    lo = te.compute((1,), lambda i: te.min(x[k], axis=k, where=k > 9), name="lo")   # nothing passes: identity
    got = evaluate([hi, lo], {"x_int8": np.array([-128, -128, -128, -128], np.int8)})
    assert got["hi"][0] == -128 and got["lo"][0] == 127 and got["hi"].dtype == np.int8


def test_bfloat16_rounds_to_nearest_even_and_keeps_nan():
    one = np.float32(1.0)
    x = np.array([1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-8 + 2**-20, -(1 + 2**-8), np.inf, -np.inf, np.nan, -np.nan,
                  3.3895314e38, 3.4028235e38, 1e-40, -1e-45, 0.0, -0.0, one], np.float32)
    bits = convert.to_bfloat16(x)
    assert [hex(b) for b in bits[:4]] == ["0x3f80", "0x3f82", "0x3f81", "0xbf80"]
    assert [hex(b) for b in bits[4:8]] == ["0x7f80", "0xff80", "0x7fc0", "0xffc0"]
    assert hex(bits[8]) == "0x7f7f" and hex(bits[9]) == "0x7f80"   # max float32 rounds up to inf
    assert bits[10] == 0x0001 and hex(bits[11]) == "0x8000" and bits[12] == 0 and hex(bits[13]) == "0x8000"
    back = convert.from_bfloat16(bits)
    assert back.dtype == np.float32 and back[14] == 1.0 and np.isnan(back[6])


def test_bfloat16_rounding_matches_ml_dtypes_on_many_bit_patterns():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(0)
    u = np.concatenate([rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32),
                        (np.arange(2**16, dtype=np.uint32) << 16) | 0x8000,   # every halfway case
                        (np.arange(2**16, dtype=np.uint32) << 16) | 0x7FFF])
    x = u.view(np.float32)
    with np.errstate(invalid="ignore"):
        ours, theirs = convert.to_bfloat16(x), x.astype(ml_dtypes.bfloat16).view(np.uint16)
    nan = np.isnan(x)
    assert np.array_equal(ours[~nan], theirs[~nan])
    assert np.all((ours[nan] & 0x7FFF) == 0x7FC0)


def test_conversions_to_16_bit_floats_go_through_float32():
    # a float64 just above float16's halfway point 1 + 2**-11 rounds to float32 1 + 2**-11, then ties to even: 1.0
    v = 1 + 2**-11 + 2**-40
    assert convert.scalar(v, "float16") == 1.0 and float(np.float16(v)) != 1.0
    d = te.placeholder((1,), "float64", "d")
    h = te.compute((1,), lambda i: d[i].astype("float16"), name="h")
    assert evaluate([h], {"d": np.array([v])})["h"][0] == 1.0


def test_saturating_casts_round_half_to_even_clamp_and_map_nan_to_zero():
    x = np.array([2.5, -2.5, 3.5, 0.5, -0.5, 126.5, 127.5, 1000.0, -128.5, -1e30, np.nan, np.inf, -np.inf])
    assert convert.saturate(x, "int8").tolist() == [2, -2, 4, 0, 0, 126, 127, 127, -128, -128, 0, 127, -128]
    assert convert.saturate(x, "uint8").tolist() == [2, 0, 4, 0, 0, 126, 128, 255, 0, 0, 0, 255, 0]
    big = np.array([2147483648.0, 2147483520.0, -2147483904.0, 32767.5, -32768.5])
    assert convert.saturate(big, "int32").tolist() == [2**31 - 1, 2147483520, -2**31, 32768, -32768]
    assert convert.saturate(big, "int16").tolist() == [32767, 32767, -32768, 32767, -32768]
    assert convert.saturate(np.array([300, -300, 5]), "int8").tolist() == [127, -128, 5]
    with pytest.raises(ExpressionError, match="targets int8, uint8, int16, int32"):
        te.saturate_cast(Var("v", "float32"), "int64")


def test_plain_casts_to_narrow_ints_truncate_then_wrap():
    assert convert.cast(np.array([200.7, -3.9, 127.99, 255.0]), "int8").tolist() == [-56, -3, 127, -1]
    assert convert.cast(np.array([300, -1]), "uint8").tolist() == [44, 255]
    assert convert.cast(np.array([40000]), "int16").tolist() == [-25536]


def test_evaluator_rounds_float32_arithmetic_where_it_happens():
    a = te.placeholder((1,), "float32", "a")
    # 0.1f * 25 is 2.5000000372... in float64 but exactly 2.5 in float32: the kernel rounds that half to even
    s = te.compute((1,), lambda i: te.saturate_cast(a[i] * 25.0, "int8"), name="s")
    assert evaluate([s], {"a": np.array([0.1], np.float32)})["s"][0] == 2


def test_the_evaluator_reads_and_writes_bfloat16_as_bits():
    x = te.placeholder((4,), "bfloat16", "x")
    y = te.compute((4,), lambda i: (x[i] * 3.0 + 1.0).astype("bfloat16"), name="y")
    bits = convert.to_bfloat16(np.array([1.0, -2.0, 0.5, 100.0]))
    got = evaluate([y], {"x": bits})["y"]
    assert got.dtype == np.uint16 and convert.from_bfloat16(got).tolist() == [4.0, -5.0, 2.5, 300.0]
    floats = evaluate([y], {"x": np.array([1.0, -2.0, 0.5, 100.0], np.float32)})["y"]   # numbers are rounded
    assert np.array_equal(floats, got)
    r = random_inputs([y], seed=1)["x"]
    assert r.dtype == np.uint16 and np.all(np.abs(convert.from_bfloat16(r)) <= 1.0)


def test_simplifier_folds_casts_of_constants_as_the_kernel_converts():
    assert simplify(Cast("int8", Const(300, "int32"))) == Const(44, "int8")
    assert simplify(Cast("uint8", Const(-1.5, "float32"))) == Const(255, "uint8")
    assert simplify(Cast("bfloat16", Const(0.1, "float32"))) == Const(0.10009765625, "bfloat16")
    assert simplify(Cast("int32", Const(2.5, "float16"))) == Const(2, "int32")
    v = Var("v")
    assert bound(Cast("int8", v), {"v": (0, 300)}) is None and bound(Cast("int8", v), {"v": (0, 100)}) == (0, 100)
    assert bound(Cast("int32", v), {"v": (0, 300)}) == (0, 300)


def test_expression_files_declare_narrow_types_and_saturate():
    p = parse_text("input A: uint8[4, 8]\ninput B: int8[8, 2]\ninput X: bfloat16[4]\n"
                   "output C: int32[4, 2]\noutput Q: int8[4, 2]\noutput Y: bfloat16[4]\noutput Z: float32[4]\n"
                   "C[i, j] = sum(A[i, k] * B[k, j])\nQ[i, j] = saturate_int8(float32(C[i, j]) * 0.01)\n"
                   "Y[i] = bfloat16(X[i] * 2.0 + 1.0)\nZ[i] = X[i]\n")
    assert [t.dtype for t in p.tensors] == ["uint8", "int8", "bfloat16", "int32", "int8", "bfloat16", "float32"]
    assert repr(p.outputs[1].op.body) == "saturate_int8((float32(C[i, j]) * 0.01))"
    for text, error in (("input A: int32[4]\noutput O: int8[4]\nO[i] = A[i]", "convert with int8"),
                        ("input A: float32[4]\noutput O: bfloat16[4]\nO[i] = A[i]", "convert with bfloat16"),
                        ("input A: bfloat16[4]\noutput O: float16[4]\nO[i] = A[i]", "convert with float16"),
                        ("output O: int8[4]\nO[i] = 300", "does not fit in int8"),
                        ("input A: bfloat16[4]\noutput O: bfloat16[1]\nO[i] = sum(A[r])", "accumulate in float32")):
        with pytest.raises(TeError, match=error):
            parse_text(text)
    widened = parse_text("input A: int8[4]\ninput H: float16[4]\noutput O: int64[4]\noutput F: float64[4]\n"
                         "O[i] = A[i]\nF[i] = H[i]\n")
    assert [t.dtype for t in widened.outputs] == ["int64", "float64"]


def test_programs_without_narrow_types_keep_their_c_and_cuda_refuses_16_bit_floats_for_now():
    import ansorc
    from ansorc.search.task import SearchTask
    from ansorc.targets.cuda.search_policy import default_gpu_schedule
    a = te.placeholder((64,), "float32", "a")
    b = te.compute((64,), lambda i: a[i] * 2.0, name="b")
    assert "ANSORC_LOWP" not in ansorc.generate_source([a, b], target="generic").code
    x = te.placeholder((64,), "bfloat16", "x")
    y = te.compute((64,), lambda i: (x[i] * 2.0).astype("bfloat16"), name="y")
    assert "ANSORC_LOWP" in ansorc.generate_source([x, y], target="generic").code
    with pytest.raises(NotImplementedError, match="not supported on CUDA yet"):
        ansorc.generate_source([x, y], default_gpu_schedule(SearchTask([x, y], target="cuda")), target="cuda")
