"""The GPU's measurement backend for tuning on this machine: nvcc and the GPU runner (a worker process; CUDA is
never initialised in the tuning process)."""
from __future__ import annotations


def cuda_backend(target, options):
    from ...search.tuner import TargetUnavailableError
    import ansorc.targets.cuda.measure_driver as measure_driver   # looked up when called: tests replace it
    from .measure_runner import CudaBackend, CudaRunner, CudaRunnerConfig
    if not measure_driver.available():
        raise TargetUnavailableError(f"target {target.name!r} needs an NVIDIA GPU and its driver (libcuda.so.1), "
                                     "and this machine has none; compile with trials=0, or tune on a GPU machine")
    return CudaBackend(CudaRunner(CudaRunnerConfig(rtol=options.runner.rtol, atol=options.runner.atol)), target.arch)
