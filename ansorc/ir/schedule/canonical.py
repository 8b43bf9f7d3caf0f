"""Steps in canonical (structural) names, so that a tuning log replays across renames.

The workload key ignores names: two programs that differ only in tensor or index names share records. The steps
in a record must then not name the stages and iterators either. In canonical form a stage is `#<i>` (the i-th op
of the DAG, in the order the workload key uses) plus whatever suffix scheduling added (`#2.local`, `#2.rf`), and
an iterator is built from `#<j>` (the j-th axis, spatial then reduce, of its stage's op) the same way (`#0.1@#1.0`,
`#3.1.v`). '#' is never part of a user's name, so canonical names are unambiguous; names that are not derived
from the DAG's (the `ax0` axes of a cache_read copy) stay as they are. `replay` accepts either form.
"""
from __future__ import annotations

import re

from ..program.te import ComputeOp

_CACHE_READ_AXIS = re.compile(r"^ax\d+")
# JSON positions, after the tag, of the stage-like fields, and of iterator fields with the field naming their stage
_STAGES = {"SP": (0,), "FSP": (0,), "FFSP": (0,), "FU": (0,), "RE": (0,), "CA": (0, 1), "CI": (0,), "CR": (0,),
           "CHW": (0,), "CHR": (0,), "RF": (0,), "AN": (0,), "PR": (0,)}
_ITERS = {"SP": ((1, 0),), "FSP": ((1, 0),), "FFSP": ((1, 0),), "FU": ((1, 0),), "RE": ((1, 0),), "CA": ((2, 1),),
          "RF": ((1, 0),), "AN": ((1, 0),), "PR": ((1, 0),)}


def _split(name: str, bases) -> tuple | None:
    """(base, rest) for the longest base that name starts with, followed by nothing or a '.' suffix."""
    best = None
    for b in bases:
        if name.startswith(b) and (len(name) == len(b) or name[len(b)] == ".") and (best is None or len(b) > len(best)):
            best = b
    return None if best is None else (best, name[len(best):])


class _Names:
    def __init__(self, dag, to_canonical: bool):
        ops = list(dag.ops)
        axes = [[a.name for a in op.axes + op.reduce_axes] if isinstance(op, ComputeOp) else [] for op in ops]
        if to_canonical:
            self.stage_map = {op.name: f"#{i}" for i, op in enumerate(ops)}
            self.axis_maps = {op.name: {a: f"#{j}" for j, a in enumerate(ax)} for op, ax in zip(ops, axes)}
        else:
            self.stage_map = {f"#{i}": op.name for i, op in enumerate(ops)}
            self.axis_maps = {f"#{i}": {f"#{j}": a for j, a in enumerate(ax)} for i, ax in enumerate(axes)}
        self.to_canonical = to_canonical

    def base_op(self, stage: str) -> str | None:
        hit = _split(stage, self.stage_map)
        return None if hit is None else hit[0]

    def stage(self, name):
        hit = _split(name, self.stage_map) if isinstance(name, str) else None
        return name if hit is None else self.stage_map[hit[0]] + hit[1]

    def iterator(self, name, stage):
        base = self.base_op(stage) if isinstance(stage, str) else None
        if base is None or not isinstance(name, str):
            return name
        amap = self.axis_maps[base]
        parts = []
        for part in name.split("@"):
            hit = None if self.to_canonical and _CACHE_READ_AXIS.match(part) else _split(part, amap)
            parts.append(part if hit is None else amap[hit[0]] + hit[1])
        return "@".join(parts)


def rename_steps(dag, steps_json: list, to_canonical: bool) -> list:
    """The steps (JSON lists) with names mapped into (to_canonical) or out of canonical form for `dag`."""
    names = _Names(dag, to_canonical)
    out = []
    for step in steps_json:
        if not isinstance(step, list) or not step or step[0] not in _STAGES:
            out.append(step)
            continue
        args = list(step[1:])
        stages = list(args)  # the stage names as written, for the iterators' context
        for i in _STAGES[step[0]]:
            if i < len(args):
                args[i] = names.stage(args[i])
        if step[0] == "CHR" and len(args) > 2 and isinstance(args[2], list):
            args[2] = [names.stage(r) for r in args[2]]
        for i, ctx in _ITERS.get(step[0], ()):
            if i < len(args) and ctx < len(args):
                it = args[i]
                args[i] = [names.iterator(x, stages[ctx]) for x in it] if isinstance(it, list) else \
                    names.iterator(it, stages[ctx])
        out.append([step[0], *args])
    return out


def is_canonical(steps_json: list) -> bool:
    return any(isinstance(s, list) and len(s) > 1 and isinstance(s[1], str) and s[1].startswith("#")
               for s in steps_json)


__all__ = ["rename_steps", "is_canonical"]
