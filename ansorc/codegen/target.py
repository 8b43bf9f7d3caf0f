"""Target: the ISA and machine a kernel is generated, compiled and run for.

`Target.from_name("native" | "avx512" | "avx2" | "neon" | "generic")`. "native" reads this machine's ISA
(/proc/cpuinfo flags on x86-64, NEON on AArch64) and compiles with -march=native; the named ISAs compile with
their own flags, so an AVX2 kernel can be built and run on an AVX-512 machine, and a NEON kernel is
cross-compiled with aarch64-linux-gnu-gcc and run under qemu (see measure/cross.py). Kernels for this machine are
compiled with $CC when it is set (gcc or clang, or a path to one), else gcc.
"""
from __future__ import annotations

import os
import platform
import re
import shutil
from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar, Sequence

from ..ir.program.dtypes import itemsize
from ..targets.base import Target

BASE_FLAGS = ("-fopenmp", "-shared", "-fPIC", "-std=c99")

NATIVE_ISA_FLAGS = ("-march=native",)


@dataclass(frozen=True)
class IsaSpec:
    arch: str | None        # None: the host's
    vector_bytes: int       # widest vector register
    vector_registers: int   # architectural vector registers (the cost model sizes register tiles from it)
    flags: tuple            # compiler flags that enable the ISA


ISA_SPECS = {
    "avx512": IsaSpec("x86_64", 64, 32, ("-mavx512f", "-mfma")),
    "avx2": IsaSpec("x86_64", 32, 16, ("-mavx2", "-mfma")),
    "neon": IsaSpec("aarch64", 16, 32, ("-march=armv8-a",)),
    "generic": IsaSpec(None, 16, 16, ()),  # the host's baseline; plain loops, whatever the compiler vectorizes
}
# An ISA with further instruction sets: name -> (ISA, its flags, the cpuinfo features it needs). The features pick
# the dot-product instructions (codegen/dot.py); "native" has those of this CPU (NATIVE_FEATURES).
ISA_VARIANTS = {
    "avx512-vnni": ("avx512", ("-mavx512f", "-mfma", "-mavx512bw", "-mavx512vnni"), ("avx512_vnni",)),
    "avx512-bf16": ("avx512", ("-mavx512f", "-mfma", "-mavx512bw", "-mavx512bf16"), ("avx512_bf16",)),
    "avx2-vnni": ("avx2", ("-mavx2", "-mfma", "-mavxvnni"), ("avx_vnni",)),
    "neon-dot": ("neon", ("-march=armv8.2-a+dotprod",), ("asimddp",)),
}
NATIVE_FEATURES = frozenset({"avx512_vnni", "avx512_bf16", "avx_vnni", "asimddp"})
# (target arch, host arch) -> compiler, and the prefix that runs a program of that arch here
COMPILERS = {("x86_64", "x86_64"): "gcc", ("aarch64", "aarch64"): "gcc", ("aarch64", "x86_64"): "aarch64-linux-gnu-gcc"}
RUNNERS = {("aarch64", "x86_64"): ("qemu-aarch64", "-L", "/usr/aarch64-linux-gnu")}
# Flags a compiler needs on top of a target's, by compiler family (the first of these words in its name).
# clang's -fopenmp links libomp (Debian: libomp-dev); both accept the ISA flags above.
# gcc: no predictive commoning. A register tile already keeps what it reuses in registers; gcc's pass also keeps
# the values that the next iteration of a tap loop reads again (a stride-2 7x7 stem conv: the next row's inputs)
# and spills the tile's accumulators for them (the 224 stem convs; no other default program changed:
# docs/perf-notes.md, "Code generation").
COMPILER_FLAGS = {"gcc": ("-fno-predictive-commoning",), "clang": ()}
_PROGRAM = re.compile(r"[A-Za-z0-9_.+/-]+")
# cpuinfo flags an x86 ISA needs, widest first: native picks the first one the CPU has
X86_NEEDS = (("avx512", {"avx512f", "fma"}), ("avx2", {"avx2", "fma"}))


def host_arch() -> str:
    m = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(m, m)


@lru_cache(maxsize=None)
def cpu_flags() -> frozenset:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def host_isas() -> tuple:
    """The ISAs whose kernels run natively here, widest first."""
    arch = host_arch()
    if arch == "aarch64":
        return ("neon", "generic")
    if arch == "x86_64":
        return tuple(isa for isa, need in X86_NEEDS if need <= cpu_flags()) + ("generic",)
    return ("generic",)


PEAK_CLOCK_HZ = 6e9   # a clock no CPU core sustains: the "impossible" bound's clock (Target.peak_flops_bound)


def num_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def host_cc() -> str:
    """The C compiler for this machine's kernels: $CC (one program: a name or a path), else gcc."""
    cc = os.environ.get("CC", "").strip()
    if not cc:
        return "gcc"
    if not _PROGRAM.fullmatch(cc):
        raise ValueError(f"CC={cc!r}: expected one compiler program (gcc, clang or a path to one), no options")
    return cc


def compiler_family(cc: str) -> str:
    """"clang" or "gcc" (anything else is driven like gcc): which of COMPILER_FLAGS applies."""
    name = os.path.basename(cc)
    return "clang" if "clang" in name else "gcc"


def library_flags(isa_flags: tuple = NATIVE_ISA_FLAGS) -> tuple:
    """A target's flags for a kernel shared library: the one place they are written (builder, header, export).
    The compiler's own flags are not among them: the builder adds those for the compiler it runs (compile_flags)."""
    return ("-O3", *isa_flags, *BASE_FLAGS)


def compile_flags(flags: Sequence[str], cc: str) -> tuple:
    """`flags` plus what `cc`'s family needs (COMPILER_FLAGS): the flags `cc` is really run with. Added where the
    compiler is known, so that a target's flags work with any compiler (gcc's -fno-predictive-commoning is an
    error to clang)."""
    own = COMPILER_FLAGS[compiler_family(cc)]
    return (*flags, *(f for f in own if f not in flags))


@dataclass(frozen=True)
class CpuTarget(Target):
    """A CPU: C with the ISA's intrinsics and OpenMP, built with gcc or clang (Target.from_name parses names)."""
    name: str               # as asked for: "native" or an ISA name
    isa: str                # avx512 | avx2 | neon | generic
    arch: str               # x86_64 | aarch64 | ...
    vector_bytes: int       # widest vector register; the search sizes vectorized loops from it
    num_cores: int
    cc: str
    isa_flags: tuple
    run_prefix: tuple = ()  # e.g. qemu for a foreign architecture; () runs natively
    vector_registers: int = 16
    features: frozenset = frozenset()   # instruction sets beyond the ISA's (ISA_VARIANTS), as cpuinfo names them
    kind: ClassVar[str] = "cpu"

    @classmethod
    def parse(cls, name: str, cc: str | None = None) -> "CpuTarget | None":
        """The CPU target `name` ("native" or an ISA), None for another kind's name; its kernels for this machine
        compile with `cc`, else $CC, else gcc."""
        if name != "native" and name not in ISA_SPECS and name not in ISA_VARIANTS:
            return None
        return _from_name(name, cc or host_cc())

    @property
    def builds_on_node(self) -> bool:
        return self.is_cross   # its cross compiler and emulator are on the measuring node

    @property
    def resource(self) -> str:
        return self.isa

    @property
    def flags(self) -> tuple:
        """Flags for a shared library (what measure.builder.build takes as target_flags; it adds the compiler's)."""
        return library_flags(self.isa_flags)

    @property
    def exe_flags(self) -> tuple:
        """Flags for a stand-alone program (the cross-check driver); static when it runs under an emulator."""
        return compile_flags(("-O3", *self.isa_flags, "-fopenmp", "-std=c99",
                              *(("-static",) if self.run_prefix else ())), self.cc)

    @property
    def is_cross(self) -> bool:
        return self.arch != host_arch()

    def lanes(self, dtype: str = "float32") -> int:
        return max(1, self.vector_bytes // itemsize(dtype))

    def peak_flops_bound(self, itemsize_bytes: int = 4) -> float:
        """Operations a second that no program can reach here: lanes of `itemsize_bytes` elements x 2 FMA units x
        2 operations (multiply, add) x cores x 6 GHz, above any clock. Generous on purpose (a core's real peak,
        bench/peak_fma.py, is half of it or less): a logged timing above it is forged or corrupt, not fast.
        One-byte lanes count VNNI's four byte products a 32-bit lane."""
        return max(1, self.vector_bytes // itemsize_bytes) * 2 * 2 * self.num_cores * PEAK_CLOCK_HZ

    def missing_tools(self) -> list:
        """Programs this target needs that are not installed (empty when it can build and run here)."""
        return [p for p in (self.cc, *self.run_prefix[:1]) if shutil.which(p) is None]

    def runs_here(self) -> bool:
        """Its kernels can be loaded into this process (same architecture, ISA supported by this CPU)."""
        return not self.is_cross and self.isa in host_isas() and self.features <= cpu_flags()


@lru_cache(maxsize=None)
def _from_name(name: str, host_compiler: str) -> CpuTarget:
    host = host_arch()
    features = frozenset()
    if name == "native":
        isa = host_isas()[0]
        flags = NATIVE_ISA_FLAGS if host in ("x86_64", "aarch64") else ()
        features = cpu_flags() & NATIVE_FEATURES if flags else frozenset()
    elif name in ISA_VARIANTS:
        isa, flags, need = ISA_VARIANTS[name]
        features = frozenset(need)
    else:
        isa = name
        flags = ISA_SPECS[isa].flags
    spec = ISA_SPECS[isa]
    arch = spec.arch or host
    cc = host_compiler if arch == host else COMPILERS.get((arch, host), f"{arch}-linux-gnu-gcc")
    return CpuTarget(name, isa, arch, spec.vector_bytes, num_cores(), cc, flags, RUNNERS.get((arch, host), ()),
                     spec.vector_registers, features)


__all__ = ["Target", "CpuTarget", "IsaSpec", "host_arch", "host_isas", "cpu_flags", "library_flags", "host_cc",
           "compiler_family", "ISA_SPECS", "ISA_VARIANTS"]
