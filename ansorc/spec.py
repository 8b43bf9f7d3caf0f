"""KernelSpec: everything that determines a compiled kernel, so it can be rebuilt (under another C name, for
export) exactly as it was built: the DAG, the schedule, the target, the compiler and its flags, and where the
schedule came from."""
from __future__ import annotations

from dataclasses import dataclass, replace

from .codegen.pipeline import render
from .codegen.source import Source
from .codegen.target import Target
from .ir.program.dag import ComputeDAG
from .ir.lowering.lower_options import DEFAULT_LOWER, LowerOptions
from .ir.schedule.state import State


@dataclass(frozen=True)
class KernelSpec:
    dag: ComputeDAG
    state: State | None          # the schedule; None is the naive loop nest
    target: Target
    flags: tuple                 # compiler flags of the shared library (the target's unless overridden)
    cc: str                      # the compiler those flags are for
    provenance: tuple = ()       # (label, value) pairs for the exported header: tuning log, trials, speed
    expression: str = ""         # the source expression file's text, quoted in the exported header
    lower_options: LowerOptions = DEFAULT_LOWER   # the lowering's choices (all on unless a benchmark says)

    @classmethod
    def of(cls, dag: ComputeDAG, state: State | None, target: Target, flags=None, cc: str | None = None
           ) -> "KernelSpec":
        """A spec that compiles with the target's compiler and flags unless told otherwise."""
        return cls(dag, state, target, tuple(target.flags if flags is None else flags), cc or target.cc)

    def source(self, name: str) -> Source:
        """The C source of this kernel with entry point `name`."""
        return render(self.dag, self.state, name, self.target, self.lower_options)

    def with_provenance(self, provenance: dict) -> "KernelSpec":
        return replace(self, provenance=tuple((str(k), v) for k, v in provenance.items()))

    def with_expression(self, text: str) -> "KernelSpec":
        return replace(self, expression=text)

    @property
    def provenance_dict(self) -> dict:
        return dict(self.provenance)


__all__ = ["KernelSpec"]
