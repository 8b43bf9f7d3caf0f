"""The CUDA target: the GPU architecture a kernel is compiled for and the device limits the search obeys.

`CudaTarget.from_name("cuda")` (sm_90) or "cuda:sm_80". Limits default to the architecture's documented
values; `with_limits(device_limits)` replaces them with what a present device reports (the measurement layer
reads them through the driver API).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from ..base import Target

# arch -> (SM count of the flagship part, max shared memory per block with opt-in, registers per SM)
ARCH_SPECS = {
    "sm_70": (80, 96 * 1024, 65536),
    "sm_75": (72, 64 * 1024, 65536),
    "sm_80": (108, 163 * 1024, 65536),
    "sm_86": (84, 99 * 1024, 65536),
    "sm_89": (128, 99 * 1024, 65536),
    "sm_90": (132, 227 * 1024, 65536),
}
DEFAULT_ARCH = "sm_90"
NVCC_FLAGS = ("-O3",)   # no --use_fast_math: results are checked against numpy


@dataclass(frozen=True)
class CudaTarget(Target):
    name: str                     # "cuda" or "cuda:sm_80"
    arch: str                     # sm_90 ...
    num_sms: int
    warp_size: int = 32
    max_threads_per_block: int = 1024
    max_shared_bytes: int = 48 * 1024     # static __shared__ per block (more needs opt-in, dynamic memory)
    max_registers_per_block: int = 65536
    max_registers_per_thread: int = 255
    max_vthread: int = 8                  # Ansor's warp_size / 4
    vector_bytes: int = 16                # widest load a thread issues (float4)
    isa: str = "cuda"
    kind: ClassVar[str] = "cuda"

    @classmethod
    def parse(cls, name: str, cc: str | None = None) -> "CudaTarget | None":  # noqa: ARG003 - nvcc only
        """"cuda" (sm_90) or "cuda:sm_XX"; None for another kind's name."""
        return cls.from_arch_name(name) if name == "cuda" or name.startswith("cuda:") else None

    @classmethod
    def from_arch_name(cls, name: str = "cuda") -> "CudaTarget":
        arch = name.split(":", 1)[1] if ":" in name else DEFAULT_ARCH
        if arch not in ARCH_SPECS:
            raise ValueError(f"unknown CUDA architecture {arch!r}; known: {', '.join(ARCH_SPECS)}")
        sms, _, regs = ARCH_SPECS[arch]
        return cls(name, arch, sms, max_registers_per_block=regs)

    def with_limits(self, limits: dict | None) -> "CudaTarget":
        """The same target with a device's reported limits (keys as measure.cuda_driver.device_limits)."""
        if not limits:
            return self
        keys = {"num_sms": "sm_count", "warp_size": "warp_size", "max_threads_per_block": "max_threads_per_block",
                "max_shared_bytes": "max_shared_per_block", "max_registers_per_block": "max_registers_per_block"}
        return replace(self, **{k: int(limits[v]) for k, v in keys.items() if limits.get(v)})

    @property
    def num_cores(self) -> int:
        """What the search's parallelism rules size against: the SM count."""
        return self.num_sms

    @property
    def flags(self) -> tuple:
        return (*NVCC_FLAGS, f"-arch={self.arch}")

    def lanes(self, dtype: str = "float32") -> int:
        return 1

    def runs_here(self) -> bool:
        return False   # whether a GPU is present is the measurement layer's question (cuda_driver.available)

    @property
    def is_cross(self) -> bool:
        return False

    @property
    def builds_on_node(self) -> bool:
        return True    # nvcc and the GPU are on the measuring node

    @property
    def resource(self) -> str:
        return self.arch


def is_cuda(target) -> bool:
    return getattr(target, "kind", "cpu") == "cuda" or (isinstance(target, str) and target.startswith("cuda"))


__all__ = ["CudaTarget", "is_cuda", "ARCH_SPECS"]
