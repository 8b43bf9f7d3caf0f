"""Seeding a task's first round from similar tasks (transfer inside a run).

A network's tasks repeat one structure at many shapes (the convolutions of ResNet's stages), and a tuning log
holds other models' tasks of the same structures. A new task's first round is otherwise the default program and
whatever the (possibly cold) model ranks highest; the best programs of the nearest already-tuned task of the same
structure, re-targeted to the new shape, are usually far better and cost one trial each.

Structure: per op, what a step history refers to (placeholder or compute, axis counts, combiner, dtype, tag, which
ops it reads), without extents: a history in canonical names (`#i` the i-th op, `#j` its j-th axis;
ir/schedule/canonical.py) then names the same stages and iterators in every task of that structure, whatever the
tasks' own names. Re-targeting replays the donor's canonical steps on the new DAG, adapting each split's factors
to the extent it now splits (retarget); a history that does not replay or render is dropped.

Nearness: the distance between the tasks' argument shapes (sum of |log ratio| of their dimensions, read from the
DAG's signature, which records keep too), so donors come from this run's tuners and from the log's records alike.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass

from ..ir.program.te import ComputeOp
from ..ir.schedule.canonical import rename_steps
from ..ir.schedule.state import ScheduleError, State
from ..ir.schedule.steps import Split, steps_from_json, steps_to_json
from ..measure.record import best, for_target
from .annotate import divisors, state_key
from .parallel import rendered

MAX_DONORS = 3      # nearest donors whose programs are tried, nearest first
DONOR_PROGRAMS = 8  # best programs read from each donor (some may not re-target)


def structure_key(dag) -> str:
    """A digest of the DAG's structure without its extents: equal for the same computation at other shapes."""
    ops = list(dag.ops)
    index = {op.name: i for i, op in enumerate(ops)}
    body = []
    for op in ops:
        if isinstance(op, ComputeOp):
            body.append([len(op.axes), len(op.reduce_axes), op.combiner or "", op.dtype, op.tag,
                         sorted(index.get(t.name, -1) for t in op.inputs)])
        else:
            body.append(["placeholder", len(op.shape), op.dtype])
    return hashlib.sha1(json.dumps(body).encode()).hexdigest()[:16]


_DIMS = re.compile(r"\[([\d,]*)\]")


def shape_vector(signature: str) -> tuple:
    """Every dimension of every argument in a signature "A[1,64,56,56] B[...] -> C[...]", in order."""
    return tuple(int(d) for group in _DIMS.findall(signature) for d in group.split(",") if d)


def distance(a: str, b: str) -> float:
    """Shape distance of two signatures of one structure (infinite where their dimensions do not pair up)."""
    x, y = shape_vector(a), shape_vector(b)
    if len(x) != len(y) or not x:
        return math.inf
    return sum(abs(math.log(max(p, 1)) - math.log(max(q, 1))) for p, q in zip(x, y))


def adapt_lengths(extent: int | None, lengths: tuple) -> tuple:
    """A split's inner factors (outermost first) for a new extent: innermost first, a factor is kept where it
    divides what is left, else the largest divisor of that not above it, unless that halves the tile (then the
    factor stays and the split is padded, as the sampler does for awkward extents). The outer loop is the rest."""
    if extent is None or any(x is None for x in lengths):
        return tuple(lengths)
    out, rest = [], extent
    for ln in reversed(lengths):
        fit = max(d for d in divisors(rest) if d <= ln) if rest >= 1 else 1
        take = fit if 2 * fit > min(ln, rest) else min(ln, rest)
        out.append(max(1, take))
        rest = max(1, -(-rest // out[-1]))
    return tuple(reversed(out))


def retarget(dag, steps_json: list) -> State | None:
    """The donor history (canonical JSON steps) replayed on `dag` with its splits adapted; None where it fails."""
    try:
        steps = steps_from_json(rename_steps(dag, steps_json, to_canonical=False))
        state = State.initial(dag)
        for step in steps:
            if isinstance(step, Split):
                extent = state.stage(step.stage).iter(step.iter).extent
                step = Split(step.stage, step.iter, adapt_lengths(extent, tuple(step.lengths)))
            state = state.apply(step)
    except (ScheduleError, KeyError, ValueError, IndexError, TypeError):
        return None
    return state if state.is_complete else None


@dataclass(frozen=True)
class Donor:
    workload_key: str
    signature: str
    steps: tuple        # canonical JSON step lists of its best programs, best first


class SeedPool:
    """The donors of one run: its tuners (read when asked, so that a task tuned earlier in the run counts) and
    the log's records of other workloads with a structure key."""

    def __init__(self, tuners: list, logged=()):
        self.tuners = tuners
        self.logged = [r for r in logged if getattr(r, "structure", "")]

    def donors(self, task) -> list:
        """Donors of task's structure, target and another workload, nearest first (at most MAX_DONORS)."""
        key, found = structure_key(task.dag), {}
        for t in self.tuners:
            other = t.task
            if other.target == task.target and other.workload_key != task.workload_key and t.best_states \
                    and (getattr(t, "structure", None) or structure_key(other.dag)) == key:   # TaskTuner keeps it
                steps = tuple(rename_steps(other.dag, steps_to_json(st.steps), to_canonical=True)
                              for _, st in t.best_states[:DONOR_PROGRAMS])
                found[other.workload_key] = Donor(other.workload_key, other.dag.signature, steps)
        mine = for_target(task.target)
        keys = {r.workload_key: r.signature for r in self.logged
                if r.structure == key and r.workload_key != task.workload_key and mine(r)}
        for wk, sig in keys.items():
            if wk not in found:
                recs = best(self.logged, wk, task.target, k=DONOR_PROGRAMS)
                if recs:
                    found[wk] = Donor(wk, sig, tuple(r.steps for r in recs))
        far = {wk: distance(d.signature, task.dag.signature) for wk, d in found.items()}
        near = sorted((d for d in found.values() if math.isfinite(far[d.workload_key])),
                      key=lambda d: (far[d.workload_key], d.workload_key))
        return near[:MAX_DONORS]

    def seeds(self, task, n: int, skip=frozenset()) -> list:
        """Up to n distinct re-targeted programs of the nearest donors that render, none of whose keys is in
        `skip` (measured or already proposed)."""
        out, seen = [], set(skip)
        for donor in self.donors(task):
            for steps in donor.steps:
                if len(out) >= n:
                    return out
                state = retarget(task.dag, steps)
                if state is None or state_key(state) in seen:
                    continue
                seen.add(state_key(state))
                if rendered(task.dag, state, "seed", task.target)[0] is not None:
                    out.append(state)
        return out


__all__ = ["SeedPool", "Donor", "structure_key", "shape_vector", "distance", "adapt_lengths", "retarget"]
