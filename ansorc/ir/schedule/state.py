"""The search IR: a lightweight loop structure per stage, built only by replaying transform steps.

A Stage holds its op (cache_write / rfactor / cache_read create new ops), its leaf iterators in loop order,
the split/fuse relations that connect leaves to the op's axes, where it is computed (root, inline, or
attached at an iterator of another stage), and its pragmas. States are immutable; steps return new states.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from functools import cached_property

from ...errors import AnsorcError
from ..program.te import ComputeOp


class ScheduleError(AnsorcError, ValueError):
    """A step cannot be applied to the state (names what and where)."""


_FIELDS: dict = {}   # class -> its dataclass field names


def renew(obj, **changes):
    """dataclasses.replace for the schedule's frozen dataclasses (none has __post_init__): their declared fields
    copied, then the changes. The search replays step histories hundreds of thousands of times a round, and
    dataclasses.replace (through __init__) was a sixth of that time. Cached properties are not carried over."""
    cls = type(obj)
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = frozenset(f.name for f in fields(cls))
    if not names.issuperset(changes):
        raise TypeError(f"{cls.__name__} has no field {sorted(set(changes) - names)[0]!r}")
    new = object.__new__(cls)
    d, src = new.__dict__, obj.__dict__
    for n in names:
        d[n] = src[n]
    d.update(changes)
    return new


@dataclass(frozen=True)
class Iterator:
    name: str
    extent: int | None     # None while a split length is undecided (sketch)
    kind: str              # "S" spatial | "R" reduce
    annotation: str = ""   # "" | parallel | vectorize | unroll | blockIdx.x | threadIdx.x | vthread ...


@dataclass(frozen=True)
class SplitRel:
    """parent = sum(child_k * stride_k); lengths are the inner children's factors (outermost first)."""
    parent: str
    children: tuple
    lengths: tuple


@dataclass(frozen=True)
class FuseRel:
    parents: tuple
    child: str


@dataclass(frozen=True)
class Stage:
    op: ComputeOp
    iters: tuple                  # Iterator, in loop order (outermost first)
    relations: tuple = ()         # SplitRel | FuseRel, in the order they were made
    compute_at: str = "root"      # root | inline | attached
    attach: tuple | None = None   # (stage name, iterator name) when attached
    pragmas: tuple = ()           # (("auto_unroll_max_step", N),)
    scope: str = "global"         # storage scope of the stage's buffer: global | local | shared

    @property
    def name(self) -> str:
        return self.op.name

    def iter_index(self, name: str) -> int:
        for i, it in enumerate(self.iters):
            if it.name == name:
                return i
        raise ScheduleError(f"stage {self.name!r} has no iterator {name!r}; it has "
                            f"{[it.name for it in self.iters]}")

    def iter(self, name: str) -> Iterator:
        return self.iters[self.iter_index(name)]

    @property
    def is_tiled(self) -> bool:
        return any(isinstance(r, SplitRel) for r in self.relations)


def initial_stage(op: ComputeOp, scope: str = "global") -> Stage:
    iters = tuple(Iterator(a.name, a.extent, "S") for a in op.axes) + \
        tuple(Iterator(a.name, a.extent, "R") for a in op.reduce_axes)
    return Stage(op, iters, scope=scope)


@dataclass(frozen=True)
class State:
    dag: object = field(compare=False, repr=False)
    stages: tuple = ()
    steps: tuple = ()

    @staticmethod
    def initial(dag) -> "State":
        return State(dag, tuple(initial_stage(op) for op in dag.compute_ops), ())

    # ------------------------------------------------------------------ lookups
    def stage(self, name: str) -> Stage:
        for s in self.stages:
            if s.name == name:
                return s
        raise ScheduleError(f"no stage named {name!r}; stages are {[s.name for s in self.stages]}")

    def stage_index(self, name: str) -> int:
        for i, s in enumerate(self.stages):
            if s.name == name:
                return i
        raise ScheduleError(f"no stage named {name!r}; stages are {[s.name for s in self.stages]}")

    def has_stage(self, name: str) -> bool:
        return any(s.name == name for s in self.stages)

    def with_stage(self, stage: Stage) -> "State":
        i = self.stage_index(stage.name)
        return renew(self, stages=self.stages[:i] + (stage,) + self.stages[i + 1:])

    @property
    def ops(self) -> dict:
        return {s.name: s.op for s in self.stages}

    def readers(self, name: str) -> list:
        """Stages whose op reads tensor `name`."""
        return [s.name for s in self.stages if any(t.name == name for t in s.op.inputs)]

    def attached_at(self, stage: str, iter_name: str) -> list:
        return list(self._attachments.get((stage, iter_name), ()))

    @cached_property
    def _attachments(self) -> dict:
        """(stage, iter) -> names of the stages attached there: one pass, not one per loop (linear lowering)."""
        out: dict = {}
        for s in self.stages:
            if s.compute_at == "attached":
                out.setdefault(tuple(s.attach), []).append(s.name)
        return out

    def is_output(self, name: str) -> bool:
        return self.dag.is_output(name)

    # ------------------------------------------------------------------ replay
    def apply(self, step) -> "State":
        new = step.apply(self)
        return renew(new, steps=self.steps + (step,))

    def apply_steps(self, steps) -> "State":
        s = self
        for st in steps:
            s = s.apply(st)
        return s

    @property
    def is_complete(self) -> bool:
        return all(it.extent is not None for s in self.stages for it in s.iters)

    def __str__(self) -> str:
        from .printer import print_state
        return print_state(self)


def replay(dag, steps) -> State:
    """The only way to build a scheduled State: replay steps on the DAG's initial state. Steps in canonical
    names (as logs store them, see canonical.py) are first mapped to this DAG's names."""
    steps = tuple(steps)
    if any(str(getattr(st, "stage", getattr(st, "tensor", ""))).startswith("#") for st in steps):
        from .canonical import rename_steps  # steps.py and canonical.py import this module
        from .steps import steps_from_json, steps_to_json
        steps = steps_from_json(rename_steps(dag, steps_to_json(steps), to_canonical=False))
    return State.initial(dag).apply_steps(steps)
