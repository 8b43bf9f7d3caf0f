"""pin_operands: a vector load shared by several statements of one straight-line run is loaded once into a
register the compiler must keep (after promote_registers; the renderer marks it with the target's "pin").

Why: gcc folds such a load into every FMA that uses it as a memory operand (vfmadd231ps (mem), b, acc) when
its cost model finds that as cheap. A register tile's weights vector is read by every row of the tile, so a
4-row x 2-vector tile then issues 12 loads per 8 FMAs instead of 6; Zen 3 sustains about two loads a cycle
beside its two FMAs, so on a hot-cache micro-kernel such a tile falls well short of the FMA peak that the
pinned tile nearly reaches (docs/perf-notes.md, "Code generation").

An operand is pinned only while the run's accumulators, the pinned operands live at that point and one broadcast fit
the register file: a 7 x 2 tile (14 accumulators) has no room, and pinning its weights spills, which costs more than
the folded loads. Only top-level statements of a run take part (a load under a guard stays where it is), only loads
that the statement always evaluates (not an arm of a select: a padding read), and only loads of buffers the run does
not write (no store can come between the load and a use).
"""
from __future__ import annotations

from dataclasses import replace

from ..program.expr import Select
from ..lowering.stmt import Allocate, PrimFunc, Seq, Stmt, seq
from ..program.names import fresh_name
from .vector import (VAssign, VDecl, VLoad, VSelect, VStore, VVar, identifiers, stmt_kids, vchildren, vtransform,
                     walk_all, with_kids)
from .vectorize import VectorCaps


def _written(stmts: list) -> set:
    """Buffers stored to (or allocated) anywhere in the run."""
    out = set()
    for s in stmts:
        for n in walk_all(s):
            buf = getattr(n, "buffer", None)
            out.add(buf.name if isinstance(n, Allocate) else buf)
    return out - {None}


def _accumulators(stmts: list) -> int:
    """Registers the run's results occupy: promoted registers it assigns, vectors it stores (gcc keeps a
    store-to-load-forwarded accumulator in a register too)."""
    regs = {s.var.name for s in stmts if isinstance(s, VAssign)}
    stored = {(s.buffer, s.index) for s in stmts if isinstance(s, VStore)}
    return len(regs) + len(stored)


def _shared_loads(stmts: list, caps: VectorCaps) -> dict:
    """{VLoad: [statement positions]} for the vector loads that two or more top-level statements share."""
    written = _written(stmts)
    uses: dict = {}
    for k, s in enumerate(stmts):
        if not isinstance(s, (VAssign, VStore)):
            continue
        for n in _unconditional(s.value):
            if isinstance(n, VLoad) and n.lanes > 1 and n.buffer not in written and \
                    caps.has("pin", n.dtype, n.lanes):
                positions = uses.setdefault(n, [])
                if not positions or positions[-1] != k:
                    positions.append(k)
    return {ld: ks for ld, ks in uses.items() if len(ks) > 1}


def _unconditional(e):
    """The nodes of e that every evaluation of e evaluates: not the arms of a select, whose untaken arm may read
    outside its buffer (a padding load; hoisted before the statement it would always run)."""
    stack = [e]
    while stack:
        n = stack.pop()
        yield n
        stack.extend([n.cond] if isinstance(n, (Select, VSelect)) else vchildren(n))


def _choose(shared: dict, room: int) -> list:
    """The loads to pin, in first-use order, while at most `room` are live at any statement."""
    chosen: list = []
    for ld, ks in sorted(shared.items(), key=lambda item: item[1][0]):
        lo, hi = ks[0], ks[-1]
        live = max(sum(1 for _, (a, b) in chosen if a <= p <= b) for p in range(lo, hi + 1))
        if live + 1 <= room:
            chosen.append((ld, (lo, hi)))
    return chosen


class _Pinner:
    def __init__(self, caps: VectorCaps, taken: set):
        self.caps = caps
        self.count = 0
        self.taken = taken

    def run(self, s: Stmt) -> Stmt:
        s = with_kids(s, tuple(self.run(c) for c in stmt_kids(s)))
        return self.pin_run(list(s.stmts)) if isinstance(s, Seq) else s

    def pin_run(self, stmts: list) -> Stmt:
        shared = _shared_loads(stmts, self.caps)
        room = self.caps.registers - _accumulators(stmts) - 1
        chosen = _choose(shared, room) if shared else []
        if not chosen:
            return seq(*stmts)
        regs = {}
        for ld, _ in chosen:
            regs[ld] = VVar(fresh_name(f"{ld.buffer}_p{self.count}", self.taken), ld.lanes, ld.dtype)
            self.count += 1

        def swap(e):
            return vtransform(e, lambda n: regs.get(n) if isinstance(n, VLoad) else None)
        stmts = [replace(s, value=swap(s.value)) if isinstance(s, (VAssign, VStore)) else s for s in stmts]
        for ld, (first, _) in reversed(chosen):   # each declared where first used, live to its last use
            stmts = stmts[:first] + [VDecl(((regs[ld], ld),), seq(*stmts[first:]), pin=True)]
        return seq(*stmts)


def pin_operands(func: PrimFunc, caps: VectorCaps) -> PrimFunc:
    """Pin the shared vector operands of every straight-line run (see the module docstring)."""
    if not any(op == "pin" for op, _, _ in caps.ops):
        return func
    return replace(func, body=_Pinner(caps, identifiers(func)).run(func.body))


__all__ = ["pin_operands"]
