"""CudaKernel: a compiled CUDA program called from Python.

Arguments are inputs then (optionally) outputs, as for CPU kernels. Each may be a numpy array (copied to the
GPU; outputs copied back) or any object with `__cuda_array_interface__` (PyTorch, CuPy, pycuda, Numba arrays
on the GPU: used in place, no copy). Kernels run on the legacy default stream unless `stream=` gives a CUDA
stream handle (e.g. `torch.cuda.current_stream().cuda_stream`); with GPU outputs the call returns without
waiting, as a library call on a stream does. CUDA is initialised in this process at the first call.
"""
from __future__ import annotations

import numpy as np

from ...codegen.source import Source
from ...errors import AnsorcError
from ...ir.program.dtypes import np_dtype as numpy_dtype

_DEVICE = None


def _device():
    global _DEVICE
    if _DEVICE is None:
        from .measure_driver import CudaError, Device
        try:
            _DEVICE = Device()
        except (OSError, CudaError) as e:
            raise CudaKernelError(f"a CUDA kernel needs an NVIDIA GPU and its driver (libcuda.so.1): {e}") from None
    return _DEVICE


class CudaKernelError(AnsorcError, ValueError):
    """Bad arguments for a CUDA kernel, or a program nvcc could not build."""


def gpu_pointer(obj, spec) -> int | None:
    """The device pointer of a GPU array after checking shape, dtype and layout; None for a host array."""
    iface = getattr(obj, "__cuda_array_interface__", None)
    if iface is None:
        return None
    shape, typestr = tuple(iface["shape"]), np.dtype(iface["typestr"])
    if shape != tuple(spec.shape) or typestr != np.dtype(numpy_dtype(spec.dtype)):
        raise CudaKernelError(f"argument {spec.name}: a GPU array of shape {shape} and dtype {typestr}; the kernel "
                              f"takes shape {tuple(spec.shape)} and dtype {spec.dtype}")
    strides = iface.get("strides")
    if strides is not None and tuple(strides) != tuple(np.empty(shape, typestr).strides):
        raise CudaKernelError(f"argument {spec.name}: the GPU array is not C-contiguous; pass .contiguous()")
    return int(iface["data"][0])


def _host_array(obj, spec) -> np.ndarray:
    arr = np.asarray(obj)
    if arr.shape != tuple(spec.shape) or arr.dtype != np.dtype(numpy_dtype(spec.dtype)):
        raise CudaKernelError(f"argument {spec.name}: shape {arr.shape} and dtype {arr.dtype}; the kernel takes "
                              f"shape {tuple(spec.shape)} and dtype {spec.dtype}")
    return arr


def _device_range(obj, spec):
    """(first byte, end byte) of a GPU array's memory; None for a host object."""
    iface = getattr(obj, "__cuda_array_interface__", None)
    if iface is None:
        return None
    start = int(iface["data"][0])
    return start, start + spec.size * np.dtype(numpy_dtype(spec.dtype)).itemsize


def _overlap(a, b, spec_a, spec_b) -> bool:
    ra, rb = _device_range(a, spec_a), _device_range(b, spec_b)
    if ra is not None and rb is not None:
        return ra[0] < rb[1] and rb[0] < ra[1]
    return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.may_share_memory(a, b)


def check_no_overlap(args, specs, name: str) -> None:
    """Kernel arguments are `restrict`, and outputs are copied back one by one: no output may share memory
    with another argument (GPU arrays compared by device address range, numpy arrays by their buffers)."""
    for j, out in enumerate(args):
        if not specs[j].is_output:
            continue
        for k, other in enumerate(args):
            if k != j and _overlap(out, other, specs[j], specs[k]):
                raise CudaKernelError(f"{name}: output {specs[j].name} overlaps argument {k} ({specs[k].name}) "
                                      "in memory; pass separate arrays")


class CudaKernel:
    def __init__(self, source: Source, cubin_path: str, spec=None):
        if source.lang != "cuda":
            raise CudaKernelError(f"{source.entry}: not a CUDA program")
        self.source, self.cubin_path, self.spec = source, cubin_path, spec
        self._functions = None

    @property
    def name(self) -> str:
        return self.source.entry

    def _load(self, dev):
        if self._functions is None:
            with open(self.cubin_path, "rb") as f:
                module = dev.load_module(f.read())
            self._functions = [dev.function(module, launch.kernel) for launch in self.source.launches]
        return self._functions

    def __call__(self, *args, stream=None):
        src = self.source
        n_in, n_all = len(src.inputs), len(src.args)
        if len(args) not in (n_in, n_all):
            raise CudaKernelError(f"{self.name} takes {n_in} inputs (and optionally {n_all - n_in} outputs), "
                                  f"got {len(args)} arguments")
        check_no_overlap(args, src.args, self.name)
        dev = _device()
        functions = self._load(dev)
        owned, pointers, copy_back, results = [], [], [], []
        try:
            for k, spec in enumerate(src.args):
                given = args[k] if k < len(args) else None
                ptr = gpu_pointer(given, spec) if given is not None else None
                if ptr is None:
                    host = _host_array(given, spec) if given is not None else \
                        np.empty(spec.shape, numpy_dtype(spec.dtype))
                    ptr = dev.alloc(host.nbytes)
                    owned.append(ptr)
                    if not spec.is_output:
                        dev.htod(ptr, host)
                    else:
                        copy_back.append((host, ptr))
                if spec.is_output:
                    results.append(given if given is not None else host)
                pointers.append(ptr)
            for ws in src.workspaces:
                ptr = dev.alloc(ws.size * np.dtype(numpy_dtype(ws.dtype)).itemsize)
                owned.append(ptr)
                pointers.append(ptr)
            handle = dev.ffi.cast("CUstream", stream or 0)
            for fn, launch in zip(functions, src.launches):
                dev.launch(fn, launch.grid, launch.block, launch.shared_bytes, handle,
                           [pointers[i] for i in launch.args])
            if copy_back or owned:
                dev.synchronize()
            for host, ptr in copy_back:
                if not host.flags.writeable or not host.flags.c_contiguous:
                    raise CudaKernelError(f"{self.name}: an output array must be writable and C-contiguous")
                dev.dtoh(host, ptr)
        finally:
            for ptr in owned:
                dev.free(ptr)
        return results[0] if len(results) == 1 else tuple(results)


def build_cuda_kernel(dag, state, target, name: str = "kernel") -> CudaKernel:
    """Render `state` for the CUDA target, build its cubin with nvcc and wrap it (no GPU needed until a call)."""
    from ...codegen.pipeline import render, resolve_target
    from .measure_nvcc import build_cuda
    tgt = resolve_target(target)
    src = render(dag, state, name, tgt)
    [res] = build_cuda([src], tgt.arch)
    if not res.ok:
        raise CudaKernelError(res.error_msg)
    return CudaKernel(src, res.lib_path, {"target": tgt.name, "arch": tgt.arch, "state": state})


def cuda_schedule(dag, trials: int, log: str | None, target: str, options=None):
    """The GPU program to build: tuned (a GPU is needed), the best logged, or the untuned default."""
    from ...autotune import NoRecordError
    from ...ir.schedule.state import replay
    from ...ir.schedule.steps import steps_from_json
    from ...measure.record import best as best_records, load as load_records
    from ...search.task import SearchTask
    from ...search.tuner import tune
    from .search_policy import default_gpu_schedule
    task = SearchTask(dag, target)
    if trials > 0:
        res = tune(task, trials=trials, log=log, options=options)
        if res.best_state is None:
            raise NoRecordError("tuning measured no valid program; see the log for the errors")
        return res.best_state
    recs = best_records(load_records(log), dag.workload_key, target, k=1) if log else []
    return replay(dag, steps_from_json(recs[0].steps)) if recs else default_gpu_schedule(task)


def compile_cuda(dag, trials: int, log, target: str, name: str, options) -> CudaKernel:
    """ansorc.compile on a CUDA target (the plug-in's kernel loader)."""
    return build_cuda_kernel(dag, cuda_schedule(dag, trials, log, target, options), target, name)


__all__ = ["CudaKernel", "CudaKernelError", "gpu_pointer", "build_cuda_kernel", "cuda_schedule", "compile_cuda"]
