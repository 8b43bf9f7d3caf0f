"""Targets: names, native detection, flags; NEON kernels cross-compiled and checked under qemu."""
import numpy as np
import pytest

import ansorc
from ansorc import te, workloads
from ansorc.api import BuildError, generate_source
from ansorc.codegen import target as tmod
from ansorc.codegen.cross import driver
from ansorc.measure.cross import build_programs, run_program
from ansorc.codegen.target import Target, host_arch, host_isas
from ansorc.ir.schedule.steps import Annotate
from ansorc.measure.builder import DEFAULT_CFLAGS

from .test_simd import compare, programs

NEON_PROGRAMS_PER_OP = 2


def test_named_targets():
    lanes = {"avx512": 16, "avx2": 8, "neon": 4, "generic": 4}
    for name, n in lanes.items():
        t = Target.from_name(name)
        assert t.isa == name and t.lanes("float32") == n and t.lanes("float64") == n // 2
        assert t.num_cores >= 1 and "-O3" in t.flags and "-shared" in t.flags and "-fopenmp" in t.flags
    assert "-mavx512f" in Target.from_name("avx512").flags and "-mfma" in Target.from_name("avx512").flags
    assert "-mavx2" in Target.from_name("avx2").flags
    neon = Target.from_name("neon")
    assert neon.arch == "aarch64" and "-march=armv8-a" in neon.flags
    if host_arch() == "x86_64":
        assert neon.cc == "aarch64-linux-gnu-gcc" and neon.run_prefix[0] == "qemu-aarch64"
        assert "-static" in neon.exe_flags and neon.is_cross and not neon.runs_here()
    with pytest.raises(ValueError, match="unknown target"):
        Target.from_name("sse9")
    t = Target.from_name("avx2")
    assert Target.from_name(t) is t


def test_native_detection():
    native = Target.from_name("native")
    assert native.flags == DEFAULT_CFLAGS   # the builder's default and native share their cache entries
    assert native.isa == host_isas()[0] and native.runs_here()
    if host_arch() == "x86_64":
        flags = tmod.cpu_flags()
        expect = "avx512" if "avx512f" in flags else "avx2" if {"avx2", "fma"} <= flags else "generic"
        assert native.isa == expect
        assert native.vector_bytes == {"avx512": 64, "avx2": 32, "generic": 16}[expect]
    elif host_arch() == "aarch64":
        assert native.isa == "neon"


def test_build_for_named_isa_and_refuse_foreign():
    A = te.placeholder((4, 40), name="A")
    B = te.compute((4, 40), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    steps = [Annotate("B", "j", "vectorize")]
    a = np.random.rand(4, 40).astype("float32")
    for isa in host_isas():
        kern = ansorc.build([A, B], steps, target=isa)
        np.testing.assert_allclose(kern(a), a * 2 + 1, rtol=1e-6)
    foreign = "neon" if host_arch() == "x86_64" else "avx512"
    with pytest.raises(BuildError, match="cannot run in this process"):
        ansorc.build([A, B], steps, target=foreign)
    assert "vfmaq_f32" in generate_source([A, B], steps, target="neon").code


def _need_cross():
    missing = Target.from_name("neon").missing_tools()
    if missing:
        pytest.skip(f"NEON cross-check needs {', '.join(missing)} "
                    "(apt-get install gcc-aarch64-linux-gnu qemu-user)")


def test_driver_round_trip_float64_and_int32():
    _need_cross()
    X = te.placeholder((3, 10), "float64", "X")
    Y = te.compute((3, 10), lambda i, j: X[i, j] * X[i, j] + 1.0, name="Y")
    N = te.placeholder((3, 12), "int32", "N")
    M = te.compute((3, 12), lambda i, j: te.max(N[i, j] * 3 - 1, N[i, j]), name="M")
    src_x = generate_source([X, Y], [Annotate("Y", "j", "vectorize")], "fx", "neon")
    src_n = generate_source([N, M], [Annotate("M", "j", "vectorize")], "fn", "neon")
    assert "float64x2_t" in src_x.code or "vfmaq_f64" in src_x.code
    assert "int32x4_t" in src_n.code or "vmaxq_s32" in src_n.code
    assert "int main" in driver(src_x)
    px, pn = build_programs([src_x, src_n], "neon")
    x = np.random.rand(3, 10)
    n = np.random.randint(-8, 9, (3, 12)).astype(np.int32)
    [y] = run_program(px, [x], "neon")
    [m] = run_program(pn, [n], "neon")
    np.testing.assert_allclose(y, x * x + 1.0, rtol=1e-12)
    np.testing.assert_array_equal(m, np.maximum(n * 3 - 1, n))


def test_neon_random_programs_of_every_operator_under_qemu():
    _need_cross()
    jobs = []
    for name in workloads.WORKLOADS:
        dag, states, inputs, expected = programs(name)
        for k, st in enumerate(states[:NEON_PROGRAMS_PER_OP]):
            jobs.append((f"{name}#{k}", dag, inputs, expected, generate_source(dag, st, f"p{k}", "neon")))
    progs = build_programs([j[-1] for j in jobs], "neon")
    errors = []
    for (what, dag, inputs, expected, src), prog in zip(jobs, progs):
        if prog.path is None:
            errors.append(f"{what}: build failed: {prog.error[:800]}")
            continue
        outs = run_program(prog, [inputs[t.name] for t in dag.inputs], "neon")
        errors += compare(dag, outs, expected, what)
    assert not errors, "\n".join(errors)
    assert sum("vld1q_f32" in j[-1].code for j in jobs) >= len(jobs) // 4


def test_neon_default_programs_of_every_operator_under_qemu():
    """`compile --target neon --trials 0` without a log exports the default program: each operator's is right."""
    _need_cross()
    from ansorc.ir.program.evaluate import evaluate, random_inputs
    from ansorc.search.default_schedule import default_cpu_schedule
    jobs = []
    for name in workloads.WORKLOADS:
        dag = ansorc.ComputeDAG(workloads.smallest(name))
        inputs = random_inputs(dag.inputs, 0)
        state = default_cpu_schedule(dag, "neon")
        jobs.append((name, dag, inputs, evaluate(list(dag.outputs), inputs), generate_source(dag, state, "d", "neon")))
    errors = []
    for (what, dag, inputs, expected, src), prog in zip(jobs, build_programs([j[-1] for j in jobs], "neon")):
        if prog.path is None:
            errors.append(f"{what}: build failed: {prog.error[:800]}")
            continue
        errors += compare(dag, run_program(prog, [inputs[t.name] for t in dag.inputs], "neon"), expected, what)
    assert not errors, "\n".join(errors)
