"""The GPU runner on a real GPU: right, wrong and silent kernels, a fault, a hang, two launches with a workspace.
Skipped without a GPU (conftest.py)."""
from __future__ import annotations

import numpy as np
import pytest

from ansorc.targets.cuda import measure_samples as cuda_samples
from ansorc.targets.cuda.measure_runner import CudaBackend, CudaRunner, CudaRunnerConfig
from ansorc.measure.errors import MeasureErrorNo
from ansorc.targets.cuda.measure_nvcc import build_cuda, nvcc_path

M = N = K = 256


@pytest.fixture(scope="module")
def task():
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    b = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    return a, b, a @ b


@pytest.fixture(scope="module")
def runner(task):
    r = CudaRunner(CudaRunnerConfig(timeout=5.0, repeats=5))
    a, b, c = task
    r.set_task([a, b], [c])
    yield r
    r.close()


@pytest.fixture(scope="module")
def arch(runner):
    return runner.device_limits()["arch"]


def _build(source, arch):
    if nvcc_path() is None:
        pytest.skip("needs nvcc")
    (result,) = build_cuda([source], arch)
    assert result.ok, result.error_msg
    return result


def test_device_limits_are_plausible(runner):
    limits = runner.device_limits()
    assert limits["sm_count"] > 0 and limits["warp_size"] == 32 and limits["max_threads_per_block"] >= 1024
    assert limits["max_shared_per_block_optin"] >= limits["max_shared_per_block"] == 48 * 1024


def test_correct_kernel_passes_and_is_timed(runner, arch):
    (result,) = runner.run([_build(cuda_samples.sgemm(M, N, K), arch)])
    assert result.ok, result.error_msg
    assert len(result.costs) == 5 and result.number >= 1 and not result.lower_bound
    flops = 2 * M * N * K
    assert 0 < result.median and flops / result.median < 2e14  # below any GPU's fp32 peak: a real time


def test_wrong_kernel_is_a_wrong_answer(runner, arch):
    (result,) = runner.run([_build(cuda_samples.sgemm(M, N, K, "wrong"), arch)])
    assert result.error_code == MeasureErrorNo.WRONG_ANSWER and "differ" in result.error_msg


def test_unwritten_output_is_caught_by_the_poison(runner, arch):
    (result,) = runner.run([_build(cuda_samples.sgemm(M, N, K, "nothing"), arch)])
    assert result.error_code == MeasureErrorNo.WRONG_ANSWER and "nan" in result.error_msg.lower()


def test_far_write_is_runtime_device_and_the_next_candidate_runs(runner, arch):
    starts = runner.worker_starts
    bad, good = runner.run([_build(cuda_samples.sgemm(M, N, K, "far"), arch),
                            _build(cuda_samples.sgemm(M, N, K), arch)])
    assert bad.error_code == MeasureErrorNo.RUNTIME_DEVICE and "CUDA_ERROR" in bad.error_msg
    assert good.ok, good.error_msg
    assert runner.worker_starts == starts + 1  # the poisoned context went with its worker


def test_endless_kernel_is_run_timeout_and_the_next_candidate_runs(runner, arch):
    hang, good = runner.run([_build(cuda_samples.spin(M, N, K), arch), _build(cuda_samples.sgemm(M, N, K), arch)])
    assert hang.error_code == MeasureErrorNo.RUN_TIMEOUT
    assert good.ok, good.error_msg


def test_two_launches_with_a_workspace(arch, task):
    a, b, c = task
    with CudaRunner(CudaRunnerConfig(timeout=5.0, repeats=3)) as r:
        r.set_task([a, b], [np.maximum(c, 0)])
        (result,) = r.run([_build(cuda_samples.sgemm_relu(M, N, K), arch)])
        assert result.ok, result.error_msg
        (plain,) = r.run([_build(cuda_samples.sgemm(M, N, K), arch)])  # no relu: negative entries differ
        assert plain.error_code == MeasureErrorNo.WRONG_ANSWER


def test_early_cut_gives_a_lower_bound(runner, arch):
    build = _build(cuda_samples.sgemm(M, N, K), arch)
    (full,) = runner.run([build], early_cut=False)
    (cut,) = runner.run([build], best_seconds=full.median / 100)
    assert cut.ok and cut.lower_bound and len(cut.costs) == 1


def test_backend_builds_checks_limits_and_runs(task):
    a, b, c = task
    if nvcc_path() is None:
        pytest.skip("needs nvcc")
    with CudaBackend(CudaRunner(CudaRunnerConfig(timeout=5.0, repeats=3))) as backend:
        backend.runner.set_task([a, b], [c])
        backend.arch = backend.limits()["arch"]
        results = backend.measure([cuda_samples.sgemm(M, N, K), cuda_samples.sgemm(M, N, K, "wrong")])
        assert results[0].ok and results[1].error_code == MeasureErrorNo.WRONG_ANSWER
