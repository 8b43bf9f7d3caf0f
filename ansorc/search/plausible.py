"""Whether a logged timing could be true on this machine: a log is trusted for speed only below the machine's peak.

A record claiming more (a line saying 1e-9 s for a 64^3 matmul is 5e5 GFLOP/s) is forged, corrupt or from
another machine: compile(trials=0) re-times such a best (autotune.py), and a tuning session leaves such records
out of what it resumes (tuning.py), each with one ImplausibleRecordWarning naming the log and the record's line.
"""
from __future__ import annotations

from ..codegen.target import Target
from ..ir.program.dtypes import ITEMSIZE
from ..measure.record import Record


class ImplausibleRecordWarning(UserWarning):
    """A log's record claims a speed above this machine's peak (forged, corrupt or measured elsewhere)."""


def narrowest(dag) -> int:
    """Bytes of the narrowest element the workload reads or writes: its vectors' most lanes."""
    return min((ITEMSIZE[t.dtype] for t in (*dag.inputs, *dag.outputs)), default=4)


def bound_flops(dag, tgt: Target) -> float:
    return tgt.peak_flops_bound(narrowest(dag))


def plausible(dag, tgt: Target, seconds: float) -> bool:
    """Whether `seconds` for `dag` is within what this machine could possibly do (Target.peak_flops_bound)."""
    return seconds > 0 and dag.flop_count / seconds <= bound_flops(dag, tgt)


def cpu_target(name: str) -> Target | None:
    """The Target of a target name where a peak bound is known (Target.peak_flops_bound), else None."""
    tgt = Target.from_name(name)
    return tgt if tgt.peak_flops_bound() is not None else None


def gflops(dag, seconds: float) -> str:
    return f"{dag.flop_count / seconds / 1e9:.4g}" if seconds > 0 else "inf"


def claim(log, rec: Record, dag, tgt: Target) -> str:
    """The warning's words for `rec`: where it is, what it claims, and the bound."""
    return (f"{log}:{line_of(log, rec)}: a record of workload {dag.workload_key} claims {rec.median:.3g} s "
            f"({gflops(dag, rec.median)} GFLOP/s), above this machine's bound of "
            f"{bound_flops(dag, tgt) / 1e9:.4g} GFLOP/s")


def line_of(log, rec: Record) -> int | str:
    """The line of `rec` in the file `log` (for the warning), "?" if it is not found as written."""
    try:
        with open(getattr(log, "path", log), encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                try:
                    if Record.from_json(line) == rec:
                        return number
                except Exception:  # noqa: BLE001 - a line load() skipped is not this record
                    continue
    except (OSError, TypeError):   # a list of records, not a file
        pass
    return "?"


__all__ = ["ImplausibleRecordWarning", "plausible", "claim", "cpu_target", "gflops", "narrowest"]
