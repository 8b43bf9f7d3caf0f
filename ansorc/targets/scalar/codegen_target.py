"""The scalar target: plain C99 for any machine gcc or clang compiles for, one thread, no OpenMP and no
intrinsics. What a user on an unusual machine wants, and the proof that a target is a plug-in: this folder and
one registry line are all it takes."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...codegen.target import ISA_SPECS, CpuTarget, host_arch, host_cc

# No -fopenmp: the OpenMP pragmas are ignored, so the library needs no OpenMP runtime (libgomp / libomp).
FLAGS = ("-O3", "-shared", "-fPIC", "-std=c99")


@dataclass(frozen=True)
class ScalarTarget(CpuTarget):
    kind: ClassVar[str] = "scalar"

    @classmethod
    def parse(cls, name: str, cc: str | None = None) -> "ScalarTarget | None":
        if name != "scalar":
            return None
        spec = ISA_SPECS["generic"]
        return cls(name, "generic", host_arch(), spec.vector_bytes, 1, cc or host_cc(), (), (),
                   spec.vector_registers)

    @property
    def flags(self) -> tuple:
        return FLAGS

    @property
    def exe_flags(self) -> tuple:
        return ("-O3", "-std=c99")
