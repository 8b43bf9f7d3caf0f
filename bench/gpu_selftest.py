"""First thing to run on a GPU machine: does the GPU measurement layer work there?

    python bench/gpu_selftest.py

Prints the device's limits; builds a hand-written 64x64-tiled SGEMM (1024^3) with nvcc and runs it through
CudaRunner against numpy's answer (correctness, time, TFLOP/s, next to PyTorch's fp32 matmul in this process);
then a wrong kernel (WRONG_ANSWER), one writing far out of bounds (RUNTIME_DEVICE) followed by a correct one,
a two-launch program with a workspace, and an endless kernel (RUN_TIMEOUT) followed by a correct one.
Ends with `selftest: N passed, M failed` (exit status 1 when any failed).
"""
from __future__ import annotations

import sys
import time
import traceback
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ansorc.targets.cuda import measure_samples as cuda_samples  # noqa: E402
from ansorc.targets.cuda.measure_runner import CudaRunner, CudaRunnerConfig  # noqa: E402
from ansorc.measure.errors import error_name  # noqa: E402
from ansorc.targets.cuda.measure_nvcc import build_cuda, check_limits, nvcc_path  # noqa: E402

SIZE = 1024
checks: list[tuple[str, bool, str]] = []


def check(name: str, ok: bool, detail: str = "") -> bool:
    checks.append((name, bool(ok), detail))
    print(f"[{'PASS' if ok else 'FAIL'}] {name}{': ' + detail if detail else ''}", flush=True)
    return bool(ok)


def build(sources, arch):
    t = time.perf_counter()
    results = build_cuda(sources, arch)
    print(f"nvcc: {len(sources)} programs for {arch} in {time.perf_counter() - t:.1f} s ({nvcc_path()})")
    for r in results:
        if not r.ok:
            print(r.error_msg)
    return results


def torch_gmm_seconds():
    try:
        sys.path.insert(0, str(Path(__file__).parent))
        from gpu_peers import time_torch_case
        return time_torch_case("GMM", (SIZE, SIZE, SIZE))
    except Exception as exc:  # no torch there: the selftest still stands without the comparison
        print(f"(no PyTorch timing: {type(exc).__name__}: {exc})")
        return None


def sgemm_checks(runner: CudaRunner, arch: str) -> None:
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (SIZE, SIZE)).astype(np.float32)
    b = rng.uniform(-1, 1, (SIZE, SIZE)).astype(np.float32)
    runner.set_task([a, b], [(a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)])
    right, wrong, far = build([cuda_samples.sgemm(SIZE, SIZE, SIZE, v) for v in ("right", "wrong", "far")], arch)
    if not check("nvcc builds the SGEMM and its broken variants", right.ok and wrong.ok and far.ok):
        return
    limits = runner.device_limits()
    check("ptxas report within the device limits", check_limits(right.resources, limits, right.source.launches)
          is None, str(right.resources))
    (res,) = runner.run([right], early_cut=False)
    flops = 2.0 * SIZE ** 3
    if check("SGEMM 1024^3 correct", res.ok, error_name(res.error_code) + " " + res.error_msg[:300]):
        print(f"    ansorc runner: {res.median * 1e6:.1f} us median of {len(res.costs)} replays x {res.number} runs, "
              f"{flops / res.median / 1e12:.2f} TFLOP/s; costs {[round(c * 1e6, 1) for c in res.costs]}")
        check("timings are plausible", 0 < min(res.costs) and flops / res.median < 2e14 and
              max(res.costs) < 3 * min(res.costs), f"spread {max(res.costs) / min(res.costs):.2f}x")
    peer = torch_gmm_seconds()
    if peer is not None:
        print(f"    PyTorch fp32 (TF32 off): {peer['fp32_seconds'] * 1e6:.1f} us, {peer['fp32_gflops'] / 1e3:.2f} "
              f"TFLOP/s; TF32 on: {peer['tf32_seconds'] * 1e6:.1f} us")
    results = runner.run([wrong, far, right])
    names = [error_name(r.error_code) for r in results]
    check("wrong kernel -> WRONG_ANSWER", names[0] == "WRONG_ANSWER", results[0].error_msg[:200])
    check("far out-of-bounds write -> RUNTIME_DEVICE", names[1] == "RUNTIME_DEVICE", results[1].error_msg[:200])
    check("correct kernel runs after the fault", names[2] == "NO_ERROR", results[2].error_msg[:200])


def small_checks(arch: str) -> None:
    n = 256
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    relu, spin, plain, silent = build([cuda_samples.sgemm_relu(n, n, n), cuda_samples.spin(n, n, n),
                                       cuda_samples.sgemm(n, n, n), cuda_samples.sgemm(n, n, n, "nothing")], arch)
    with CudaRunner(CudaRunnerConfig(timeout=4.0, repeats=3)) as runner:
        runner.set_task([a, b], [np.maximum(a @ b, 0)])
        (r,) = runner.run([relu])
        check("two launches through a workspace", r.ok, r.error_msg[:200])
        runner.set_task([a, b], [a @ b])
        (r,) = runner.run([plain], early_cut=False)
        replay = r.median * r.number if r.ok else 0.0
        check("a ~10 us kernel is timed in replays of >= ~1 ms", r.ok and replay > 0.5e-3,
              f"{r.median * 1e6:.2f} us x {r.number} runs per replay, costs "
              f"{[round(c * 1e6, 2) for c in r.costs]} {r.error_msg[:200]}")
        (r,) = runner.run([silent])
        check("output never written -> WRONG_ANSWER", error_name(r.error_code) == "WRONG_ANSWER", r.error_msg[:200])
        t = time.perf_counter()
        hang, after = runner.run([spin, plain])
        check("endless kernel -> RUN_TIMEOUT", error_name(hang.error_code) == "RUN_TIMEOUT",
              f"{hang.error_msg[:200]} ({time.perf_counter() - t:.1f} s with the restart)")
        check("correct kernel runs after the timeout", after.ok, after.error_msg[:200])


def main() -> int:
    try:
        with CudaRunner(CudaRunnerConfig(timeout=10.0, repeats=10)) as runner:
            limits = runner.device_limits()
            print("device_limits:", {k: limits[k] for k in sorted(limits)})
            check("device found", limits.get("sm_count", 0) > 0, f"{limits['name']}, {limits['arch']}")
            sgemm_checks(runner, limits["arch"])
        small_checks(limits["arch"])
    except Exception as exc:
        traceback.print_exc()
        check("no unexpected exception", False, f"{type(exc).__name__}: {exc}")
    failed = sum(not ok for _, ok, _ in checks)
    print(f"selftest: {len(checks) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
