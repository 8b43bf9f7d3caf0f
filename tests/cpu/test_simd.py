"""Explicit SIMD codegen: the vectorize pass, register blocking, and numerics per ISA against numpy."""
import re
import tempfile
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

import ansorc
from ansorc import te, workloads
from ansorc.api import generate_source
from ansorc.codegen import simd
from ansorc.codegen.c import lower_for_target
from ansorc.codegen.target import Target, host_isas
from ansorc.ir.program.dag import ComputeDAG
from ansorc.ir.program.evaluate import evaluate, random_inputs
from ansorc.ir.lowering.lower import lower
from ansorc.ir.schedule.steps import Annotate, ComputeInline, Split
from ansorc.ir.passes.vector import (Broadcast, VBlend, VCompare, VDecl, VFma, VLanes, VLoad, VReduce, VScatter,
                                     VSelect, VStore, format_vstmt, top_exprs, vwalk, walk_all)
from ansorc.ir.program.expr import Const, Select
from ansorc.ir.lowering.stmt import For, Store
from ansorc.kernel import Kernel
from ansorc.measure.builder import build
from ansorc.search.annotate import sample
from ansorc.search.task import SearchTask

from .compilers import COMPILERS
from .test_schedules import ssrsrs_gmm_steps

PROGRAMS_PER_OP = 5
CANDIDATES_PER_OP = 12   # sampled; the PROGRAMS_PER_OP cheapest to compile are kept (test time)


def needs(isa):
    return pytest.mark.skipif(isa not in host_isas(), reason=f"this CPU cannot run {isa} kernels")


def vector_ir(tensors, steps, isa="avx512"):
    dag = ComputeDAG(tensors)
    return lower_for_target(lower(ansorc.replay(dag, steps), "k"), isa)


def nodes(func, kind):
    out = []
    for s in walk_all(func.body):
        out += [s] if isinstance(s, kind) else []
        for e in top_exprs(s):
            out += [n for n in vwalk(e) if isinstance(n, kind)]
    return out


def check(tensors, steps, isa="native", rtol=1e-4, atol=1e-4):
    """Build for isa, run on random inputs, compare with the numpy evaluator; returns the kernel."""
    dag = ComputeDAG(tensors)
    kern = ansorc.build(tensors, ansorc.replay(dag, steps), target=isa)
    inputs = random_inputs(dag.inputs, 0)
    expected = evaluate(list(dag.outputs), inputs)
    got = kern(*[inputs[t.name] for t in dag.inputs])
    got = got if isinstance(got, tuple) else (got,)
    for t, g in zip(dag.outputs, got):
        np.testing.assert_allclose(g, expected[t.name], rtol=rtol, atol=atol, err_msg=f"output {t.name}")
    return kern


# ----------------------------------------------------------------------------- the vectorize pass

def _elementwise(n, m, dtype="float32"):
    A = te.placeholder((n, m), dtype, "A")
    B = te.compute((n, m), lambda i, j: A[i, j] * A[i, j] + A[i, j], name="B")
    return [A, B]


def test_width_ladder_and_scalar_tail():
    """extent 30 on AVX-512 float32: 16 + 8 + 4 lanes, then 2 scalar iterations."""
    f = vector_ir(_elementwise(8, 30), [Annotate("B", "j", "vectorize")])
    assert sorted(s.value.lanes for s in nodes(f, VStore)) == [4, 8, 16]
    assert len(nodes(f, VFma)) == 3
    tail = [s for s in walk_all(f.body) if isinstance(s, Store)]   # the two scalar iterations, written out
    assert [s.indices[1] for s in tail] == [Const(28, "int32"), Const(29, "int32")]


def test_long_loop_becomes_loop_over_pieces():
    f = vector_ir(_elementwise(2, 1000), [Annotate("B", "j", "vectorize")])
    loops = [s for s in walk_all(f.body) if isinstance(s, For) and s.var.endswith("_c")]
    assert loops and loops[0].extent == 1000 // 16


def test_generic_keeps_scalar_loops():
    f = vector_ir(_elementwise(8, 32), [Annotate("B", "j", "vectorize")], "generic")
    assert not nodes(f, VStore) and any(s.kind == "vectorize" for s in walk_all(f.body) if isinstance(s, For))


def test_nested_vectorize_vectorizes_the_inner_loop():
    steps = [Annotate("B", "i", "vectorize"), Annotate("B", "j", "vectorize")]
    f = vector_ir(_elementwise(8, 32), steps)
    assert nodes(f, VStore) and not any(s.kind == "vectorize" for s in walk_all(f.body) if isinstance(s, For))
    check(_elementwise(8, 32), steps)


def test_strided_read_is_gathered_and_strided_store_scattered():
    A = te.placeholder((32, 16), name="A")
    T = te.compute((16, 32), lambda i, j: A[j, i] + 1.0, name="T")
    f = vector_ir([A, T], [Annotate("T", "j", "vectorize")])
    assert nodes(f, VLanes) and nodes(f, VStore)
    g = vector_ir([A, T], [Annotate("T", "i", "vectorize")])  # T[i, j] with i in the lanes: a scatter
    assert nodes(g, VScatter)
    check([A, T], [Annotate("T", "i", "vectorize")], "native")


def test_vectorized_reduction_is_horizontal():
    A, B, C = workloads.matmul(8, 8, 64)
    steps = [Annotate("C", "k", "vectorize")]
    assert nodes(vector_ir([A, B, C], steps), VReduce)
    check([A, B, C], steps, rtol=1e-4, atol=1e-4)


def test_lane_dependent_guard_has_vector_fast_path():
    A = te.placeholder((5, 100), name="A")
    B = te.compute((5, 100), lambda i, j: A[i, j] * 3.0 - 1.0, name="B")
    steps = [Split("B", "j", (16,)), Annotate("B", "j.1", "vectorize")]  # 100 = 6*16 + 4: j < 100 guards
    f = vector_ir([A, B], steps)
    assert nodes(f, VStore), format_vstmt(f.body)
    check([A, B], steps)


def test_padding_select_stays_lazy():
    data, kernel, conv = workloads.c2d(1, 8, 8, 16, 32, 3, 1, 1)
    steps = [ComputeInline("pad"), Annotate("conv", "co", "vectorize")]
    # co is inner to the reduction; reorder puts it innermost so the padded read varies per output pixel
    f = vector_ir([data, kernel, conv], steps)
    assert nodes(f, VStore)
    check([data, kernel, conv], steps, atol=1e-3)


@pytest.mark.parametrize("dtype", ["float64", "int32"])
def test_other_dtypes(dtype):
    A = te.placeholder((6, 40), dtype, "A")
    B = te.compute((6, 40), lambda i, j: te.max(A[i, j] * A[i, j] - A[i, j], A[i, j]), name="B")
    steps = [Annotate("B", "j", "vectorize")]
    assert nodes(vector_ir([A, B], steps), VStore)
    check([A, B], steps)


def test_int_to_float_cast_and_math():
    A = te.placeholder((4, 48), "int32", "A")
    B = te.compute((4, 48), lambda i, j: te.sqrt(te.abs(A[i, j].astype("float32"))) + te.exp(A[i, j] * 0.1),
                   name="B")
    check([A, B], [Annotate("B", "j", "vectorize")], rtol=1e-5)


# ----------------------------------------------------------------------------- register blocking, tuned GMM

def _gmm_tuned():
    A, B, C = workloads.matmul(256, 256, 256)
    steps = ssrsrs_gmm_steps((2, 4, 8), (2, 1, 32), (16,), 512, 2)   # 8 x 32 register tile
    return [A, B, C], steps


def test_register_tile_lives_in_registers():
    tensors, steps = _gmm_tuned()
    f = vector_ir(tensors, steps)
    decls = nodes(f, VDecl)
    assert decls and len(decls[0].decls) == 16    # 8 rows x 2 vectors of 16
    k1 = [s for s in walk_all(decls[0].body) if isinstance(s, For) and "k_1" in s.var]
    assert k1, format_vstmt(decls[0])
    inside = [n for n in walk_all(k1[0].body) for n in [n, *[x for e in top_exprs(n) for x in vwalk(e)]]]
    tile = [n for n in inside if getattr(n, "buffer", getattr(n, "name", None)) == "C_local"]
    assert not tile, format_vstmt(k1[0])   # no load or store of the tile inside the reduction loop
    assert len(nodes(f, VFma)) == 16


@needs("avx512")
def test_tuned_gmm_source_uses_avx512_fma_without_scalar_inner_loop():
    tensors, steps = _gmm_tuned()
    dag = ComputeDAG(tensors)
    code = generate_source(dag, ansorc.replay(dag, steps), "gmm", "avx512").code
    assert code.count("_mm512_fmadd_ps") == 16 and "__m512 C_local_r0" in code
    assert "#pragma omp simd" not in code
    # the reduction loop body: only register FMAs, no array access to the tile, no nested loop
    body = code.split("for (int32_t C_local_k_1 = 0;")[1].split("\n")[1:]
    body = body[:next(i for i, line in enumerate(body) if line.strip() == "}")]
    assert len(body) == 16 and all(re.match(r"\s*C_local_r\d+ = _mm512_fmadd_ps\(", line) for line in body), body
    check(tensors, steps, "avx512", rtol=1e-4, atol=1e-3)


# ----------------------------------------------------------------------------- random programs of every operator

@lru_cache(maxsize=None)
def programs(name: str, n: int = PROGRAMS_PER_OP):
    """(dag, states, inputs, expected) for n random programs of the smallest shape of workload `name`."""
    dag = ComputeDAG(workloads.smallest(name))
    states = sample(SearchTask(dag), CANDIDATES_PER_OP, seed=7)
    states = sorted(states, key=lambda st: len(generate_source(dag, st, "k", "generic").code))[:n]
    inputs = random_inputs(dag.inputs, 0)
    return dag, tuple(states), inputs, evaluate(list(dag.outputs), inputs)


def compare(dag, outs, expected, what):
    errors = []
    for t, g in zip(dag.outputs, outs):
        if not np.allclose(g, expected[t.name], rtol=1e-4, atol=1e-4):
            errors.append(f"{what}: {t.name} off by {np.abs(g - expected[t.name]).max()}")
    return errors


@pytest.mark.parametrize("cc", COMPILERS)
@pytest.mark.parametrize("isa", ["avx512", "avx2", "generic"])
def test_random_programs_of_every_operator(isa, cc):
    if isa not in host_isas():
        pytest.skip(f"this CPU cannot run {isa} kernels")
    target = Target.from_name(isa, cc)
    jobs = []
    for name in workloads.WORKLOADS:
        dag, states, inputs, expected = programs(name)
        assert len(states) == PROGRAMS_PER_OP
        for k, st in enumerate(states):
            jobs.append((f"{name}#{k}", dag, inputs, expected, generate_source(dag, st, f"p{k}", target)))
    results = build([j[-1] for j in jobs], target_flags=target.flags, cc=target.cc, timeout=120)
    errors = []
    for (what, dag, inputs, expected, src), res in zip(jobs, results):
        if not res.ok:
            errors.append(f"{what}: build failed: {res.error_msg[:800]}")
            continue
        outs = Kernel(src, res.lib_path)(*[inputs[t.name] for t in dag.inputs])
        errors += compare(dag, outs if isinstance(outs, tuple) else (outs,), expected, what)
    assert not errors, "\n".join(errors)
    if isa != "generic":  # the tables are used: some programs carry intrinsics of this ISA
        prefix = {"avx512": "_mm512_", "avx2": "_mm256_"}[isa]
        assert sum(prefix in j[-1].code for j in jobs) >= len(jobs) // 4


def test_tables_are_consistent():
    for isa in simd.ISAS:
        caps = simd.caps(isa)
        for dtype, lanes in caps.types:
            for op in ("load", "store", "set1", "+", "*"):
                assert caps.has(op, dtype, lanes), (isa, op, dtype, lanes)
    assert simd.intrinsic("avx512", "fma", "float32", 16).startswith("_mm512_fmadd_ps")
    assert simd.intrinsic("neon", "fma", "float32", 4).startswith("vfmaq_f32")
    assert simd.vector_type("avx2", "float64", 4) == "__m256d"
    assert not simd.caps("generic").types
    with pytest.raises(NotImplementedError):
        simd.intrinsic("avx2", "fma", "float32", 16)


def test_broadcast_of_invariant_operand():
    tensors, steps = _gmm_tuned()
    f = vector_ir(tensors, steps)
    assert any(isinstance(x.a, Broadcast) and isinstance(x.b, VLoad) for x in nodes(f, VFma))
    assert not nodes(f, VSelect)


# ----------------------------------------------------------------------------- selects on data: mask + blend

def _erf_like(n=100):
    """A select on a float comparison of the data, nested, both arms reading only what the condition reads."""
    A = te.placeholder((3, n), name="A")
    B = te.compute((3, n), lambda i, j: te.if_then_else(
        te.abs(A[i, j]) < 0.5, A[i, j] * 3.0,
        te.if_then_else(A[i, j] < 0.0, -te.exp(A[i, j]), 1.0 / (A[i, j] + 1.0))), name="B")
    return [A, B], [Annotate("B", "j", "vectorize")]


@pytest.mark.parametrize("isa", [pytest.param("avx512", marks=needs("avx512")),
                                 pytest.param("avx2", marks=needs("avx2"))])
def test_data_dependent_select_is_a_blend_and_matches_numpy(isa):
    tensors, steps = _erf_like()
    f = vector_ir(tensors, steps, isa)
    blends = nodes(f, VBlend)
    assert blends and all(isinstance(b.mask, VCompare) for b in blends), format_vstmt(f.body)
    assert any(isinstance(b.f, VBlend) for b in blends)  # the nested select too
    assert not [e for e in nodes(f, VLanes) if any(isinstance(x, Select) for x in vwalk(e))]
    kern = check(tensors, steps, isa, rtol=1e-6, atol=1e-7)
    # NaN compares false (C's ordered <), so NaN lanes take the last arm, as the scalar code does
    x = np.resize(np.array([np.nan, -np.inf, np.inf, -0.0, 0.49, -0.7, 2.5], np.float32), (3, 100))
    want = evaluate([tensors[1]], {"A": x})["B"]
    np.testing.assert_allclose(kern(x), want, rtol=1e-6, equal_nan=True)


def test_select_reading_what_its_condition_does_not_stays_per_lane():
    """Padding-like: an arm reading another tensor (or elsewhere) may be out of bounds when the condition is
    false, so both arms are never evaluated eagerly."""
    A = te.placeholder((3, 64), name="A")
    C = te.placeholder((3, 64), name="C")
    B = te.compute((3, 64), lambda i, j: te.if_then_else(A[i, j] > 0.0, C[i, j], A[i, j]), name="B")
    steps = [Annotate("B", "j", "vectorize")]
    f = vector_ir([A, C, B], steps)
    assert not nodes(f, VBlend)
    check([A, C, B], steps)


def test_neon_blend_templates_compile():
    cc = "aarch64-linux-gnu-gcc"
    import shutil
    import subprocess
    if shutil.which(cc) is None:
        pytest.skip(f"{cc} is not installed")
    tensors, steps = _erf_like()
    code = generate_source(tensors, ansorc.replay(ComputeDAG(tensors), steps), target="neon").code
    assert "vbslq_f32" in code and "vcltq_f32" in code
    src = Path(tempfile.mkdtemp()) / "k.c"
    src.write_text(code)
    cmd = [cc, "-O2", "-std=c99", "-march=armv8-a", "-fopenmp", "-c", str(src), "-o", str(src.with_suffix(".o"))]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:]
