"""Evolutionary operators on step histories. Mutations change decisions only (split lengths, unroll values,
compute locations, how many loops are fused for parallelism) and replay; a child that fails to replay is
dropped. Crossover (the paper's node-based one, which TVM never shipped) takes each stage's decisions from
one of two parents that share a structure."""
from __future__ import annotations

import random
from dataclasses import replace

from ..ir.schedule.state import ScheduleError, State
from ..ir.schedule.steps import Annotate, ComputeAt, ComputeInline, ComputeRoot, Fuse, Pragma, Split
from .annotate import UNROLL_CANDIDATES, divisors, location_options, row_pad_candidates

WEIGHTS = {"tile_size": 0.88, "compute_location": 0.05, "unroll": 0.04, "parallel": 0.01, "row_pad": 0.02}


def _replay(task, steps, prefix: State | None = None) -> State | None:
    """The state of `steps`, or None if they do not replay; `prefix`, the state of a leading part of them that
    the caller has (a mutation changes one step: what comes before it replays the same), is taken as it is."""
    try:
        start = prefix or State.initial(task.dag)
        return start.apply_steps(steps[len(start.steps):])
    except (ScheduleError, KeyError, ValueError):
        return None


def mutate_tile_size(task, state: State, rng: random.Random) -> State | None:
    steps = list(state.steps)
    cands = [i for i, s in enumerate(steps) if isinstance(s, Split) and s.lengths and
             s.lengths[-1] <= task.hw.max_innermost_split_factor]
    if not cands:
        return None
    i = rng.choice(cands)
    step = steps[i]
    prefix = State.initial(task.dag).apply_steps(steps[:i])
    extent = prefix.stage(step.stage).iter(step.iter).extent
    inner = 1
    for x in step.lengths:
        inner *= x
    full = [-(-extent // inner)] + list(step.lengths)
    order = list(range(len(full)))
    rng.shuffle(order)
    for src in order:
        if full[src] <= 1:
            continue
        d = rng.choice([x for x in divisors(full[src]) if x > 1])
        dst = rng.choice([k for k in range(len(full)) if k != src])
        new = list(full)
        new[src] //= d
        new[dst] *= d
        if new[-1] > task.hw.max_innermost_split_factor:
            continue
        steps[i] = Split(step.stage, step.iter, tuple(new[1:]))
        return _replay(task, steps, prefix)
    return None


def mutate_unroll(task, state: State, rng: random.Random, candidates: tuple = UNROLL_CANDIDATES) -> State | None:
    steps = list(state.steps)
    # only the unroll pragma: the others' values are switches and distances, not unroll steps
    cands = [i for i, s in enumerate(steps) if isinstance(s, Pragma) and s.key == "auto_unroll_max_step"]
    if not cands:
        return None
    i = rng.choice(cands)
    steps[i] = replace(steps[i], value=rng.choice([v for v in candidates if v != steps[i].value]))
    return _replay(task, steps)


def mutate_compute_location(task, state: State, rng: random.Random) -> State | None:
    steps = list(state.steps)
    cands = [i for i, s in enumerate(steps) if isinstance(s, (ComputeAt, ComputeRoot, ComputeInline)) and
             not state.stage(s.stage).is_tiled and not state.stage(s.stage).name.endswith(".local")]
    if not cands:
        return None
    i = rng.choice(cands)
    prefix = _replay(task, steps[:i])
    if prefix is None:
        return None
    options = location_options(prefix, steps[i].stage)
    options = [o for o in options if o != steps[i]]
    if not options:
        return None
    steps[i] = rng.choice(options)
    return _replay(task, steps, prefix)


def mutate_parallel(task, state: State, rng: random.Random) -> State | None:
    """Change how many outer loops are fused into the parallel loop; later steps follow the new name."""
    steps = list(state.steps)
    cands = [i for i, s in enumerate(steps) if isinstance(s, Annotate) and s.annotation == "parallel"]
    if not cands:
        return None
    i = rng.choice(cands)
    ann = steps[i]
    fuse_i = i - 1 if i > 0 and isinstance(steps[i - 1], Fuse) and steps[i - 1].stage == ann.stage else None
    start = fuse_i if fuse_i is not None else i
    prefix = _replay(task, steps[:start])
    if prefix is None:
        return None
    st = prefix.stage(ann.stage)
    names = []
    for it in st.iters:
        if it.kind != "S" or it.annotation:
            break
        names.append(it.name)
    old = ann.iter
    k = rng.randint(1, len(names)) if names else 0
    if k == 0 or "@".join(names[:k]) == old:
        return None
    new_name = "@".join(names[:k])
    mid = [Fuse(ann.stage, tuple(names[:k]))] if k > 1 else []
    rest = [_rename(s, ann.stage, old, new_name) for s in steps[i + 1:]]
    return _replay(task, steps[:start] + mid + [Annotate(ann.stage, new_name, "parallel")] + rest, prefix)


def _rename(step, stage: str, old: str, new: str):
    if getattr(step, "stage", None) == stage and getattr(step, "iter", None) == old:
        return replace(step, iter=new)
    if isinstance(step, ComputeAt) and step.target == stage and step.target_iter == old:
        return replace(step, target_iter=new)
    return step


def mutate_row_pad(task, state: State, rng: random.Random) -> State | None:
    """Switch the row_pad pragma (lowering/layout.py) of one workspace whose rows alias: a tuned program gets to try its
    own tiles with the other layout."""
    cands = row_pad_candidates(state)
    if not cands:
        return None
    name = rng.choice(cands).name
    steps = [s for s in state.steps if not (isinstance(s, Pragma) and s.stage == name and s.key == "row_pad")]
    if len(steps) == len(state.steps):
        steps.append(Pragma(name, state.stage(name).iters[0].name, "row_pad", 1))
    return _replay(task, steps)


MUTATORS = {"tile_size": mutate_tile_size, "compute_location": mutate_compute_location, "unroll": mutate_unroll,
            "parallel": mutate_parallel, "row_pad": mutate_row_pad}


def mutate(task, state: State, rng: random.Random, weights: dict = WEIGHTS) -> State | None:
    mutators = getattr(getattr(task, "policy", None), "mutators", MUTATORS)
    kinds = [k for k in weights if k in mutators]
    kind = rng.choices(kinds, [weights[k] for k in kinds])[0]
    try:
        return mutators[kind](task, state, rng)
    except (ScheduleError, KeyError, ValueError, IndexError):
        return None


def _structure(step) -> tuple:
    """What a step is, without its decisions."""
    if isinstance(step, Split):
        return ("SP", step.stage, step.iter, len(step.lengths))
    if isinstance(step, Pragma):
        return ("PR", step.stage, step.iter, step.key)
    return ("X", step)


def crossover(task, a: State, b: State, rng: random.Random) -> State | None:
    """Each stage takes its split lengths and unroll values from parent a or parent b."""
    if len(a.steps) != len(b.steps) or any(_structure(x)[:3] != _structure(y)[:3] and
                                           _structure(x)[0] != "X" for x, y in zip(a.steps, b.steps)):
        return None
    stages = {getattr(s, "stage", None) for s in a.steps} - {None}
    from_b = {s for s in stages if rng.random() < 0.5}
    steps = []
    for x, y in zip(a.steps, b.steps):
        if _structure(x) == _structure(y) and _structure(x)[0] != "X" and x.stage in from_b:
            steps.append(y)
        elif _structure(x)[0] == "X" and x != y:
            return None
        else:
            steps.append(x)
    return _replay(task, steps)
