"""Kernel: a compiled program loaded with cffi and called with numpy arrays (inputs then outputs); `load` opens an
exported library as one."""
from __future__ import annotations

import json
import warnings
import weakref
from pathlib import Path

import numpy as np
from cffi import FFI

from .codegen.c import prototype, status_message
from .codegen.elf import SignatureError, read_section_signature
from .codegen.header import read_signature
from .codegen.source import ArgSpec, Source
from .errors import AnsorcError, ArgumentError
from .export import ExportError, export
from .ir.program.dtypes import C_TYPE, NP_DTYPE  # bool is numpy's one-byte bool_ (uint8_t in C)
from .spec import KernelSpec


ALIGN = 64  # bytes: a cache line and an AVX-512 vector; the tuner measures on buffers aligned to it


class KernelError(AnsorcError, RuntimeError):
    """The compiled kernel returned an error status."""


class AlignmentWarning(UserWarning):
    """An argument is not 64-byte aligned: the kernel runs, but slower than it was tuned."""


def empty(shape, dtype="float32") -> np.ndarray:
    """An uninitialized C-contiguous array whose data starts on a 64-byte boundary.

    numpy only guarantees 16 bytes; a tuned kernel reading misaligned vectors crosses a cache line on every
    load, which makes it markedly slower (docs/perf-notes.md, "alignment.py"). `dtype` may name an ansorc
    dtype: "bfloat16" is uint16 (the bits)."""
    dt = np.dtype(NP_DTYPE.get(dtype, dtype) if isinstance(dtype, str) else dtype)
    count = int(np.prod(shape, dtype=np.int64))
    raw = np.empty(count * dt.itemsize + ALIGN, np.uint8)
    start = (-raw.ctypes.data) % ALIGN
    return raw[start:start + count * dt.itemsize].view(dt).reshape(shape)


def array(data, dtype=None) -> np.ndarray:
    """A 64-byte aligned C-contiguous copy of `data` (as np.array would make, but aligned)."""
    src = np.asarray(data, dtype=dtype)
    out = empty(src.shape, src.dtype)
    out[...] = src
    return out


# Loaded libraries are never closed: unloading a library that pulled in libgomp while OpenMP worker threads
# are alive crashes the process at random later points.
_LOADED: dict = {}


def _load(source: Source, lib_path: str):
    key = (lib_path, source.entry)
    if key not in _LOADED:
        ffi = FFI()
        ffi.cdef(prototype(source))
        if source.prepared:
            ffi.cdef(f"void {source.entry}_constants_changed(void);")
        _LOADED[key] = (ffi, ffi.dlopen(lib_path))
    return _LOADED[key]


def _check_no_overlap(spans, specs) -> None:
    """Arguments are `restrict`: an output sharing memory with any other argument gives wrong results.
    `spans` are (address, bytes) of C-contiguous arrays, so interval overlap is exact."""
    for j, ((start, size), spec) in enumerate(zip(spans, specs)):
        if not spec.is_output or size == 0:
            continue
        for k, (other, other_size) in enumerate(spans):
            if k != j and other_size and start < other + other_size and other < start + size:
                raise ArgumentError(f"output argument {j} ({spec.name}) overlaps argument {k} ({specs[k].name}) "
                                    "in memory; pass separate arrays (copy the input)")


def _bits_view(a):
    """An ml_dtypes bfloat16 array as the uint16 array of its bits (the same memory); anything else as it is."""
    dt = getattr(a, "dtype", None)
    return a.view(np.uint16) if dt is not None and dt.name == "bfloat16" and dt.itemsize == 2 else a


class Kernel:
    """`kernel(*inputs, *outputs)` fills the outputs in place; `kernel(*inputs)` allocates and returns them."""

    def __init__(self, source: Source, lib_path: str, spec: KernelSpec | None = None):
        self.source_obj = source
        self.lib_path = str(lib_path)
        self.spec = spec  # how it was built; None for a kernel loaded from an exported library
        self._ffi, self._lib = _load(source, self.lib_path)
        self._fn = getattr(self._lib, source.entry)
        self._buffer_types = tuple(f"{C_TYPE[a.dtype]}[]" for a in source.args)
        self._wanted = tuple((np.dtype(NP_DTYPE[a.dtype]), tuple(a.shape), a.is_output) for a in source.args)
        self._n_in = sum(1 for a in source.args if not a.is_output)
        self._bf16 = frozenset(k for k, a in enumerate(source.args) if a.dtype == "bfloat16")
        self._last = None  # (arrays, pointers, weak references) of the last call
        self._warned_alignment = False

    def constants_changed(self) -> None:
        """Inputs declared constant (ComputeDAG.constants) were changed in place: the copies the kernel keeps of
        what it computed from them are made again on the next call. (Passing other arrays needs no call: the
        copies are keyed by the constant inputs' addresses and words sampled across them.)"""
        if self.source_obj.prepared:
            getattr(self._lib, f"{self.source_obj.entry}_constants_changed")()

    @property
    def source(self) -> str:
        return self.source_obj.code

    @property
    def name(self) -> str:
        return self.source_obj.entry

    @property
    def args(self) -> tuple:
        return self.source_obj.args

    @property
    def provenance(self) -> dict:
        return self.spec.provenance_dict if self.spec else {}

    def _check(self, arr, spec, k):
        dtype, shape, _ = self._wanted[k]
        if not isinstance(arr, np.ndarray):
            raise ArgumentError(f"argument {k} ({spec.name}) must be a numpy array, got {type(arr).__name__}")
        if arr.dtype != dtype:
            bits = " (its bits as uint16: ansorc.to_bfloat16(x))" if spec.dtype == "bfloat16" else ""
            raise ArgumentError(f"argument {k} ({spec.name}) must have dtype {spec.dtype}{bits}, got {arr.dtype}")
        if arr.shape != shape:
            raise ArgumentError(f"argument {k} ({spec.name}) must have shape {tuple(spec.shape)}, got {arr.shape}")
        if not arr.flags.c_contiguous:
            raise ArgumentError(f"argument {k} ({spec.name}) must be C-contiguous (use np.ascontiguousarray)")
        if spec.is_output and not arr.flags.writeable:
            raise ArgumentError(f"output argument {k} ({spec.name}) is read-only")

    def _pointers(self, arrays: tuple, specs) -> list:
        """The arguments as C pointers, checked not to overlap. The last call's are kept with their arrays: a loop
        calling with the same arrays skips the conversion, most of a short kernel's call overhead
        (docs/perf-notes.md). A weak reference to each kept array makes numpy refuse to resize it (even with
        refcheck=False), so a kept pointer cannot outlive its buffer."""
        last = self._last
        if last is not None and len(last[0]) == len(arrays) and all(x is y for x, y in zip(last[0], arrays)):
            return last[1]
        ptrs = [self._ffi.from_buffer(ctype, arr) for ctype, arr in zip(self._buffer_types, arrays)]
        spans = [(int(self._ffi.cast("uintptr_t", p)), arr.nbytes) for p, arr in zip(ptrs, arrays)]
        _check_no_overlap(spans, specs)
        misaligned = [spec.name for (addr, _), spec in zip(spans, specs) if addr % ALIGN]
        if misaligned and not self._warned_alignment:
            self._warned_alignment = True
            warnings.warn(f"kernel {self.name}: {', '.join(misaligned)} not 64-byte aligned; it runs correctly but "
                          "slower than tuned. Allocate with ansorc.empty(shape, dtype) or ansorc.array(data).",
                          AlignmentWarning, stacklevel=3)
        self._last = (tuple(arrays), ptrs, [weakref.ref(arr) for arr in arrays])
        return ptrs

    def __call__(self, *arrays):
        specs, n_in = self.args, self._n_in
        outputs = None
        if len(arrays) == n_in:
            outputs = [empty(a.shape, NP_DTYPE[a.dtype]) for a in specs[n_in:]]
            arrays = tuple(arrays) + tuple(outputs)
        if len(arrays) != len(specs):
            raise ArgumentError(f"kernel {self.name} takes {n_in} inputs and {len(specs) - n_in} outputs "
                            f"({', '.join(a.name for a in specs)}), got {len(arrays)} arrays")
        if self._bf16:   # an ml_dtypes bfloat16 array is its bits
            arrays = tuple(_bits_view(a) if k in self._bf16 else a for k, a in enumerate(arrays))
        for arr, (dtype, shape, out) in zip(arrays, self._wanted):   # the checks of _check, inlined for speed
            flags = arr.flags if isinstance(arr, np.ndarray) else None
            if flags is None or arr.dtype != dtype or arr.shape != shape or not flags.c_contiguous or \
                    (out and not flags.writeable):
                for k, (a, spec) in enumerate(zip(arrays, specs)):
                    self._check(a, spec, k)   # raises, naming the argument
        ptrs = self._pointers(arrays, specs)
        rc = self._fn(*ptrs)
        if rc != 0:
            raise KernelError(f"kernel {self.name} failed with status {rc} "
                              f"({status_message(rc, self.source_obj.statuses)})")
        if outputs is not None:
            return outputs[0] if len(outputs) == 1 else tuple(outputs)
        return None

    def export(self, outdir, name: str | None = None) -> dict:
        """Write lib<name>.so, <name>.h and <name>.c into outdir for embedding; returns their paths."""
        if self.spec is None:
            raise ExportError("this kernel cannot be re-exported (it was loaded from a library); export the "
                              "kernel it was built as")
        return export(self.spec, outdir, name or self.name)

    def __repr__(self):
        sig = ", ".join(f"{a.name}{list(a.shape)}" for a in self.args)
        return f"Kernel({self.name}({sig}), lib={self.lib_path})"


def load(path) -> Kernel:
    """Load an exported library back as a Kernel: `path` is lib<name>.so (its <name>.h must sit beside it)
    or the output directory holding exactly one exported kernel. Loading a library runs its code (its
    constructors): load only libraries you trust. The signature it carries in its `.ansorc_sig` section is read
    from the file and checked against the header first, so a file that is not such a library is refused unloaded."""
    p = Path(path)
    if p.is_dir():
        libs = sorted(p.glob("lib*.so"))
        if len(libs) != 1:
            raise ExportError(f"{p}: expected one lib<name>.so, found {[x.name for x in libs]}")
        p = libs[0]
    if not p.exists():
        raise ExportError(f"{p}: no such file")
    name = p.name[3:-3] if p.name.startswith("lib") and p.name.endswith(".so") else p.stem
    header = p.with_name(f"{name}.h")
    if not header.exists():
        raise ExportError(f"{p}: the header {header.name} must be next to the library")
    try:
        sig = read_signature(header.read_text(encoding="utf-8", errors="replace"))
    except ValueError as e:
        raise ExportError(f"{header}: {e}") from None
    try:  # from the file, before dlopen runs any of the library's code
        carried = read_section_signature(p)
    except SignatureError as e:
        raise ExportError(str(e)) from None
    if carried != sig:
        raise ExportError(f"{p.name} does not match {header.name}: the library was built for other arguments "
                          f"(its own signature names {str(carried.get('entry'))!r}; re-export the kernel)")
    if _library_signature(p, sig["entry"]) != sig:
        # the dynamic loader hands back a library already open under the same path, even if the file changed
        again = any(key[0] == str(p.resolve()) for key in _LOADED)
        raise ExportError(f"{p.name} does not match {header.name}: " + (
            "this process loaded an earlier library from this path (load the new one in a new process)" if again
            else "the library was built for other arguments (re-export the kernel)"))
    args = tuple(ArgSpec(a["name"], tuple(a["shape"]), a["dtype"], a["output"]) for a in sig["args"])
    c_file = p.with_name(f"{name}.c")
    source = Source(c_file.read_text(encoding="utf-8", errors="replace") if c_file.exists() else "", sig["entry"],
                    args, prepared=sig.get("prepared", False),
                    statuses=tuple((int(c), str(t)) for c, t in sig.get("statuses", [])))
    return Kernel(source, str(p.resolve()))


def _library_signature(lib_path: Path, entry: str):
    """The signature the library carries (<entry>_ansorc_signature()), parsed; ExportError if it has none."""
    ffi = FFI()
    ffi.cdef(f"const char* {entry}_ansorc_signature(void);")
    try:
        lib = ffi.dlopen(str(lib_path.resolve()))
        fn = getattr(lib, f"{entry}_ansorc_signature")
    except (OSError, AttributeError):
        raise ExportError(f"{lib_path}: not a library exported by this ansorc (no {entry}_ansorc_signature); "
                          "re-export the kernel") from None
    try:
        return json.loads(ffi.string(fn()).decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise ExportError(f"{lib_path}: its {entry}_ansorc_signature() is not valid JSON") from None
