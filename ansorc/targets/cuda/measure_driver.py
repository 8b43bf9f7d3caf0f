"""The CUDA driver API through cffi's ABI mode: libcuda.so.1, no compiler, no toolkit, no pycuda.

Prototypes, enum values and versioned symbol names are those of CUDA 13.0's cuda.h. The header #defines
cuMemAlloc to cuMemAlloc_v2 and so on; in ABI mode we call the versioned symbols by name. A symbol that is new
in the header (cuEventElapsedTime_v2, CUDA 12.8+) falls back to its older name, so older drivers work too.

Importing this module loads nothing; `Device()` initialises CUDA in the calling process. Never do that in a
process that will fork (see docs/cuda.md): the measurement runner keeps CUDA in its own worker process.
"""
from __future__ import annotations

import ctypes.util
import functools
import subprocess
import sys

import numpy as np

CDEF = """
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
CUresult cuInit(unsigned int Flags);
CUresult cuDriverGetVersion(int *driverVersion);
CUresult cuDeviceGetCount(int *count);
CUresult cuDeviceGet(CUdevice *device, int ordinal);
CUresult cuDeviceGetAttribute(int *pi, int attrib, CUdevice dev);
CUresult cuDeviceGetName(char *name, int len, CUdevice dev);
CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev);
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuCtxSynchronize(void);
CUresult cuModuleLoadData(CUmodule *module, const void *image);
CUresult cuModuleUnload(CUmodule hmod);
CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name);
CUresult cuFuncSetAttribute(CUfunction hfunc, int attrib, int value);
CUresult cuFuncGetAttribute(int *pi, int attrib, CUfunction hfunc);
CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                        unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                        unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra);
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize);
CUresult cuMemFree_v2(CUdeviceptr dptr);
CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount);
CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount);
CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N);
CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags);
CUresult cuStreamDestroy_v2(CUstream hStream);
CUresult cuStreamSynchronize(CUstream hStream);
CUresult cuStreamBeginCapture_v2(CUstream hStream, int mode);
CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph);
CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags);
CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream);
CUresult cuGraphExecDestroy(CUgraphExec hGraphExec);
CUresult cuGraphDestroy(CUgraph hGraph);
CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags);
CUresult cuEventRecord(CUevent hEvent, CUstream hStream);
CUresult cuEventSynchronize(CUevent hEvent);
CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd);
CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd);
CUresult cuEventDestroy_v2(CUevent hEvent);
CUresult cuGetErrorName(CUresult error, const char **pStr);
CUresult cuGetErrorString(CUresult error, const char **pStr);
"""

# CUdevice_attribute values (cuda.h)
ATTR = {"max_threads_per_block": 1, "max_block_dim_x": 2, "max_block_dim_y": 3, "max_block_dim_z": 4,
        "max_grid_dim_x": 5, "max_grid_dim_y": 6, "max_grid_dim_z": 7, "max_shared_per_block": 8,
        "total_constant_memory": 9, "warp_size": 10, "max_registers_per_block": 12, "clock_khz": 13,
        "sm_count": 16, "memory_clock_khz": 36, "memory_bus_bits": 37, "l2_bytes": 38,
        "max_threads_per_sm": 39, "cc_major": 75, "cc_minor": 76, "max_shared_per_sm": 81,
        "max_registers_per_sm": 82, "max_shared_per_block_optin": 97, "max_blocks_per_sm": 106}
# CUfunction_attribute values
FUNC_MAX_THREADS_PER_BLOCK, FUNC_SHARED_SIZE_BYTES, FUNC_NUM_REGS = 0, 1, 4
FUNC_LOCAL_SIZE_BYTES, FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES = 3, 8
CAPTURE_MODE_THREAD_LOCAL = 1          # CUstreamCaptureMode
STREAM_NON_BLOCKING = 0x1              # CUstream_flags
EVENT_DEFAULT = 0x0                    # CUevent_flags (timing enabled)
ERROR_NOT_READY = 600

# Errors after which the context is unusable: the header says "the process must be terminated and relaunched"
# (700, 702, 714-719, 721) or "the context ... must be destroyed" (710); 999 is unknown, so treated the same.
STICKY_ERRORS = frozenset({700, 702, 710, 714, 715, 716, 717, 718, 719, 721, 999})


class CudaError(Exception):
    def __init__(self, code: int, name: str, call: str, detail: str = ""):
        self.code, self.name, self.call = code, name, call
        super().__init__(f"{call} failed: {name} ({code}){': ' + detail if detail else ''}")


def is_sticky(code: int) -> bool:
    """True for errors that poison the CUDA context: only a new process can use the GPU again."""
    return code in STICKY_ERRORS


@functools.lru_cache(maxsize=1)
def _load():
    """(ffi, lib); OSError when there is no driver library."""
    from cffi import FFI
    ffi = FFI()
    ffi.cdef(CDEF)
    return ffi, ffi.dlopen("libcuda.so.1")


def _symbol(lib, *names):
    """The first of `names` the driver exports (cffi's ABI mode resolves a symbol when first accessed)."""
    for name in names:
        try:
            return getattr(lib, name)
        except AttributeError:
            continue
    raise OSError(f"libcuda.so.1 exports none of {names}")


_PROBE = ("from ansorc.targets.cuda.measure_driver import Device\n"
          "d = Device(); print('ok', d.name)")


@functools.lru_cache(maxsize=1)
def available() -> bool:
    """True when a CUDA GPU can be used. Never raises. The driver is only opened here; the probe that initialises
    CUDA runs in a child process, so that this process stays free to fork."""
    if ctypes.util.find_library("cuda") is None:
        try:
            ctypes.CDLL("libcuda.so.1")
        except OSError:
            return False
    try:
        out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120,
                             env=_child_env())
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0 and out.stdout.startswith("ok")


def _child_env() -> dict:
    """The environment with this checkout of ansorc importable in a child process."""
    import os
    from pathlib import Path
    root = str(Path(__file__).resolve().parents[2])
    path = os.environ.get("PYTHONPATH", "")
    return dict(os.environ, PYTHONPATH=root + (os.pathsep + path if path else ""))


class Device:
    """One GPU's primary context, made current in this thread. Every call checks its return code."""

    def __init__(self, ordinal: int = 0):
        self.ffi, self.lib = _load()
        self._elapsed = _symbol(self.lib, "cuEventElapsedTime_v2", "cuEventElapsedTime")
        self.check(self.lib.cuInit(0), "cuInit")
        dev = self.ffi.new("CUdevice*")
        self.check(self.lib.cuDeviceGet(dev, ordinal), "cuDeviceGet")
        self.device = dev[0]
        ctx = self.ffi.new("CUcontext*")
        self.check(self.lib.cuDevicePrimaryCtxRetain(ctx, self.device), "cuDevicePrimaryCtxRetain")
        self.context = ctx[0]
        self.check(self.lib.cuCtxSetCurrent(self.context), "cuCtxSetCurrent")
        name = self.ffi.new("char[256]")
        self.check(self.lib.cuDeviceGetName(name, 256, self.device), "cuDeviceGetName")
        self.name = self.ffi.string(name).decode(errors="replace")

    # --- errors -------------------------------------------------------------------------------------------
    def error_name(self, code: int) -> str:
        s = self.ffi.new("const char**")
        if self.lib.cuGetErrorName(code, s) != 0 or s[0] == self.ffi.NULL:
            return f"CUDA_ERROR_{code}"
        return self.ffi.string(s[0]).decode()

    def error_string(self, code: int) -> str:
        s = self.ffi.new("const char**")
        if self.lib.cuGetErrorString(code, s) != 0 or s[0] == self.ffi.NULL:
            return ""
        return self.ffi.string(s[0]).decode()

    def check(self, code: int, call: str) -> None:
        if code != 0:
            raise CudaError(code, self.error_name(code), call, self.error_string(code))

    # --- device facts -------------------------------------------------------------------------------------
    def attribute(self, attr: int) -> int:
        out = self.ffi.new("int*")
        self.check(self.lib.cuDeviceGetAttribute(out, attr, self.device), "cuDeviceGetAttribute")
        return out[0]

    def driver_version(self) -> int:
        out = self.ffi.new("int*")
        self.check(self.lib.cuDriverGetVersion(out), "cuDriverGetVersion")
        return out[0]

    def limits(self) -> dict:
        facts = {key: self.attribute(attr) for key, attr in ATTR.items()}
        facts["name"] = self.name
        facts["compute_capability"] = (facts["cc_major"], facts["cc_minor"])
        facts["arch"] = f"sm_{facts['cc_major']}{facts['cc_minor']}"
        facts["driver_version"] = self.driver_version()
        return facts

    # --- memory -------------------------------------------------------------------------------------------
    def alloc(self, nbytes: int) -> int:
        ptr = self.ffi.new("CUdeviceptr*")
        self.check(self.lib.cuMemAlloc_v2(ptr, max(4, int(nbytes))), "cuMemAlloc")
        return int(ptr[0])

    def free(self, ptr: int) -> None:
        self.check(self.lib.cuMemFree_v2(ptr), "cuMemFree")

    def htod(self, ptr: int, array: np.ndarray) -> None:
        array = np.ascontiguousarray(array)
        self.check(self.lib.cuMemcpyHtoD_v2(ptr, self.ffi.from_buffer(array), array.nbytes), "cuMemcpyHtoD")

    def dtoh(self, array: np.ndarray, ptr: int) -> None:
        """Into `array` (C-contiguous, writable), all its bytes."""
        self.check(self.lib.cuMemcpyDtoH_v2(self.ffi.from_buffer(array), ptr, array.nbytes), "cuMemcpyDtoH")

    def memset32(self, ptr: int, value: int, count: int) -> None:
        self.check(self.lib.cuMemsetD32_v2(ptr, value & 0xFFFFFFFF, count), "cuMemsetD32")

    # --- modules and launches -----------------------------------------------------------------------------
    def load_module(self, image: bytes):
        mod = self.ffi.new("CUmodule*")
        self.check(self.lib.cuModuleLoadData(mod, self.ffi.from_buffer(image)), "cuModuleLoadData")
        return mod[0]

    def unload_module(self, module) -> None:
        self.check(self.lib.cuModuleUnload(module), "cuModuleUnload")

    def function(self, module, name: str):
        fn = self.ffi.new("CUfunction*")
        self.check(self.lib.cuModuleGetFunction(fn, module, name.encode()), f"cuModuleGetFunction({name})")
        return fn[0]

    def func_attribute(self, fn, attr: int) -> int:
        out = self.ffi.new("int*")
        self.check(self.lib.cuFuncGetAttribute(out, attr, fn), "cuFuncGetAttribute")
        return out[0]

    def set_func_attribute(self, fn, attr: int, value: int) -> None:
        self.check(self.lib.cuFuncSetAttribute(fn, attr, value), "cuFuncSetAttribute")

    def launch(self, fn, grid, block, shared_bytes: int, stream, pointers) -> None:
        """Launch with device pointers as the kernel's parameters (each parameter is one CUdeviceptr)."""
        values = self.ffi.new("CUdeviceptr[]", [int(p) for p in pointers] or [0])
        params = self.ffi.new("void*[]", max(1, len(pointers)))
        for i in range(len(pointers)):
            params[i] = self.ffi.addressof(values, i)
        g, b = tuple(grid) + (1,) * (3 - len(grid)), tuple(block) + (1,) * (3 - len(block))
        self.check(self.lib.cuLaunchKernel(fn, g[0], g[1], g[2], b[0], b[1], b[2], shared_bytes,
                                           stream, params, self.ffi.NULL), "cuLaunchKernel")

    def synchronize(self) -> None:
        self.check(self.lib.cuCtxSynchronize(), "cuCtxSynchronize")

    # --- streams, graphs, events --------------------------------------------------------------------------
    def stream(self):
        s = self.ffi.new("CUstream*")
        self.check(self.lib.cuStreamCreate(s, STREAM_NON_BLOCKING), "cuStreamCreate")
        return s[0]

    def destroy_stream(self, stream) -> None:
        self.check(self.lib.cuStreamDestroy_v2(stream), "cuStreamDestroy")

    def stream_synchronize(self, stream) -> None:
        self.check(self.lib.cuStreamSynchronize(stream), "cuStreamSynchronize")

    def capture(self, stream, body) -> tuple:
        """(graph, exec) of what body() enqueues on `stream`. A failure inside body ends the capture first, so
        the stream is usable again, then re-raises."""
        self.check(self.lib.cuStreamBeginCapture_v2(stream, CAPTURE_MODE_THREAD_LOCAL), "cuStreamBeginCapture")
        graph = self.ffi.new("CUgraph*")
        try:
            body()
        except BaseException:
            if self.lib.cuStreamEndCapture(stream, graph) == 0 and graph[0] != self.ffi.NULL:
                self.lib.cuGraphDestroy(graph[0])
            raise
        self.check(self.lib.cuStreamEndCapture(stream, graph), "cuStreamEndCapture")
        exec_ = self.ffi.new("CUgraphExec*")
        code = self.lib.cuGraphInstantiateWithFlags(exec_, graph[0], 0)
        if code != 0:
            self.lib.cuGraphDestroy(graph[0])
            self.check(code, "cuGraphInstantiateWithFlags")
        return graph[0], exec_[0]

    def graph_launch(self, exec_, stream) -> None:
        self.check(self.lib.cuGraphLaunch(exec_, stream), "cuGraphLaunch")

    def destroy_graph(self, graph, exec_) -> None:
        if exec_ is not None:
            self.check(self.lib.cuGraphExecDestroy(exec_), "cuGraphExecDestroy")
        if graph is not None:
            self.check(self.lib.cuGraphDestroy(graph), "cuGraphDestroy")

    def event(self):
        e = self.ffi.new("CUevent*")
        self.check(self.lib.cuEventCreate(e, EVENT_DEFAULT), "cuEventCreate")
        return e[0]

    def record(self, event, stream) -> None:
        self.check(self.lib.cuEventRecord(event, stream), "cuEventRecord")

    def event_synchronize(self, event) -> None:
        self.check(self.lib.cuEventSynchronize(event), "cuEventSynchronize")

    def elapsed_seconds(self, start, end) -> float:
        ms = self.ffi.new("float*")
        self.check(self._elapsed(ms, start, end), "cuEventElapsedTime")
        return ms[0] * 1e-3

    def destroy_event(self, event) -> None:
        self.check(self.lib.cuEventDestroy_v2(event), "cuEventDestroy")

    def close(self) -> None:
        """Release the primary context (the driver frees it when no one else holds it, e.g. PyTorch)."""
        if self.context is not None:
            self.lib.cuDevicePrimaryCtxRelease_v2(self.device)
            self.context = None


def device_limits(ordinal: int = 0) -> dict | None:
    """The GPU's limits and facts (name, compute capability, SM count, threads, shared memory, registers, warp,
    clocks, memory bus, L2), or None without a GPU. Initialises CUDA in this process."""
    try:
        dev = Device(ordinal)
    except (OSError, CudaError, ImportError):
        return None
    try:
        return dev.limits()
    finally:
        dev.close()
