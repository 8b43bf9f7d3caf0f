"""Issue 12 row 5 for CUDA kernels: an output sharing memory with another argument is refused before any GPU
work (numpy arrays by their buffers, GPU arrays by their device address ranges); no GPU needed."""
import numpy as np
import pytest

from ansorc.targets.cuda import kernel as cuda_kernel
from ansorc.codegen.source import ArgSpec, Source
from ansorc.targets.cuda.kernel import CudaKernel, CudaKernelError


class GpuArray:
    """Just enough of __cuda_array_interface__ for the checks: a float32 array at a device address."""

    def __init__(self, ptr: int, shape=(64,)):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": "<f4", "data": (ptr, False), "version": 3,
                                         "strides": None}


class Reached(Exception):
    pass


@pytest.fixture
def kern(monkeypatch):
    def no_device():
        raise Reached
    monkeypatch.setattr(cuda_kernel, "_device", no_device)   # the checks passed: the call would now use the GPU
    args = (ArgSpec("A", (64,), "float32", False), ArgSpec("B", (64,), "float32", False),
            ArgSpec("C", (64,), "float32", True))
    return CudaKernel(Source("", "add", args, "cuda"), "/nonexistent.cubin")


def test_numpy_output_aliasing_an_input_is_refused(kern):
    a, b = np.ones(64, np.float32), np.ones(64, np.float32)
    with pytest.raises(CudaKernelError, match=r"output C overlaps argument 0 \(A\)"):
        kern(a, b, a)
    base = np.zeros(128, np.float32)
    with pytest.raises(CudaKernelError, match=r"output C overlaps argument 1 \(B\)"):
        kern(a, base[:64], base[32:96])
    with pytest.raises(Reached):
        kern(a, base[:64], base[64:])


def test_gpu_output_overlapping_an_input_is_refused(kern):
    with pytest.raises(CudaKernelError, match=r"output C overlaps argument 0 \(A\)"):
        kern(GpuArray(4096), GpuArray(8192), GpuArray(4096 + 255))   # 64 floats from 4096 end at 4352
    with pytest.raises(Reached):
        kern(GpuArray(4096), GpuArray(8192), GpuArray(4096 + 256))
    with pytest.raises(Reached):   # host and device memory never alias
        kern(np.ones(64, np.float32), GpuArray(8192), GpuArray(4096))
