"""Model: a compiled model library loaded with cffi; `model(*inputs) -> [outputs]` as onnxruntime's `run`.

The library keeps its weights and arena in globals (one model per library, as its C API promises), so every
Model dlopens its own private copy of lib<model>.so: two Models of one library never share (or free) each
other's state. Libraries are never unloaded (see _LOADED); `close` frees the weights and the arena, which is
what matters.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import weakref
from pathlib import Path

import numpy as np
from cffi import FFI

from ..codegen.c import status_message
from ..codegen.elf import SignatureError, read_section_signature
from ..ir.program.dtypes import C_TYPE, NP_DTYPE
from ..ir.program.names import is_c_ident
from ..kernel import empty
from ..measure.builder import cache_root
from .library import copy_library
from .library_c import MESSAGES, STATUS, read_network_signature
from .network import NetError


# Every loaded copy stays referenced: cffi dlcloses a library whose object is collected, and unloading one that
# ran OpenMP code while libgomp's worker threads live crashes the process later (kernel.py keeps its own too).
_LOADED: list = []
_NAMES: set = set()


def _prototypes(sig: dict) -> str:
    m = sig["model"]
    params = [f"const {C_TYPE[t['dtype']]}*" for t in sig["inputs"]]
    params += [f"{C_TYPE[t['dtype']]}*" for t in sig["outputs"]]
    return (f"int {m}_init(const char*);\nint {m}_run({', '.join(params) or 'void'});\nvoid {m}_free(void);\n"
            f"extern const char {m}_signature[];\nvoid {m}_profile_enable(int);\nint {m}_profile_read(double*, int);\n")


def _private_copy(so_path) -> str:
    """A copy of the library under a name never loaded before: dlopen of a name already loaded returns that
    library (and its state), even when the file behind the name is another one."""
    # beside the build cache, where every kernel library is loaded from (a /tmp mounted noexec cannot dlopen)
    folder = cache_root() / "loaded"
    folder.mkdir(parents=True, exist_ok=True)
    while True:
        fd, tmp = tempfile.mkstemp(prefix="model_", suffix=".so", dir=folder)
        os.close(fd)
        if tmp not in _NAMES:  # an unlinked copy's name may come back from mkstemp
            break
        os.unlink(tmp)
    _NAMES.add(tmp)
    shutil.copyfile(so_path, tmp)
    return tmp


class Model:
    """A compiled model. `files` holds the paths of its "c", "h", "so" and "weights" files."""

    def __init__(self, files: dict, signature: dict | None = None, tasks=(), owned_dir: str | None = None):
        self._closed = True
        self.files = {k: str(v) for k, v in files.items()}
        self.signature = signature or read_network_signature(Path(self.files["h"]).read_text())
        self.name = self.signature.get("model", "")
        if not is_c_ident(self.name) or not all(t.get("dtype") in C_TYPE for t in self._tensors()):
            raise NetError(f"{self.files.get('h')}: not a valid ansorc-network signature")
        self.tasks = list(tasks)
        if owned_dir is not None:  # a compile's scratch folder goes when the Model does
            self._cleanup = weakref.finalize(self, shutil.rmtree, owned_dir, True)
        self._lock = threading.Lock()
        self._ffi = FFI()
        self._ffi.cdef(_prototypes(self.signature))
        copy = _private_copy(self.files["so"])
        try:
            self._check_file_signature(copy)   # the copy, before dlopen: loading runs the library's code
            self._lib = self._ffi.dlopen(copy)
            _LOADED.append((self._ffi, self._lib))
        except OSError as exc:
            raise NetError(f"model {self.name!r}: cannot load {self.files['so']}: {exc}") from None
        finally:
            os.unlink(copy)  # the mapping stays; nothing is left behind
        self._check_signature()
        self._run = getattr(self._lib, f"{self.name}_run")
        rc = getattr(self._lib, f"{self.name}_init")(self.files["weights"].encode())
        if rc != 0:
            raise NetError(f"model {self.name!r}: {self.files['weights']}: {MESSAGES.get(rc, f'status {rc}')}")
        self._closed = False

    def _tensors(self) -> list:
        return [*self.signature.get("inputs", []), *self.signature.get("outputs", [])]

    def _check_file_signature(self, copy: str) -> None:
        """The signature the library file carries (its .ansorc_sig section, read without loading it) must be the
        one its arrays are checked against: a header edited or taken from another build, or another model's
        library under this model's name, would otherwise make run read and write past the arrays."""
        so = self.files["so"]
        try:
            carried = read_section_signature(copy)
        except SignatureError as exc:
            raise NetError(str(exc).replace(copy, so)) from None
        if carried.get("model") != self.name:
            raise NetError(f"model {self.name!r}: {so} is the library of model {str(carried.get('model'))!r}, "
                           f"not of {self.name!r}; export the two models to separate folders")
        self._mismatch(carried)

    def _mismatch(self, carried: dict) -> None:
        if carried != self.signature:
            raise NetError(f"model {self.name!r}: {self.files['so']} was built for other inputs or outputs than "
                           f"{self.files.get('h', 'its signature')} describes")

    def _check_signature(self) -> None:
        """The loaded library's own signature, checked again (as the file's was before loading it)."""
        try:
            text = self._ffi.string(getattr(self._lib, f"{self.name}_signature")).decode()
        except (AttributeError, KeyError):   # cffi raises KeyError for a symbol the library lacks
            raise NetError(f"model {self.name!r}: {self.files['so']} has no {self.name}_signature") from None
        self._mismatch(json.loads(text))

    @classmethod
    def load(cls, outdir, name: str | None = None) -> "Model":
        """An exported model: <name>.h, lib<name>.so and <name>.weights in `outdir` (name found if only one)."""
        folder = Path(outdir)
        if name is None:
            heads = [h for h in sorted(folder.glob("*.h")) if (folder / f"lib{h.stem}.so").exists()]
            if len(heads) != 1:
                raise NetError(f"{folder}: expected one exported model, found {len(heads)}; pass its name")
            name = heads[0].stem
        if not is_c_ident(str(name)):  # a model name, never a path
            raise NetError(f"{folder}: {name!r} is not a model name (a C identifier)")
        files = {"c": folder / f"{name}.c", "h": folder / f"{name}.h", "so": folder / f"lib{name}.so",
                 "weights": folder / f"{name}.weights"}
        missing = [str(p) for k, p in files.items() if k != "c" and not p.exists()]
        if missing:
            raise NetError(f"{folder}: not an exported model {name!r}: missing {', '.join(missing)}")
        try:
            sig = read_network_signature(files["h"].read_text())
        except (ValueError, OSError) as exc:
            raise NetError(f"{files['h']}: {exc}") from None
        return cls(files, sig)

    # ------------------------------------------------------------------ running
    @property
    def input_names(self) -> list:
        return [t["name"] for t in self.signature["inputs"]]

    @property
    def output_names(self) -> list:
        return [t["name"] for t in self.signature["outputs"]]

    def _check(self, spec: dict, value) -> np.ndarray:
        arr = np.asarray(value)
        want_dtype = np.dtype(NP_DTYPE[spec["dtype"]])
        if arr.dtype != want_dtype:
            raise NetError(f"model {self.name!r}: input {spec['name']!r} must be {spec['dtype']}, got {arr.dtype}")
        shape, te_shape = tuple(spec["shape"]), tuple(spec["te_shape"])
        if arr.shape != shape and not (arr.shape == () and te_shape == (1,)):  # rank-0 is held as (1,)
            raise NetError(f"model {self.name!r}: input {spec['name']!r} must have shape {shape}, got {arr.shape}")
        return np.ascontiguousarray(arr)

    def __call__(self, *inputs) -> list:
        """The outputs as a list of new arrays (one output is still a list, as onnxruntime returns them)."""
        specs = self.signature["inputs"]
        if len(inputs) != len(specs):
            raise NetError(f"model {self.name!r} takes {len(specs)} inputs ({', '.join(self.input_names)}), "
                           f"got {len(inputs)}")
        ins = [self._check(s, x) for s, x in zip(specs, inputs)]
        outs = [empty(tuple(t["te_shape"]), NP_DTYPE[t["dtype"]]) for t in self.signature["outputs"]]
        ptrs = [self._ffi.cast(f"{C_TYPE[s['dtype']]} *", a.ctypes.data)
                for s, a in zip([*specs, *self.signature["outputs"]], [*ins, *outs])]
        with self._lock:
            if self._closed:
                raise NetError(f"model {self.name!r} is closed")
            rc = self._run(*ptrs)
        if rc != 0:
            raise NetError(f"model {self.name!r}: run failed: {self._status(rc)}")
        return [o.reshape(tuple(t["shape"])) for o, t in zip(outs, self.signature["outputs"])]

    run = __call__

    def profile(self, *inputs, rounds: int = 10) -> list:
        """Run the model `rounds` times (after one untimed run) timing each kernel call: a list, in call order, of
        {"group", "kernel", "seconds"} (mean seconds per run of that call)."""
        calls = self.signature.get("calls", [])
        try:
            enable = getattr(self._lib, f"{self.name}_profile_enable")
            read = getattr(self._lib, f"{self.name}_profile_read")
        except AttributeError:
            raise NetError(f"model {self.name!r}: this library was built without profiling; rebuild it") from None
        self(*inputs)
        with self._lock:
            enable(1)
        try:
            for _ in range(max(1, rounds)):
                self(*inputs)
            with self._lock:
                buf = self._ffi.new("double[]", max(1, len(calls)))
                read(buf, len(calls))
        finally:
            with self._lock:
                enable(0)
        return [{"group": g, "kernel": k, "seconds": buf[i] / max(1, rounds)} for i, (g, k) in enumerate(calls)]

    def _status(self, rc: int) -> str:
        """Words for a status of <model>_run: which group's kernel failed and why, or the library's message."""
        base, stride = STATUS["ERR_KERNEL"], STATUS["KERNEL_STRIDE"]
        calls = self.signature.get("calls", [])
        if rc < base or (rc - base) // stride >= len(calls):
            return MESSAGES.get(rc, f"status {rc}")
        k = (rc - base) // stride
        meanings = self.signature.get("call_statuses", [])   # per call, in that group's tensor names
        why = status_message((rc - base) % stride, meanings[k] if k < len(meanings) else ())
        return f"group {calls[k][0]!r}: {why}"

    # ------------------------------------------------------------------ files and lifetime
    def export(self, outdir) -> dict:
        """Write <model>.c, <model>.h, lib<model>.so and <model>.weights into `outdir`; returns their paths."""
        return copy_library(outdir, self.name, self.files)

    def close(self) -> None:
        with getattr(self, "_lock", threading.Lock()):
            if not getattr(self, "_closed", True):
                getattr(self._lib, f"{self.name}_free")()
                self._closed = True

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - at interpreter exit cffi may already be gone; nothing left to free
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        ins = ", ".join(f"{t['name']}: {t['dtype']}{t['shape']}" for t in self.signature["inputs"])
        return f"<ansorc.net.Model {self.name} ({ins}) arena {self.signature['arena_bytes']} B>"


__all__ = ["Model"]
