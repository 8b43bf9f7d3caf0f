"""u8 x s8 -> int32 reductions through dot-product instructions (codegen/dot.py, ir/passes/dot.py,
search/dot_rule.py): bit-exact against numpy on random data with the extreme values (255 x -128 saturates
vpmaddubsw's int16 pairs unless split), odd shapes (K not a multiple of 4, N not of the lanes), on AVX2 (run
here), AVX-512 VNNI and AVX-VNNI (compiled here, run where the CPU has them), NEON dotprod (under qemu)."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import ansorc
from ansorc import workloads
from ansorc.codegen.target import Target, cpu_flags, host_isas
from ansorc.ir.program.dag import ComputeDAG
from ansorc.search.default_schedule import default_cpu_schedule

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
AVX2 = pytest.mark.skipif("avx2" not in host_isas(), reason="no AVX2 on this machine")


def _extreme(rng, shape, dtype):
    """Random values with whole rows / columns of the type's extremes."""
    info = np.iinfo(dtype)
    x = rng.integers(info.min, int(info.max) + 1, shape, dtype=dtype)
    x.reshape(-1, shape[-1])[0, :] = info.max
    x.reshape(-1, shape[-1])[-1, :] = info.min
    x[..., 0] = info.max if dtype == np.uint8 else info.min
    return x


def _matmul_inputs(m, n, k, seed=0):
    rng = np.random.default_rng(seed)
    a, b = _extreme(rng, (m, k), np.uint8), _extreme(rng, (k, n), np.int8)
    b[:, 1 % n] = 127
    return a, b, a.astype(np.int64) @ b.astype(np.int64)


def _conv_want(data, kernel, stride, pad):
    d = np.pad(data.astype(np.int64), ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    kh, kw, _, co = kernel.shape
    oh, ow = (d.shape[1] - kh) // stride + 1, (d.shape[2] - kw) // stride + 1
    out = np.zeros((d.shape[0], oh, ow, co), np.int64)
    for r in range(kh):
        for c in range(kw):
            out += d[:, r:r + stride * oh:stride, c:c + stride * ow:stride, :] @ kernel[r, c].astype(np.int64)
    return out


def _build(tensors, target, constants=()):
    dag = ComputeDAG(tensors, constants=list(constants))
    return ansorc.build(dag, default_cpu_schedule(dag, target), target=target)


@AVX2
@pytest.mark.parametrize("m, n, k", [(64, 64, 64), (13, 37, 67), (5, 8, 4), (1, 3, 1), (33, 100, 129)])
def test_matmul_u8s8_is_exact_on_avx2(m, n, k):
    kern = _build(workloads.matmul_u8s8(m, n, k), "avx2")
    a, b, want = _matmul_inputs(m, n, k)
    np.testing.assert_array_equal(np.asarray(kern(a, b)), want)
    if n >= 8:   # the AVX2 path ran (a narrower last column tile may fall back to per-lane code)
        assert "ansorc_dot_avx2_u8s8(" in kern.source


@AVX2
@pytest.mark.parametrize("unroll", [True, False])
def test_a_hand_schedule_runs_the_instruction_with_the_group_written_out_or_a_loop(unroll):
    """The pass finds G steps written out (an unrolled k.1) or as a loop of G around the vector loop."""
    from ansorc.ir.schedule.state import State
    from ansorc.ir.schedule.steps import Annotate, CacheRead, CacheWrite, ComputeAt, Reorder, Split
    m, n, k = 13, 37, 67
    dag = ComputeDAG(workloads.matmul_u8s8(m, n, k))
    steps = [CacheRead("B", "local", ("C",), 8, 4), CacheWrite("C", "local"), Split("C", "i", (4,)),
             Split("C", "j", (16,)), Reorder("C", ("i.0", "j.0", "i.1", "j.1")), ComputeAt("C.local", "C", "j.0"),
             Split("C.local", "k", (4,)), Split("C.local", "j", (8,)),
             Reorder("C.local", ("k.0", "i", "j.0", "k.1", "j.1")), Annotate("C.local", "i", "unroll"),
             Annotate("C.local", "j.0", "unroll"), Annotate("C.local", "j.1", "vectorize")]
    steps += [Annotate("C.local", "k.1", "unroll")] if unroll else []
    kern = ansorc.build(dag, State.initial(dag).apply_steps(steps), target="avx2")
    assert "ansorc_dot_avx2_u8s8(" in kern.source
    a, b, want = _matmul_inputs(m, n, k)
    np.testing.assert_array_equal(np.asarray(kern(a, b)), want)


@AVX2
def test_constant_weights_are_packed_once_and_stay_exact():
    m, n, k = 24, 40, 36
    kern = _build(workloads.matmul_u8s8(m, n, k), "avx2", constants=["B"])
    assert kern.source_obj.prepared and "ansorc_dot_avx2_u8s8(" in kern.source
    a, b, want = _matmul_inputs(m, n, k, seed=1)
    for _ in range(2):
        np.testing.assert_array_equal(np.asarray(kern(a, b)), want)
    a2, b2, want2 = _matmul_inputs(m, n, k, seed=2)
    np.testing.assert_array_equal(np.asarray(kern(a2, b2)), want2)


@AVX2
@pytest.mark.parametrize("shape", [(1, 9, 9, 8, 16, 3, 1, 1), (1, 7, 7, 5, 12, 3, 2, 1), (2, 6, 6, 16, 8, 1, 1, 0)])
def test_conv2d_u8s8_is_exact_on_avx2(shape):
    n, h, w, ci, co, kk, stride, pad = shape
    kern = _build(workloads.conv2d_u8s8(*shape), "avx2")
    rng = np.random.default_rng(3)
    data, kernel = _extreme(rng, (n, h, w, ci), np.uint8), _extreme(rng, (kk, kk, ci, co), np.int8)
    np.testing.assert_array_equal(np.asarray(kern(data, kernel)), _conv_want(data, kernel, stride, pad))
    assert "ansorc_dot_" in kern.source


def _compiles(target_name: str, tensors) -> str:
    """The kernel's C for the target, compiled to an object file here (it need not run): the C text."""
    target = Target.from_name(target_name)
    src = ansorc.generate_source(tensors, default_cpu_schedule(ComputeDAG(tensors), target), target=target)
    out = subprocess.run([target.cc, "-c", "-x", "c", "-o", "/dev/null", *target.flags, "-"], input=src.code,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    return src.code


@pytest.mark.parametrize("target, intrinsic, feature", [("avx512-vnni", "_mm512_dpbusd_epi32", "avx512_vnni"),
                                                         ("avx2-vnni", "_mm256_dpbusd_avx_epi32", "avx_vnni"),
                                                         ("avx512-bf16", "_mm512_dpbf16_ps", "avx512_bf16")])
def test_vnni_and_bf16_kernels_compile_and_run_where_the_cpu_has_them(target, intrinsic, feature):
    bf16 = feature == "avx512_bf16"
    tensors = (workloads.matmul_bf16 if bf16 else workloads.matmul_u8s8)(21, 48, 70)
    assert intrinsic in _compiles(target, tensors)
    if not Target.from_name(target).runs_here():
        pytest.skip(f"compiled only: this CPU lacks {feature} (cpuinfo), so the {target} kernel cannot run here")
    kern = _build(tensors, target)
    if bf16:   # bfloat16 as its bits; the instruction's products are exact, its sums round (and flush denormals)
        from ansorc.ir.program.convert import to_bfloat16
        rng = np.random.default_rng(4)
        a, b = (to_bfloat16(rng.standard_normal(s).astype(np.float32)) for s in ((21, 70), (70, 48)))
        up = [(x.astype(np.uint32) << 16).view(np.float32) for x in (a, b)]
        np.testing.assert_allclose(np.asarray(kern(a, b)), up[0] @ up[1], rtol=1e-4, atol=1e-4)
        return
    a, b, want = _matmul_inputs(21, 48, 70)
    np.testing.assert_array_equal(np.asarray(kern(a, b)), want)


def test_native_picks_the_cpus_dot_instruction():
    src = ansorc.generate_source(workloads.matmul_u8s8(16, 64, 32),
                                 default_cpu_schedule(ComputeDAG(workloads.matmul_u8s8(16, 64, 32)), "native"))
    flags = cpu_flags()
    want = "vnni512" if "avx512_vnni" in flags and "avx512f" in flags else \
        "avxvnni" if "avx_vnni" in flags and "avx512f" not in flags else "avx2" if "avx2" in flags else None
    if want is None:
        pytest.skip("neither AVX2 nor VNNI on this machine")
    assert f"ansorc_dot_{want}_u8s8(" in src.code


def test_neon_dotprod_kernels_are_exact_under_qemu():
    from ansorc.measure.cross import build_programs, run_program
    missing = Target.from_name("neon-dot").missing_tools()
    if missing:
        pytest.skip(f"NEON cross-check needs {', '.join(missing)}")
    shapes = [(13, 37, 67), (8, 16, 32)]
    srcs = []
    for m, n, k in shapes:
        tensors = workloads.matmul_u8s8(m, n, k)
        srcs.append(ansorc.generate_source(tensors, default_cpu_schedule(ComputeDAG(tensors), "neon-dot"),
                                           f"dot{m}", "neon-dot"))
    assert all("vdotq_s32(" in s.code and "ansorc_dot_neondot_u8s8(" in s.code for s in srcs)
    for (m, n, k), prog in zip(shapes, build_programs(srcs, "neon-dot")):
        assert prog.path is not None, prog.error[:800]
        a, b, want = _matmul_inputs(m, n, k)
        [out] = run_program(prog, [a, b], "neon-dot")
        np.testing.assert_array_equal(out, want)


@AVX2
@pytest.mark.parametrize("name, args", [("matmul", (19, 40, 37)), ("conv", (1, 6, 6, 8, 16, 3, 1, 1))])
def test_random_tuned_programs_stay_exact(tmp_path, name, args):
    tensors = workloads.matmul_u8s8(*args) if name == "matmul" else workloads.conv2d_u8s8(*args)
    log = str(tmp_path / "log.jsonl")
    ansorc.tune(tensors, trials=8, log=log, target="avx2",
                options=ansorc.TuneOptions(per_round=4, model="random", retime_top=0, progress=False))
    from ansorc.measure.record import load
    recs = load(log)
    assert len(recs) == 8 and all(r.error_code == 0 for r in recs), [r.error_msg[:300] for r in recs]
    assert any(s[0] == "CHR" and s[4:] == [8, 4] for r in recs for s in r.steps)   # grouped copies were measured
    kern = ansorc.compile(tensors, trials=8, log=log, target="avx2")   # the logged best; nothing more measured
    rng = np.random.default_rng(5)
    if name == "matmul":
        a, b, want = _matmul_inputs(*args)
        np.testing.assert_array_equal(np.asarray(kern(a, b)), want)
    else:
        n, h, w, ci, co, kk, stride, pad = args
        data, kernel = _extreme(rng, (n, h, w, ci), np.uint8), _extreme(rng, (kk, kk, ci, co), np.int8)
        np.testing.assert_array_equal(np.asarray(kern(data, kernel)), _conv_want(data, kernel, stride, pad))
