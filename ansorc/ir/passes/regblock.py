"""promote_registers: register blocking of local accumulators (scalar replacement), after vectorize_loops.

After explicit unrolling and vectorization, the accesses of a cache-write tile `C.local[i3, j3]` inside the
reduction loop touch a fixed set of elements: `C_local[c + 16*i3 ...]` with i3 a constant and the vector lanes
contiguous. Such a run of statements is rewritten to keep each element group in a named register (a C local
the compiler keeps in a vector register): loaded once before the run (skipped when the first access is an
unconditional store, e.g. the zero-init), updated in place by the FMAs, stored once after it.

A run qualifies for a local buffer X when, in every statement of it:
  - each access to X is a contiguous vector or scalar access (no scatter), outside parallel loops and guards;
  - its flat index is invariant in the loops inside the run (only enclosing loop variables appear);
  - all accesses share one non-constant index part, so they differ by constants, and two element groups are
    either the same (same offset and lanes) or disjoint: no aliasing between registers;
  - there are at most `budget` groups and at least one access repeats (sits in a loop of extent > 1).
The outermost qualifying run wins (the tree is processed top-down), so the loads and stores move as far out
as the index structure allows.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..program.dtypes import NARROW_INTS, STORAGE_FLOATS
from ..program.expr import Expr, Read, free_vars
from ..program.simplify import _linear, simplify
from ..lowering.stmt import Allocate, For, IfThenElse, PrimFunc, Seq, Stmt, Store, seq
from ..program.names import fresh_name
from .vector import (VAssign, VDecl, VLoad, VScatter, VStore, VVar, identifiers, lanes_of, map_top, stmt_kids,
                     top_exprs, vtransform, vwalk, with_kids)
from .vectorize import flat_index


@dataclass(frozen=True)
class _Access:
    base: frozenset     # the non-constant part of the flat index, as linear terms
    offset: int
    lanes: int
    rep: object         # the original index: flat Expr (vector) or index tuple (scalar)


NARROW = NARROW_INTS + STORAGE_FLOATS   # element types without vector registers


class _Bad(Exception):
    pass


class _Promoter:
    def __init__(self, func: PrimFunc, budget: int):
        self.budget = budget
        self.shapes = {b.name: b.storage for b in func.args}
        self.dtypes = {b.name: b.dtype for b in func.args}
        self.count = 0
        self.taken = identifiers(func)
        self.mentioned: dict = {}   # id(stmt) -> (stmt, the buffers it accesses)

    # ------------------------------------------------------------------ analysis
    def access(self, buf: str, index, lanes: int) -> _Access:
        flat = index if lanes > 1 or not isinstance(index, tuple) else \
            simplify(flat_index(index, self.shapes[buf]))
        terms, c = _linear(flat)
        return _Access(frozenset(terms.items()), c, lanes, index)

    def collect(self, s: Stmt, buf: str, declared: set, out: list, in_loop: bool, guarded: bool = False) -> bool:
        """Append the accesses to buf in s; True if one of them repeats. _Bad if one is not promotable."""
        repeats = False
        for e in top_exprs(s):
            for n in vwalk(e):
                acc = None
                if isinstance(n, VLoad) and n.buffer == buf:
                    if n.lanes > 1 and self.dtypes[buf] in NARROW:
                        raise _Bad()   # a dot instruction's narrow operand (passes/dot.py): no register class
                    acc = (n.index, n.lanes, free_vars(n.index))
                elif isinstance(n, Read) and n.name == buf:
                    acc = (tuple(n.indices), 1, set().union(*map(free_vars, n.indices)))
                elif getattr(n, "buffer", None) == buf:
                    raise _Bad()   # another vector read (a masked load) has no register form
                if acc is not None:
                    if acc[2] & declared or guarded:
                        raise _Bad()
                    out.append(self.access(buf, acc[0], acc[1]))
                    repeats |= in_loop
        if isinstance(s, VScatter) and s.buffer == buf:
            raise _Bad()
        if isinstance(s, (Store, VStore)) and s.buffer == buf:
            index = tuple(s.indices) if isinstance(s, Store) else s.index
            fv = set().union(*map(free_vars, index)) if isinstance(s, Store) else free_vars(index)
            if fv & declared or guarded:
                raise _Bad()
            out.append(self.access(buf, index, lanes_of(s.value)))
            repeats |= in_loop
        if isinstance(s, For):
            if s.kind == "parallel":
                raise _Bad()
            declared = declared | {s.var}
            in_loop = in_loop or s.extent > 1
        # An access under a guard may have an out-of-range index when the guard is false (a clamped region, a
        # split's overhang): hoisting it out would read or write outside the buffer (not so under a skip guard or
        # a version: the same accesses happen either way). Such a statement is not
        # part of a run; the guarded body is processed on its own instead.
        guarded = guarded or (isinstance(s, IfThenElse) and not (s.skip or s.version))
        for c in stmt_kids(s):
            repeats |= self.collect(c, buf, declared, out, in_loop, guarded)
        return repeats

    def plan(self, accs: list) -> list | None:
        """The register groups (offset, lanes) with one representative access each, or None."""
        if len({a.base for a in accs}) != 1:
            return None
        groups = {}
        for a in accs:
            groups.setdefault((a.offset, a.lanes), a)
        keys = sorted(groups)
        for (o1, l1), (o2, _) in zip(keys, keys[1:]):
            if o2 < o1 + l1:  # overlapping groups of different shape would alias
                return None
        return [groups[k] for k in keys] if len(keys) <= self.budget else None

    # ------------------------------------------------------------------ rewriting
    def mentions(self, s: Stmt) -> frozenset:
        """The buffers that s or a statement inside it accesses (cached: process visits a subtree once per
        enclosing level and local buffer)."""
        hit = self.mentioned.get(id(s))
        if hit is not None and hit[0] is s:
            return hit[1]
        names = {getattr(s, "buffer", None)}
        for e in top_exprs(s):
            for n in vwalk(e):
                names.add(n.name if isinstance(n, Read) else getattr(n, "buffer", None))
        for c in stmt_kids(s):
            names |= self.mentions(c)
        out = frozenset(n for n in names if isinstance(n, str))   # an Allocate's `buffer` is a Buffer, not a name
        self.mentioned[id(s)] = (s, out)
        return out

    def process(self, s: Stmt, buf: str) -> Stmt:
        if s is not None and buf not in self.mentions(s):   # nothing to promote in it: as it is (None: Seq(()))
            return s
        stmts = list(s.stmts) if isinstance(s, Seq) else [s]
        out, run = [], []
        for c in stmts + [None]:
            info = self.classify(c, buf) if c is not None else "end"
            if info == "bad" or info == "end":
                out += self.flush(run, buf)
                run = []
                if c is not None:
                    out.append(self.descend(c, buf))
            else:
                run.append((c, info))
        return seq(*out) if out else Seq(())

    def classify(self, s: Stmt, buf: str):
        accs: list = []
        try:
            repeats = self.collect(s, buf, set(), accs, False)
        except _Bad:
            return "bad"
        return (accs, repeats)

    def flush(self, run: list, buf: str) -> list:
        stmts = [c for c, _ in run]
        accs = [a for _, (acc, _) in run for a in acc]
        groups = self.plan(accs) if accs else None
        if not groups or not any(rep for _, (_, rep) in run):
            return [self.descend(c, buf) for c in stmts]
        first, last = next(k for k, (_, (a, _)) in enumerate(run) if a), \
            max(k for k, (_, (a, _)) in enumerate(run) if a)
        return stmts[:first] + [self.promote(stmts[first:last + 1], buf, groups)] + stmts[last + 1:]

    def descend(self, s: Stmt, buf: str) -> Stmt:
        if isinstance(s, Seq):
            return self.process(s, buf)
        if isinstance(s, For):
            return For(s.var, s.extent, s.kind, self.process(s.body, buf), s.auto_unroll)
        if isinstance(s, IfThenElse):
            return replace(s, then=self.process(s.then, buf))
        if isinstance(s, Allocate):
            return Allocate(s.buffer, self.process(s.body, buf))
        if isinstance(s, VDecl):
            return replace(s, body=self.process(s.body, buf))
        return s

    def promote(self, stmts: list, buf: str, groups: list) -> Stmt:
        dtype = self.dtypes[buf]
        regs = {}
        for g in groups:
            regs[(g.offset, g.lanes)] = VVar(fresh_name(f"{buf}_r{self.count}", self.taken), g.lanes, dtype)
            self.count += 1

        def key(buf_name, index, lanes):
            a = self.access(buf_name, index, lanes)
            return regs[(a.offset, a.lanes)]

        def expr(e: Expr) -> Expr:
            def fn(n):
                if isinstance(n, VLoad) and n.buffer == buf:
                    return key(buf, n.index, n.lanes)
                if isinstance(n, Read) and n.name == buf:
                    return key(buf, tuple(n.indices), 1)
                return None
            return vtransform(e, fn)

        def stmt(s: Stmt) -> Stmt:
            if isinstance(s, Store) and s.buffer == buf:
                return VAssign(key(buf, tuple(s.indices), 1), expr(s.value))
            if isinstance(s, VStore) and s.buffer == buf:
                return VAssign(key(buf, s.index, lanes_of(s.value)), expr(s.value))
            return map_top(with_kids(s, tuple(stmt(c) for c in stmt_kids(s))), expr)

        written_first, written = self.first_writes(stmts, buf)
        decls, backs = [], []
        for g in groups:
            var = regs[(g.offset, g.lanes)]
            k = (g.offset, g.lanes)
            load = VLoad(buf, g.rep, g.lanes, dtype) if g.lanes > 1 else Read(buf, g.rep, dtype)
            decls.append((var, None if k in written_first else load))
            if k in written:
                backs.append(VStore(buf, g.rep, var) if g.lanes > 1 else Store(buf, g.rep, var))
        return VDecl(tuple(decls), seq(*[stmt(c) for c in stmts], *backs))

    def first_writes(self, stmts: list, buf: str) -> tuple:
        """(groups whose first access is an unconditional store, groups stored at all)."""
        seen, first, written = set(), set(), set()

        def note_reads(e):
            for n in vwalk(e):
                if isinstance(n, VLoad) and n.buffer == buf:
                    seen.add(self.k(buf, n.index, n.lanes))
                elif isinstance(n, Read) and n.name == buf:
                    seen.add(self.k(buf, tuple(n.indices), 1))

        def visit(s: Stmt, conditional: bool):
            for e in top_exprs(s):
                note_reads(e)
            if isinstance(s, (Store, VStore)) and s.buffer == buf:
                k = self.k(buf, tuple(s.indices) if isinstance(s, Store) else s.index, lanes_of(s.value))
                written.add(k)
                if k not in seen and not conditional:
                    first.add(k)
                seen.add(k)
            for c in stmt_kids(s):
                visit(c, conditional or isinstance(s, IfThenElse))
        for s in stmts:
            visit(s, False)
        return first, written

    def k(self, buf, index, lanes):
        a = self.access(buf, index, lanes)
        return (a.offset, a.lanes)

    def run(self, s: Stmt) -> Stmt:
        """Promote every local buffer, starting at its allocation."""
        if isinstance(s, Allocate):
            self.shapes[s.buffer.name] = s.buffer.storage
            self.dtypes[s.buffer.name] = s.buffer.dtype
            body = self.run(s.body)
            if s.buffer.scope == "local":
                body = self.process(body, s.buffer.name)
            return Allocate(s.buffer, body)
        if isinstance(s, Seq):
            return seq(*[self.run(c) for c in s.stmts])
        if isinstance(s, For):
            return For(s.var, s.extent, s.kind, self.run(s.body), s.auto_unroll)
        if isinstance(s, IfThenElse):
            return replace(s, then=self.run(s.then))
        return s


def promote_registers(func: PrimFunc, budget: int = 24) -> PrimFunc:
    """Keep fixed element groups of local buffers in registers across the loops that reuse them."""
    return replace(func, body=_Promoter(func, budget).run(func.body))


__all__ = ["promote_registers"]
