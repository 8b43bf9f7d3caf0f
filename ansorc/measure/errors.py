"""Measurement error codes, numbered as Ansor's MeasureErrorNo so logs stay comparable."""
from __future__ import annotations

from enum import IntEnum


class MeasureErrorNo(IntEnum):
    NO_ERROR = 0
    INSTANTIATION_ERROR = 1   # replaying the steps or lowering failed: no source was produced
    COMPILE_HOST = 2          # the C compiler rejected the source
    COMPILE_DEVICE = 3        # nvcc rejected the device code
    RUNTIME_DEVICE = 4        # crash, signal, non-zero kernel return code, missing symbol
    WRONG_ANSWER = 5          # outputs differ from the reference, or an input was modified
    BUILD_TIMEOUT = 6
    RUN_TIMEOUT = 7
    UNKNOWN_ERROR = 8


def error_name(code: int) -> str:
    """'WRONG_ANSWER' for 5; 'UNKNOWN_ERROR(42)' for codes outside the table."""
    try:
        return MeasureErrorNo(code).name
    except ValueError:
        return f"UNKNOWN_ERROR({code})"
