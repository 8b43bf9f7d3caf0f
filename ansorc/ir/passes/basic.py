"""Passes on the lowered program, one function each; `default_passes` lists them in order."""
from __future__ import annotations

from dataclasses import replace

from ..program.expr import Const, walk
from ..program.expr import substitute as substitute_expr
from ..program.simplify import simplify
from ..lowering.stmt import Allocate, For, IfThenElse, PrimFunc, Seq, Stmt, Store, seq, store_executions, walk_stmt
from .verify import check_allocated_before_use, check_no_nested_parallel, verify, verify_requested

MAX_EXPLICIT_UNROLL = 64  # an iterator annotated "unroll" is replicated up to this extent, else left to gcc
# A loop is not replicated when the copies would hold more expression nodes than this: 512 unrolled steps of a
# big body (a strided transposed conv, a 3-D conv with padding) make 300-500 KB of C that gcc needs 10-20 s for
# at -O3 (past the build timeout), for no speed: such bodies are far past the register file anyway.
MAX_UNROLLED_NODES = 8_000


def map_stmt_exprs(s: Stmt, fn, bounds: dict) -> Stmt:
    """Apply fn(expr, bounds) to every expression, with the loop-variable bounds in scope."""
    if isinstance(s, For):
        inner = dict(bounds)
        inner[s.var] = (0, s.extent - 1)
        return replace(s, body=map_stmt_exprs(s.body, fn, inner))
    if isinstance(s, Seq):
        return seq(*[map_stmt_exprs(c, fn, bounds) for c in s.stmts])
    if isinstance(s, Store):
        return Store(s.buffer, tuple(fn(i, bounds) for i in s.indices), fn(s.value, bounds))
    if isinstance(s, IfThenElse):
        cond = fn(s.cond, bounds)
        if isinstance(cond, Const):
            return map_stmt_exprs(s.then, fn, bounds) if cond.value else None
        return replace(s, cond=cond, then=map_stmt_exprs(s.then, fn, bounds))
    if isinstance(s, Allocate):
        return Allocate(s.buffer, map_stmt_exprs(s.body, fn, bounds))
    return s


def simplify_stmt(func: PrimFunc) -> PrimFunc:
    body = map_stmt_exprs(func.body, lambda e, b: simplify(e, b), {})
    return replace(func, body=body if body is not None else Seq(()))


def _nodes(s: Stmt) -> int:
    """Expression nodes in s as written (a loop counts its body once): a measure of the C it becomes."""
    total = 0
    for st in walk_stmt(s):
        if isinstance(st, Store):
            total += 1 + sum(1 for i in st.indices for _ in walk(i)) + sum(1 for _ in walk(st.value))
        elif isinstance(st, IfThenElse):
            total += sum(1 for _ in walk(st.cond))
        elif isinstance(st, For):
            total += 1
    return total


def _replicate(f: For) -> Stmt:
    return seq(*[map_stmt_exprs(f.body, lambda e, b, k=k: substitute_expr(e, {f.var: Const(k, "int32")}), {})
                 for k in range(f.extent)])


def unroll_loops(func: PrimFunc) -> PrimFunc:
    """Explicit unrolling: loops annotated 'unroll' (small extents), and every serial loop whose step count is
    within the auto_unroll_max_step pragma of the stage it belongs to."""
    def visit(s: Stmt, max_step: int) -> Stmt:
        if isinstance(s, For):
            ms = s.auto_unroll or max_step
            body = visit(s.body, ms)
            f = replace(s, body=body, auto_unroll=0)
            if any(isinstance(x, Allocate) for x in walk_stmt(body)):
                return f  # replicas would redeclare the buffer in one scope; a producer nest stays a loop
            wants = (f.kind == "unroll" and f.extent <= MAX_EXPLICIT_UNROLL) or \
                (f.kind == "serial" and ms and store_executions(f) <= ms)
            if wants and f.extent * _nodes(body) <= MAX_UNROLLED_NODES:
                return _replicate(f)
            return f
        if isinstance(s, Seq):
            return seq(*[visit(c, max_step) for c in s.stmts])
        if isinstance(s, IfThenElse):
            return replace(s, then=visit(s.then, max_step))
        if isinstance(s, Allocate):
            return Allocate(s.buffer, visit(s.body, max_step))
        return s
    return replace(func, body=visit(func.body, 0))


def verify_structure(func: PrimFunc) -> PrimFunc:
    """The checks every lowered program passes before unrolling, always (cheap): no nested parallel loops, no
    access to a buffer that is not there. ANSORC_VERIFY=1 adds all of ir/passes/verify.py after every pass."""
    return verify(func, checks=(check_no_nested_parallel, check_allocated_before_use))


def partition_selects(func: PrimFunc) -> PrimFunc:
    """Loops cut where a select between buffers on their index changes arm (partition.py)."""
    from .partition import partition_selects as partition
    return partition(func)


DEFAULT_PASSES = (verify_structure, partition_selects, unroll_loops, simplify_stmt)


def run_passes(func: PrimFunc, passes, *args) -> PrimFunc:
    """Apply passes in order (each `pass(func, *args)`); with ANSORC_VERIFY=1 verify the result of each."""
    checking, verified = verify_requested(), None
    for p in passes:
        func = p(func, *args)
        if checking and func is not verified:   # a pass that changed nothing returns its input: checked already
            verified = verify(func, after=p.__name__)
    return func


def default_passes(func: PrimFunc) -> PrimFunc:
    return run_passes(func, DEFAULT_PASSES)


__all__ = ["default_passes", "run_passes", "DEFAULT_PASSES", "unroll_loops", "simplify_stmt", "verify_structure",
           "map_stmt_exprs"]
