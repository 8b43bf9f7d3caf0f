"""Prepared stages: root stages computed from constant inputs alone (ComputeDAG.constants: weights), run once
and kept between calls, as TVM rewrites the layout of constant weights ahead of time.

A blocked copy of the weights (`CHR ... block`) is the usual one: onnxruntime packs its initializers when a
session is made, so a kernel that repacks 9 MB of weights on every call loses to it by that copy
(docs/perf-notes.md, "Kept weights"). Lowering gives a prepared stage's buffer the scope "prepared" and puts its
loop nest under `if (<buffer>_stale)` (IfThenElse.prepare); the C renderer keeps the buffer between calls and sets
the flag only when the constant inputs are not those it was computed from (codegen/prepared.py). The cost model's
features skip that branch: it is not part of a call's cost.
"""
from __future__ import annotations

from ..program.dag import MAX_CONSTANTS  # noqa: F401  (read from here by codegen and net)
from ..program.expr import Read, walk


def prepared_stages(state, bodies: dict) -> frozenset:
    """Names of the root stages, not outputs, whose value depends on constant inputs only. `bodies`: each
    non-inlined stage's body with the inlined ops expanded (what it reads from buffers)."""
    constants = set(state.dag.constants)
    if not constants:
        return frozenset()
    made = set()        # stages computed from constants only, attached ones included
    for st in state.stages:          # producers come first
        if st.name not in bodies:
            continue
        reads = {r.name for r in walk(bodies[st.name]) if isinstance(r, Read)}
        if reads and reads <= constants | made:
            made.add(st.name)
    roots = {st.name: _root_of(state, st) for st in state.stages if st.name in bodies}
    out = set()
    for name in made:
        st = state.stage(name)
        if st.compute_at != "root" or state.is_output(name):
            continue
        inside = [n for n, root in roots.items() if root == name and n != name]
        if all(n in made for n in inside):   # everything computed in its nest is constant too
            out.add(name)
    return frozenset(out)


def _root_of(state, st) -> str:
    while st.compute_at == "attached":
        st = state.stage(st.attach[0])
    return st.name


__all__ = ["prepared_stages"]
