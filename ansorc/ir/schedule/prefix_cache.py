"""Replay through a cache of step-history prefixes, per DAG: a trie whose edges are steps and whose nodes hold the
state after them. The search replays each history in full (a mutation changes one step of a parent that was
replayed before, a worker replays every history it scores), so most of the prefix is already known.

States are immutable and a step's `apply` is a pure function of (state, step), so a prefix's state can be shared
by every history that starts with it. Steps key the trie as dataclasses (equal fields, equal step); the schema
in steps.py keeps bools out of integer fields, so equal steps apply the same. The returned state carries the
caller's own step objects. The cache is bounded: past MAX_NODES states it starts again empty."""
from __future__ import annotations

from .state import State, renew

MAX_NODES = 20000     # states kept, all DAGs together (a population round replays a few thousand histories)
MAX_DAGS = 64         # DAGs with a trie at once
_TRIES: dict = {}     # id(dag) -> (dag, root): the DAG is kept so that its id is not reused while keyed
_NODES = [0]          # states held


def clear() -> None:
    _TRIES.clear()
    _NODES[0] = 0


def _root(dag) -> list:
    entry = _TRIES.get(id(dag))
    if entry is None or entry[0] is not dag:
        if len(_TRIES) >= MAX_DAGS:
            clear()
        entry = _TRIES[id(dag)] = (dag, [State.initial(dag), {}])
    return entry[1]


def cached_replay(dag, steps) -> State:
    """State.initial(dag).apply_steps(steps), reusing the states of prefixes replayed before. Raises what
    apply raises; the steps before a failing one stay cached."""
    steps = tuple(steps)
    if _NODES[0] >= MAX_NODES:
        clear()
    node = _root(dag)
    for step in steps:
        nxt = node[1].get(step)
        if nxt is None:
            nxt = [node[0].apply(step), {}]
            node[1][step] = nxt
            _NODES[0] += 1
        node = nxt
    state = node[0]
    return state if state.steps is steps else renew(state, steps=steps)


__all__ = ["cached_replay", "clear", "MAX_NODES"]
