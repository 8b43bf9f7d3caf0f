"""nvcc builds of CUDA sources: cubins for two architectures, ptxas reports, errors that reproduce, the cache,
the limit check, and the host-launcher library. Needs nvcc, not a GPU."""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import replace

import pytest

from ansorc.codegen.source import Launch, Source
from ansorc.targets.cuda import measure_samples as cuda_samples
from ansorc.targets.cuda import measure_nvcc as nvcc
from ansorc.measure.errors import MeasureErrorNo

pytestmark = pytest.mark.skipif(nvcc.nvcc_path() is None, reason="needs nvcc")


@pytest.fixture
def build_dir(tmp_path):
    return tmp_path / "cuda_builds"


@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_two_kernel_program_builds_and_reports_resources(build_dir, arch):
    (result,) = nvcc.build_cuda([cuda_samples.sgemm_relu()], arch, build_dir=build_dir)
    assert result.ok, result.error_msg
    assert result.lib_path.endswith(".cubin") and open(result.lib_path, "rb").read(4) == b"\x7fELF"
    assert set(result.resources) == {"sgemm_64x64", "relu"}
    gemm = result.resources["sgemm_64x64"]
    assert gemm["registers"] > 0 and result.resources["relu"]["registers"] > 0
    assert gemm["shared_bytes"] == 2 * 16 * 64 * 4  # As and Bs, as declared
    assert result.resources["relu"]["shared_bytes"] == 0
    assert gemm["spill_stores"] == 0 and result.warning == "" and result.arch == arch
    assert result.build_seconds > 0 and not result.cached


def test_ptxas_report_parses_spills_and_constants():
    out = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'sp' for 'sm_80'
ptxas info    : Function properties for sp
    26184 bytes stack frame, 26216 bytes spill stores, 63576 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers, 26184 bytes cumulative stack size, 364 bytes cmem[0]
ptxas info    : Compiling entry function 'k1' for 'sm_80'
ptxas info    : Function properties for k1
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 1 barriers, 4096 bytes smem, 368 bytes cmem[0]
"""
    report = nvcc.parse_ptxas(out)
    assert report["sp"] == {"registers": 32, "shared_bytes": 0, "stack_bytes": 26184, "spill_stores": 26216,
                            "spill_loads": 63576, "constant_bytes": 364}
    assert report["k1"]["registers"] == 12 and report["k1"]["shared_bytes"] == 4096
    assert "sp: 26216 B spill stores" in nvcc.spill_warning(report)


def test_syntax_error_is_compile_device_with_a_repro_that_fails_the_same_way(build_dir):
    broken = Source('extern "C" __global__ void k(float* a) { a[0] = undefined_name; }', "k_host", (), "cuda")
    (result,) = nvcc.build_cuda([broken], "sm_90", build_dir=build_dir)
    assert not result.ok and result.error_code == MeasureErrorNo.COMPILE_DEVICE and result.lib_path is None
    assert "undefined_name" in result.error_msg and result.repro_command in result.error_msg
    rerun = subprocess.run(result.repro_command, shell=True, capture_output=True, text=True)
    assert rerun.returncode != 0 and "undefined_name" in rerun.stdout + rerun.stderr
    assert not list(build_dir.glob("*.cubin"))  # failures are not cached


def test_a_c_source_is_refused(build_dir):
    (result,) = nvcc.build_cuda([Source("int f(void) { return 0; }", "f", ())], "sm_90", build_dir=build_dir)
    assert result.error_code == MeasureErrorNo.COMPILE_DEVICE and "lang" in result.error_msg


def test_cache_returns_the_same_cubin_without_nvcc(build_dir, monkeypatch):
    src = cuda_samples.sgemm(128, 128, 64)
    (first,) = nvcc.build_cuda([src], "sm_90", build_dir=build_dir)
    calls = []
    real = nvcc.run_compiler
    monkeypatch.setattr(nvcc, "run_compiler", lambda *a: calls.append(a) or real(*a))
    again, twin = nvcc.build_cuda([src, replace(src, entry="other")], "sm_90", build_dir=build_dir)
    assert calls == [] and again.cached and again.lib_path == first.lib_path
    assert again.resources == first.resources and twin.source.entry == "other" and twin.lib_path == first.lib_path
    (other_arch,) = nvcc.build_cuda([src], "sm_80", build_dir=build_dir)  # the arch is part of the key
    assert len(calls) == 1 and other_arch.lib_path != first.lib_path


def test_parallel_batch_keeps_order(build_dir):
    sources = [cuda_samples.sgemm(64 * i, 64, 16) for i in (1, 2, 3)]
    results = nvcc.build_cuda(sources, "sm_90", build_dir=build_dir, n_parallel=3)
    assert [r.source for r in results] == sources and all(r.ok for r in results)
    assert len({r.lib_path for r in results}) == 3


def test_timeout_is_build_timeout(build_dir):
    (result,) = nvcc.build_cuda([cuda_samples.sgemm(64, 64, 16)], "sm_90", timeout=0.01, build_dir=build_dir)
    assert result.error_code == MeasureErrorNo.BUILD_TIMEOUT and "repro:" in result.error_msg


def test_launches_over_the_limits_are_rejected(build_dir):
    (result,) = nvcc.build_cuda([cuda_samples.sgemm(128, 128, 64)], "sm_90", build_dir=build_dir)
    limits = nvcc.ARCH_LIMITS["sm_90"]
    assert nvcc.check_limits(result.resources, limits, result.source.launches) is None
    regs = result.resources["sgemm_64x64"]["registers"]
    too_many_threads = Launch("sgemm_64x64", (1, 1, 1), (1024, 2, 1), (0, 1, 2))
    assert "threads per block" in nvcc.check_limits(result.resources, limits, [too_many_threads])
    register_bound = Launch("sgemm_64x64", (1, 1, 1), (65536 // regs + 32, 1, 1), (0, 1, 2))
    assert "registers" in nvcc.check_limits(result.resources, dict(limits, max_threads_per_block=4096),
                                            [register_bound])
    big_dynamic = Launch("sgemm_64x64", (1, 1, 1), (256, 1, 1), (0, 1, 2), shared_bytes=230 * 1024)
    assert "shared memory" in nvcc.check_limits(result.resources, limits, [big_dynamic])
    assert nvcc.check_limits(result.resources, nvcc.ARCH_LIMITS["sm_80"], [big_dynamic]) is not None
    assert "no such kernel" in nvcc.check_limits(result.resources, limits, [replace(big_dynamic, kernel="nope")])
    rejected = nvcc.with_limit_check(replace(result, source=replace(result.source, launches=(too_many_threads,))),
                                     limits)
    assert rejected.error_code == MeasureErrorNo.COMPILE_DEVICE and rejected.lib_path is None


def test_host_launcher_library_links(tmp_path):
    code = cuda_samples.sgemm_code(128, 128, 64) + r"""
#include <cuda_runtime.h>
extern "C" int gemm_host(const float* A, const float* B, float* C, cudaStream_t stream) {
  sgemm_64x64<<<dim3(2, 2), 256, 0, stream>>>(A, B, C);
  return (int)cudaGetLastError();
}
"""
    lib = nvcc.build_cuda_library(Source(code, "gemm_host", (), "cuda"), tmp_path, "sm_90")
    assert lib.name == "libgemm_host.so" and lib.exists()
    nm = shutil.which("nm")
    if nm:
        symbols = subprocess.run([nm, "-D", "--defined-only", str(lib)], capture_output=True, text=True).stdout
        assert " gemm_host" in symbols
