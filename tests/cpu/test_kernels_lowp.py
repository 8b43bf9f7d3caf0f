"""Compiled kernels on the narrow element types are bit-exact against the numpy evaluator: for each type an
element-wise kernel (cast in, arithmetic, cast out, saturating casts) on edge values (saturation bounds, halfway
cases, NaN, infinities, denormals, every 16-bit pattern), and small reductions (u8 x s8 -> s32 and bf16 x bf16 ->
f32 matmuls, 16x32x8), naive, vectorized (the vectorizer falls back to scalar code per lane where a type has no
vector class) and under the default schedule. float16 is checked through `_Float16` and through the bit
operations (-DANSORC_NO_FLOAT16) alike."""
import numpy as np
import pytest

import ansorc
from ansorc import te
from ansorc.codegen.target import Target
from ansorc.ir.program.convert import from_bfloat16, to_bfloat16
from ansorc.ir.program.evaluate import evaluate
from ansorc.ir.program.te import ComputeOp
from ansorc.ir.schedule.state import State
from ansorc.ir.schedule.steps import Annotate
from ansorc.search.default_schedule import default_cpu_schedule

RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767)}
EDGES = {"int8": [-128, -127, -1, 0, 1, 2, 3, 85, 86, 127], "uint8": [0, 1, 2, 3, 127, 128, 170, 171, 254, 255],
         "int16": [-32768, -32767, -21846, -1, 0, 1, 3, 21845, 21846, 32767]}
OTHER = {"float16": "bfloat16", "bfloat16": "float16"}
# bits: zeros, the smallest and largest denormal, the smallest normal, the largest finite, infinities, a NaN,
# 1.25 and 2.5 (halfway once doubled), 127.5
HALF_EDGES = {"bfloat16": [0x0000, 0x8000, 0x0001, 0x007F, 0x0080, 0x7F7F, 0xFF7F, 0x7F80, 0xFF80, 0x7FC0, 0x3FA0,
                           0xBFA0, 0x4020, 0x42FF],
              "float16": [0x0000, 0x8000, 0x0001, 0x03FF, 0x0400, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0x3D00,
                          0xBD00, 0x4100, 0x57F8]}
# float32 values on the roundings' edges: bfloat16 and float16 ties, float16's overflow and subnormal ties,
# float32 denormals, the largest float32
FLOAT_EDGES = [1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-8), 1 + 2**-11, 1 + 3 * 2**-11, 65504.0, 65519.996, 65520.0,
               -65520.0, 2**-25, 3 * 2**-25, 1.5 * 2**-24, 2**-14 - 2**-26, 1e-40, -1e-45, 3.4028235e38,
               3.3895314e38, np.nan, -np.inf, np.inf, 0.0, -0.0, 2.5, -2.5]
NATIVE = Target.from_name("native")
F16_PATHS = {"Float16": None, "bitops": tuple(NATIVE.flags) + ("-DANSORC_NO_FLOAT16",)}


def _vectorized(tensors):
    """Every computed tensor's innermost axis annotated `vectorize`."""
    st = State.initial(ansorc.ComputeDAG(tensors))
    for t in tensors:
        if isinstance(t.op, ComputeOp):
            st = st.apply(Annotate(t.name, t.op.axes[-1].name, "vectorize"))
    return st


def _schedule(kind: str, tensors):
    dag = ansorc.ComputeDAG(tensors)
    return {"naive": None, "vectorized": _vectorized(tensors), "default": default_cpu_schedule(dag)}[kind]


def _same_bits(got: np.ndarray, want: np.ndarray, dtype: str, signed_zero: bool = True):
    """Bit for bit, NaN payloads aside (and, for sums whose order differs, the sign of a zero)."""
    assert got.dtype == want.dtype and got.shape == want.shape, dtype
    if dtype == "bfloat16":
        got, want = from_bfloat16(got), from_bfloat16(want)
    if got.dtype.kind != "f":
        np.testing.assert_array_equal(got, want, err_msg=dtype)
        return
    nan = np.isnan(got)
    np.testing.assert_array_equal(nan, np.isnan(want), err_msg=f"{dtype}: NaN positions")
    g, w = got[~nan], want[~nan]
    if signed_zero:
        g, w = g.view(f"u{g.itemsize}"), w.view(f"u{w.itemsize}")
    bad = np.flatnonzero(g != w)
    assert bad.size == 0, f"{dtype}: {bad.size} differ, first got {got[~nan][bad[0]]!r} want {want[~nan][bad[0]]!r}"


def _check(tensors, inputs: dict, schedule: str, name: str, flags=None):
    kern = ansorc.build(tensors, _schedule(schedule, tensors), name=name, flags=flags)
    n_in = len(inputs)
    got = kern(*inputs.values())
    got = got if isinstance(got, tuple) else (got,)
    want = evaluate(tensors[n_in:], inputs)
    for t, g in zip(tensors[n_in:], got):
        _same_bits(g, want[t.name], t.dtype)
    return kern


# ----------------------------------------------------------------------------- element-wise

def _int_program(dtype: str, n: int):
    a = te.placeholder((n,), dtype, "a")
    sat = dtype
    outs = [te.compute((n,), lambda i: (a[i] * 3 + 5).astype(dtype), name="wrap"),
            te.compute((n,), lambda i: te.saturate_cast(a[i].astype("float32") * 1.5, sat), name="sat_f"),
            te.compute((n,), lambda i: te.saturate_cast(a[i] * 3 + 5, sat), name="sat_i"),
            te.compute((n,), lambda i: (a[i].astype("float32") * 1.5).astype(dtype), name="trunc"),
            te.compute((n,), lambda i: a[i].astype("float32") * 0.25 + 1.0, name="f32")]
    return [a, *outs]


@pytest.mark.parametrize("schedule", ["naive", "vectorized"])
@pytest.mark.parametrize("dtype", sorted(RANGES))
def test_narrow_int_elementwise_kernels_match_the_evaluator_bit_for_bit(dtype, schedule):
    lo, hi = RANGES[dtype]
    rng = np.random.default_rng(1)
    a = np.concatenate([EDGES[dtype], rng.integers(lo, hi + 1, 190)]).astype(dtype)
    kern = _check(_int_program(dtype, a.size), {"a": a}, schedule, f"ew_{dtype}_{schedule}")
    assert "ansorc_sat_f32" in kern.source and "ansorc_bf16" not in kern.source.split("#endif", 3)[-1]


def _half_program(dtype: str, n: int):
    a = te.placeholder((n,), dtype, "a")
    b = te.placeholder((n,), "float32", "b")
    f = lambda x: x.astype("float32")  # noqa: E731
    outs = [te.compute((n,), lambda i: (f(a[i]) * 3.0 + 1.0).astype(dtype), name="arith"),
            te.compute((n,), lambda i: te.saturate_cast(f(a[i]) * 2.0, "int8"), name="sat"),
            te.compute((n,), lambda i: f(a[i]), name="up"),
            te.compute((n,), lambda i: b[i].astype(dtype), name="down"),
            te.compute((n,), lambda i: a[i].astype(OTHER[dtype]), name="other"),
            te.compute((n,), lambda i: te.if_then_else(b[i] > 0.0, a[i], 0.0), name="pad")]
    return [a, b, *outs]


def _half_inputs(dtype: str, n: int) -> dict:
    rng = np.random.default_rng(2)
    bits = np.concatenate([HALF_EDGES[dtype], rng.integers(0, 2**16, n - len(HALF_EDGES[dtype]))]).astype(np.uint16)
    scale = np.exp2(rng.integers(-30, 30, n - len(FLOAT_EDGES)))
    b = np.concatenate([FLOAT_EDGES, rng.standard_normal(n - len(FLOAT_EDGES)) * scale]).astype(np.float32)
    return {"a": bits if dtype == "bfloat16" else bits.view(np.float16), "b": b}


@pytest.mark.parametrize("f16", sorted(F16_PATHS))
@pytest.mark.parametrize("schedule", ["naive", "vectorized"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_float_elementwise_kernels_match_the_evaluator_bit_for_bit(dtype, schedule, f16):
    n = 1024
    tensors = _half_program(dtype, n)
    _check(tensors, _half_inputs(dtype, n), schedule, f"ew_{dtype}_{schedule}_{f16}", F16_PATHS[f16])


@pytest.mark.parametrize("f16", sorted(F16_PATHS))
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_every_16_bit_pattern_converts_up_and_float32_values_round_down_as_numpy_does(dtype, f16):
    n = 2**16
    a = te.placeholder((n,), dtype, "a")
    b = te.placeholder((n,), "float32", "b")
    up = te.compute((n,), lambda i: a[i].astype("float32"), name="up")
    down = te.compute((n,), lambda i: b[i].astype(dtype), name="down")
    rng = np.random.default_rng(3)
    u = np.concatenate([np.array(FLOAT_EDGES, np.float32).view(np.uint32),
                        rng.integers(0, 2**32, n - len(FLOAT_EDGES), dtype=np.uint64).astype(np.uint32)])
    u[-4096:] = (u[-4096:] & 0xFFFF0000) | (0x8000 if dtype == "bfloat16" else 0x1000)   # ties
    bits = np.arange(n, dtype=np.uint32).astype(np.uint16)
    inputs = {"a": bits if dtype == "bfloat16" else bits.view(np.float16), "b": u.view(np.float32)}
    _check([a, b, up, down], inputs, "vectorized", f"all_{dtype}_{f16}", F16_PATHS[f16])
    if dtype == "float16":   # and the reference itself is numpy's own conversion
        with np.errstate(over="ignore"):
            np.testing.assert_array_equal(evaluate([down], inputs)["down"], inputs["b"].astype(np.float16))


# ----------------------------------------------------------------------------- reductions

def _matmul(da: str, db: str, m: int = 16, k: int = 32, n: int = 8):
    a = te.placeholder((m, k), da, "A")
    b = te.placeholder((k, n), db, "B")
    r = te.reduce_axis((0, k), "k")
    if da in OTHER:
        c = te.compute((m, n), lambda i, j: te.sum(a[i, r].astype("float32") * b[r, j].astype("float32"), axis=r),
                       name="C")
    else:
        c = te.compute((m, n), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name="C")
    return [a, b, c]


def _int_matrix(rng, dtype: str, shape, small: bool = False) -> np.ndarray:
    lo, hi = (-64, 64) if small else RANGES[dtype]
    x = rng.integers(lo, hi + 1, shape)
    if not small:   # the saturation bounds, in every row
        x[:, 0], x[:, 1] = lo, hi
    return x.astype(dtype)


@pytest.mark.parametrize("schedule", ["naive", "vectorized", "default"])
@pytest.mark.parametrize("da, db", [("uint8", "int8"), ("int8", "int8"), ("int16", "int16")])
def test_narrow_int_matmuls_accumulate_in_int32_exactly(da, db, schedule):
    rng = np.random.default_rng(4)
    tensors = _matmul(da, db)
    inputs = {"A": _int_matrix(rng, da, (16, 32)), "B": _int_matrix(rng, db, (32, 8), small=da == "int16")}
    _check(tensors, inputs, schedule, f"mm_{da}_{db}_{schedule}")
    a, b = (x.astype(np.int64) for x in inputs.values())
    assert np.array_equal(evaluate(tensors[2:], inputs)["C"], (a @ b).astype(np.int32))


def _exact_halves(rng, dtype: str, shape) -> np.ndarray:
    """Values m * 2**e with |m| <= 15 and |e| <= 2: every product and every partial sum of 32 of them is exact in
    float32, in any order, so a kernel's sum is the reference's bit for bit; row 0 holds a NaN, row 1 an infinity,
    row 2 both infinities, row 3 only denormals."""
    x = rng.integers(-15, 16, shape) * np.exp2(rng.integers(-2, 3, shape))
    x[x == 0] = 1.0
    if shape[0] == 16:
        x[0, 3], x[1, 5], x[2, 7], x[2, 9] = np.nan, np.inf, np.inf, -np.inf
        x[3] = rng.integers(1, 128, shape[1]) * (2.0**-133 if dtype == "bfloat16" else 2.0**-24)
    out = to_bfloat16(x) if dtype == "bfloat16" else x.astype(np.float16)
    return out


@pytest.mark.parametrize("schedule", ["naive", "vectorized", "default"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_16_bit_float_matmuls_accumulate_in_float32_exactly(dtype, schedule):
    rng = np.random.default_rng(5)
    tensors = _matmul(dtype, dtype)
    inputs = {"A": _exact_halves(rng, dtype, (16, 32)), "B": _exact_halves(rng, dtype, (32, 8))}
    kern = ansorc.build(tensors, _schedule(schedule, tensors), name=f"mm_{dtype}_{schedule}")
    got = kern(*inputs.values())
    want = evaluate(tensors[2:], inputs)["C"]
    if "ansorc_dot_bf16" in kern.source:   # vdpbf16ps (AVX512-BF16 CPUs) flushes denormal inputs to zero
        assert not got[3].any(), "row 3's denormal products were not flushed"
        got, want = np.delete(got, 3, axis=0), np.delete(want, 3, axis=0)
        _same_bits(got, want, "float32", signed_zero=False)
        return
    _same_bits(got, want, "float32", signed_zero=False)
    assert np.isnan(want[0]).all() and np.isinf(want[1]).all() and not np.isfinite(want[2]).any()
    assert 0 < np.abs(want[3]).max() < (2.0**-100 if dtype == "bfloat16" else 2.0**-8)   # denormals in
