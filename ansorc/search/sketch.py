"""Sketch generation: apply derivation rules from the output stage backwards (Ansor section 4.1).

A sketch is a State whose structure is fixed (tiling, cache stages, rfactor, fusion) and whose low-level
decisions (split lengths) are still None; random annotation fills them in.
"""
from __future__ import annotations

import json

from ..ir.schedule.state import ScheduleError, State
from ..ir.schedule.steps import steps_to_json
from .rules import APPLY, APPLY_AND_SKIP_REST, SKIP, Rule, default_cpu_rules


def generate_sketches(task, rules: list | None = None, custom_rules: tuple = (), max_sketches: int = 64) -> list:
    """All terminal states of the derivation, deduplicated, in a stable order.

    rules: default the task's policy's sketch rules (the CPU ones for a task without a policy). custom_rules run
    ahead of them (a user's rule can claim a stage before the defaults)."""
    if rules is None:
        policy = getattr(task, "policy", None)
        rules = policy.sketch_rules() if policy is not None else default_cpu_rules()
    rules = list(custom_rules) + list(rules)
    init = State.initial(task.dag)
    frontier = [(init, len(init.stages) - 1)]
    done: list[State] = []
    seen: set[str] = set()
    while frontier:
        nxt = []
        for state, i in frontier:
            if i < 0:
                key = json.dumps(steps_to_json(state.steps))
                if key not in seen:
                    seen.add(key)
                    done.append(state)
                continue
            nxt += _derive(task, rules, state, i)
        frontier = nxt
        if len(done) >= max_sketches:
            break
    return done[:max_sketches]


def _derive(task, rules: list[Rule], state: State, i: int) -> list:
    out = []
    for rule in rules:
        cond = rule.condition(task, state, i)
        if cond == SKIP:
            continue
        try:
            out += rule.apply(task, state, i)
        except ScheduleError:
            continue  # a rule that cannot apply here is a branch that does not exist
        if cond == APPLY_AND_SKIP_REST:
            break
        assert cond == APPLY
    return out


def print_sketches(sketches: list) -> str:
    """Golden-test friendly text: every sketch's loop tree and step list."""
    parts = []
    for k, s in enumerate(sketches):
        parts.append(f"== sketch {k} ==\n{s}\nsteps: {json.dumps(steps_to_json(s.steps))}")
    return "\n".join(parts)
