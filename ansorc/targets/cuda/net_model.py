"""A compiled model on the GPU (CudaModel), and the same plan run on the CPU through the GPU emulation
(EmulatedModel): `model(*inputs) -> [outputs]`, as ansorc.net.Model and onnxruntime's `run`.

CudaModel takes numpy arrays (copied in and out through device staging buffers, the call waits) or arrays with
`__cuda_array_interface__` (PyTorch, CuPy: used in place, no copy; outputs given with `out=` or made with the
inputs' library; with `stream=` the call returns without waiting). Each CudaModel loads a private copy of the
library: its weights, arena and graph are globals of the library (one model per library, as its C API says).
"""
from __future__ import annotations

import shutil
import tempfile
import threading
import weakref
from pathlib import Path

import numpy as np
from cffi import FFI

from ...ir.program.dtypes import C_TYPE, NP_DTYPE
from ...kernel import Kernel, array, empty
from ...net.library_c import MESSAGES, generic_names
from ...net.network import NetError
from ...net.weights import write_weights
from .net_library import CudaNetPlan, emit_network

_LOADED: list = []   # never unloaded: a library's CUDA runtime must outlive its last use


def _header(m: str, sig: dict, build_line: str) -> str:
    params = [f"const {C_TYPE[t['dtype']]}* in{k}" for k, t in enumerate(sig["inputs"])]
    params += [f"{C_TYPE[t['dtype']]}* out{k}" for k, t in enumerate(sig["outputs"])]
    lines = [f"/* {m}.h: a whole model compiled by ansorc for CUDA ({sig['arch']}). Do not edit.",
             f" * Build the library:  {build_line}", " *",
             f" *   int {m}_init(const char* weights_path);  upload {m}.weights, allocate the device arena",
             f" *   int {m}_run(inputs..., outputs..., void* stream);  device pointers; NULL stream: waits",
             f" *   void {m}_free(void);   const char* {m}_error(void);  the last CUDA error",
             " * 0 on success, else a status (9: a CUDA call failed, see _error). One call at a time."]
    for kind in ("inputs", "outputs"):
        for k, t in enumerate(sig[kind]):
            name = t["name"].replace("*/", "*\\/")
            lines.append(f" *   {kind[:-1]} {k}: {t['dtype']}{list(t['shape'])}  {name}")
    lines += [" */", f"#ifndef ANSORC_NET_{m.upper()}_H", f"#define ANSORC_NET_{m.upper()}_H",
              "#ifdef __cplusplus", 'extern "C" {', "#endif", *generic_names(m, sig),
              f"#define ANSORC_MODEL_ERROR {m}_error",
              f"int {m}_init(const char* weights_path);",
              f"int {m}_run({', '.join(params + ['void* stream'])});",
              f"int {m}_run_packed(void** args, void* stream);", f"int {m}_run_host(void** host_args);",
              f"void {m}_free(void);", f"const char* {m}_error(void);",
              "#ifdef __cplusplus", "}", "#endif", "#endif", ""]
    return "\n".join(lines)


def build_cuda_network(plan: CudaNetPlan, net, arch: str, outdir) -> dict:
    """<m>.cu, <m>.h, lib<m>.so (nvcc) and <m>.weights in `outdir`; returns their paths and the signature."""
    import shlex

    from ...codegen.source import Source
    from .measure_nvcc import build_cuda_library, cuda_library_command
    code, sig = emit_network(plan, net, arch)
    out = Path(outdir)
    try:
        so = build_cuda_library(Source(code, plan.name, (), "cuda"), out, arch, timeout=900.0)
    except RuntimeError as e:
        raise NetError(f"model {plan.name!r}: {e}") from None
    line = shlex.join(cuda_library_command("nvcc", arch, f"{plan.name}.cu", f"lib{plan.name}.so"))
    (out / f"{plan.name}.h").write_text(_header(plan.name, sig, line))
    write_weights(out / f"{plan.name}.weights", net.weights, plan.weight_order, plan.digest)
    return {"cu": str(out / f"{plan.name}.cu"), "h": str(out / f"{plan.name}.h"), "so": str(so),
            "weights": str(out / f"{plan.name}.weights")}, sig


def _device_pointer(x, spec: dict, what: str) -> int:
    """The device address of a GPU array of `spec` (CudaKernel's check of shape, dtype and layout)."""
    from ...codegen.source import ArgSpec
    from .kernel import CudaKernelError, gpu_pointer
    te_shape = tuple(spec["te_shape"])   # a rank-0 tensor is held as (1,): either shape is taken
    shape = te_shape if tuple(x.__cuda_array_interface__["shape"]) == te_shape else tuple(spec["shape"])
    try:
        return gpu_pointer(x, ArgSpec(spec["name"], shape, spec["dtype"], what == "output"))
    except CudaKernelError as e:
        raise NetError(f"{what} {e}") from None


def _like(x, spec: dict):
    """A new device array of `spec` made by the library of the device array `x` (torch or cupy)."""
    kind = type(x).__module__.split(".")[0]
    if kind == "torch":
        import torch
        return torch.empty(tuple(spec["shape"]), dtype=getattr(torch, spec["dtype"]), device=x.device)
    if kind == "cupy":
        import cupy
        return cupy.empty(tuple(spec["shape"]), dtype=NP_DTYPE[spec["dtype"]])
    raise NetError(f"outputs for GPU inputs of type {type(x).__name__}: pass them with out=")


class CudaModel:
    def __init__(self, files: dict, signature: dict, tasks=(), owned_dir: str | None = None):
        self.files, self.signature, self.tasks = dict(files), signature, list(tasks)
        self.name = signature["model"]
        if owned_dir is not None:
            self._cleanup = weakref.finalize(self, shutil.rmtree, owned_dir, True)
        # the library is loaded and its weights uploaded on the first call, so a model compiles and exports
        # on a machine without a GPU (build here, deploy there)
        self._lock, self._lib, self._closed = threading.Lock(), None, False
        m = self.name
        self._ffi = FFI()
        self._ffi.cdef(f"int {m}_init(const char*); int {m}_run_packed(void**, void*); int {m}_run_host(void**);"
                       f" void {m}_free(void); const char* {m}_error(void);")

    def _load(self):
        """dlopen a private copy of the library and run <m>_init; the lock is held."""
        m = self.name
        private = Path(tempfile.mkdtemp(prefix="ansorc_cuda_model_")) / f"lib{m}.so"
        shutil.copyfile(self.files["so"], private)
        lib = self._ffi.dlopen(str(private))
        _LOADED.append((self._ffi, lib))
        self._lib = lib
        rc = getattr(lib, f"{m}_init")(self.files["weights"].encode())
        if rc != 0:
            self._lib = None
            raise NetError(f"model {m!r}: cannot start on the GPU ({self.files['weights']}): {self._message(rc, lib)}")

    def _message(self, rc: int, lib) -> str:
        text = MESSAGES.get(rc, f"status {rc}")
        if rc == 9:
            text += ": " + self._ffi.string(getattr(lib, f"{self.name}_error")()).decode()
        return text

    def __call__(self, *inputs, out=None, stream=None) -> list:
        specs, outs = self.signature["inputs"], self.signature["outputs"]
        if len(inputs) != len(specs):
            raise NetError(f"model {self.name!r} takes {len(specs)} inputs, got {len(inputs)}")
        on_gpu = [hasattr(x, "__cuda_array_interface__") for x in inputs]
        if any(on_gpu) and not all(on_gpu):
            raise NetError(f"model {self.name!r}: inputs are all numpy arrays or all GPU arrays, not a mix")
        if all(on_gpu) and inputs:
            return self._run_device(inputs, out, stream)
        arrays = [np.ascontiguousarray(x) for x in inputs]
        for a, s in zip(arrays, specs):
            if a.dtype != np.dtype(NP_DTYPE[s["dtype"]]) or a.size != int(np.prod(s["te_shape"])):
                raise NetError(f"model {self.name!r}: input {s['name']!r} must be {s['dtype']} {tuple(s['shape'])}"
                               f", got {a.dtype} {a.shape}")
        results = [np.empty(tuple(s["shape"]), NP_DTYPE[s["dtype"]]) for s in outs]
        ptrs = self._ffi.new("void*[]", [self._ffi.cast("void*", a.ctypes.data) for a in (*arrays, *results)])
        self._call(f"{self.name}_run_host", ptrs)
        return results

    def _run_device(self, inputs, out, stream):
        specs, outs = self.signature["inputs"], self.signature["outputs"]
        out = list(out) if out is not None else [_like(inputs[0], s) for s in outs]
        if len(out) != len(outs):
            raise NetError(f"model {self.name!r} has {len(outs)} outputs, out= gives {len(out)}")
        addrs = [_device_pointer(x, s, "input") for x, s in zip(inputs, specs)]
        addrs += [_device_pointer(x, s, "output") for x, s in zip(out, outs)]
        ptrs = self._ffi.new("void*[]", [self._ffi.cast("void*", a) for a in addrs])
        self._call(f"{self.name}_run_packed", ptrs, self._ffi.cast("void*", int(stream or 0)))
        return out

    def _call(self, fn: str, *args) -> None:
        with self._lock:
            if self._closed:
                raise NetError(f"model {self.name!r} is closed")
            if self._lib is None:
                self._load()
            lib = self._lib
            rc = getattr(lib, fn)(*args)
        if rc != 0:
            raise NetError(f"model {self.name!r}: run failed: {self._message(rc, lib)}")

    run = __call__

    def export(self, outdir) -> dict:
        """<m>.cu, <m>.h, lib<m>.so and <m>.weights copied into `outdir`; returns their paths."""
        dst = Path(outdir)
        dst.mkdir(parents=True, exist_ok=True)
        return {k: shutil.copyfile(p, dst / Path(p).name) for k, p in self.files.items()}

    def close(self) -> None:
        with self._lock:
            if not self._closed and self._lib is not None:
                getattr(self._lib, f"{self.name}_free")()
            self._closed = True

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - at interpreter exit cffi may be gone
            pass

    def __repr__(self):
        return f"<ansorc.net CudaModel {self.name} ({self.signature['arch']}) {self.signature['groups']} groups>"


class EmulatedModel:
    """The plan of a CUDA library run on the CPU: each program through the GPU emulation (codegen_emulate.py),
    the weights at their offsets in one copy of the weights file's layout, intermediates at their offsets in one
    arena, so the bindings and the arena plan are checked along with the programs."""

    def __init__(self, plan: CudaNetPlan, net):
        from ...ir.lowering.lower import lower
        from ...measure.builder import build
        from .codegen_emulate import EMULATION_FLAGS, codegen_gpu_emulation
        self.plan, self.signature = plan, None
        self._outs = [(tuple(t.shape), t.dtype) for t in net.outputs]
        self._ins = [(tuple(t.shape), t.dtype) for t in net.inputs]
        self._shapes = [tuple(s) for s in net.output_shapes]
        sources = [codegen_gpu_emulation(lower(st, f"{plan.name}_e{k}", passes=False))
                   for k, st in enumerate(plan.states)]
        built = build(sources, target_flags=EMULATION_FLAGS, timeout=300)
        for b in built:
            if not b.ok:
                raise NetError(f"model {plan.name!r}: an emulated program did not build: {b.error_msg[:400]}")
        self._kernels = [Kernel(s, b.lib_path) for s, b in zip(sources, built)]
        self._weights = empty((plan.weight_file[2],), "uint8")   # 64-byte aligned, as the device's are
        for e in plan.weight_file[0]:
            self._weights[e.offset:e.offset + e.nbytes] = np.frombuffer(net.weights[e.name].tobytes(), np.uint8)
        self._arena = empty((plan.arena.size + 64,), "uint8")

    def _view(self, b, shape, ins, outs):
        if b.kind == "input":
            return ins[b.at]
        if b.kind == "output":
            return outs[b.at]
        buf = self._weights if b.kind == "weight" else self._arena
        n = int(np.prod(shape)) * np.dtype(NP_DTYPE[b.dtype]).itemsize
        return buf[b.at:b.at + n].view(NP_DTYPE[b.dtype]).reshape(shape)

    def __call__(self, *inputs) -> list:
        ins = [array(np.asarray(x, NP_DTYPE[d]).reshape(s)) for x, (s, d) in zip(inputs, self._ins)]
        outs = [empty(s, d) for s, d in self._outs]
        for call in self.plan.calls:
            src = self.plan.programs[call.program]
            arrays = [self._view(b, a.shape, ins, outs) for b, a in zip(call.args, src.args)]
            self._kernels[call.program](*arrays)
        for k, j in self.plan.copies:
            outs[k][...] = outs[j]
        return [o.reshape(s) for o, s in zip(outs, self._shapes)]


__all__ = ["CudaModel", "EmulatedModel", "build_cuda_network"]
