"""MeasureTask: what a measurement backend needs to check and time one task's programs."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ansorc.codegen.source import ArgSpec


@dataclass(frozen=True, eq=False)
class MeasureTask:
    """One task's inputs and expected outputs, sent with each batch of its builds (MeasureBackend.run).

    inputs / reference_outputs: arrays in argument order or a dict by argument name (see Runner). reference: a
    build of the unscheduled program whose outputs serve as the reference when reference_outputs is None.
    args: the signature; None takes it from the first build. key: names the task, so that a backend can tell
    whether the next batch is for the task it already holds ("" compares by identity). cold: names of input
    arguments evicted from every cache before each timed call, because the deployment reads them from memory
    (a network's weights: each is read once per inference, long after its last use), while the others come warm
    from the previous kernel."""
    inputs: Sequence[Any] | Mapping[str, Any] | None = None
    reference_outputs: Sequence[Any] | Mapping[str, Any] | None = None
    reference: Any = None                 # BuildResult
    args: Sequence[ArgSpec] | None = None
    key: str = ""
    cold: tuple = ()

    def runner_options(self, reference: Any = None) -> dict:
        """The keyword arguments of a runner's set_task() this task sets (reference: a node's local copy of
        self.reference); a GPU runner then never sees options it does not take."""
        opts = {"reference": reference if reference is not None else self.reference, "args": self.args,
                "cold": self.cold or None}
        return {k: v for k, v in opts.items() if v is not None}

    def same_as(self, other: "MeasureTask | None") -> bool:
        if other is None:
            return False
        return self is other or (bool(self.key) and self.key == other.key)


__all__ = ["MeasureTask"]
