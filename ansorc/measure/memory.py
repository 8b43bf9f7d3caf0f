"""Memory a measurement needs, checked before anything is allocated: sizes from `-D N=100000` would otherwise end
in a numpy MemoryError (or the kernel killed) deep inside tuning."""
from __future__ import annotations

import math
import os

from ..errors import AnsorcError
from ..ir.program.dtypes import itemsize


class NotEnoughMemoryError(AnsorcError, MemoryError):
    """The tensors of a workload do not fit in this machine's memory."""


def tensor_bytes(shape, dtype: str) -> int:
    return math.prod(int(d) for d in shape) * itemsize(dtype)


def measurement_bytes(dag) -> int:
    """What tuning `dag` holds at once, at least: every stage once for the numpy reference, and inputs and outputs
    again in the measuring worker."""
    stages = sum(tensor_bytes(op.shape, op.dtype) for op in dag.ops)
    args = sum(tensor_bytes(t.shape, t.dtype) for t in (*dag.inputs, *dag.outputs))
    return stages + args


def available_bytes() -> int | None:
    """MemAvailable of /proc/meminfo (free memory plus what the kernel can reclaim), else physical memory."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return None


def gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


def check_fits(dag, available: int | None = None) -> None:
    """Raise NotEnoughMemoryError (one line, with the amounts) when measuring `dag` cannot fit in memory."""
    need = measurement_bytes(dag)
    have = available_bytes() if available is None else available
    if have is not None and need > have:
        big = max(dag.ops, key=lambda op: tensor_bytes(op.shape, op.dtype))
        shape = ", ".join(str(d) for d in big.shape)
        raise NotEnoughMemoryError(f"tuning needs at least {gib(need)} for the tensors (the largest, {big.name}: "
                                   f"{big.dtype}[{shape}], takes {gib(tensor_bytes(big.shape, big.dtype))}), and "
                                   f"this machine has {gib(have)} available (expected smaller sizes)")

__all__ = ["NotEnoughMemoryError", "check_fits", "measurement_bytes", "available_bytes"]
