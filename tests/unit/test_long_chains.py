"""Issue 12 row 10: a chain of thousands of tensors (far past Python's recursion limit) parses, builds its DAG,
evaluates, lowers, renders and gives features without RecursionError."""
import sys

import numpy as np
import pytest

from ansorc.codegen.pipeline import render
from ansorc.frontend import parse_text
from ansorc.ir.program.dag import ComputeDAG
from ansorc.ir.program.evaluate import evaluate
from ansorc.ir.lowering.lower import lower
from ansorc.ir.schedule.state import State
from ansorc.ir.lowering.stmt import stmt_children, walk_stmt
from ansorc.search.features import extract_states
from tests.kernel_text import body_of

N = 3 * sys.getrecursionlimit()


def _chain_text(n):
    lines = ["param N = 4", "input T0: float32[N]"]
    lines += [f"T{k}[i] = T{k - 1}[i] + 1.0" for k in range(1, n)]
    lines.append(f"output OUT[i] = T{n - 1}[i] * 2.0")
    return "\n".join(lines) + "\n"


def test_a_chain_of_thousands_of_tensors_goes_through_every_stage_of_the_compiler():
    prog = parse_text(_chain_text(N))
    dag = ComputeDAG(prog.tensors)
    assert len(dag.ops) == N + 1 and len(dag.workload_key) == 32
    out = evaluate(prog.outputs, {"T0": np.zeros(4, np.float32)})["OUT"]
    np.testing.assert_array_equal(out, np.full(4, 2.0 * (N - 1), np.float32))
    src = render(dag, None, "chain", "generic")
    assert body_of(src.code, "chain").count("for (") == N      # the function body: one loop a stage
    assert max(len(line) - len(line.lstrip()) for line in src.code.splitlines()) <= 80  # linear size
    [features] = extract_states([State.initial(dag)])
    assert features.shape[0] == N


def _walk_recursive(s):
    yield s
    for c in stmt_children(s):
        yield from _walk_recursive(c)


def test_iterative_statement_walk_keeps_the_pre_order():
    prog = parse_text(_chain_text(5) + "output S[i] = sum(T3[k] * OUT[i]) where k < N\n")
    body = lower(State.initial(ComputeDAG(prog.tensors))).body
    assert [id(s) for s in walk_stmt(body)] == [id(s) for s in _walk_recursive(body)]


def test_small_programs_render_inline_and_large_ones_in_the_big_stack_thread():
    import threading

    from ansorc.ir.program.deep import run_deep
    seen = []
    run_deep(10, lambda: seen.append(threading.current_thread().name))
    run_deep(10 * sys.getrecursionlimit(), lambda: seen.append(threading.current_thread().name))
    assert seen == [threading.current_thread().name, "ansorc-deep"]
    limit = sys.getrecursionlimit()
    with pytest.raises(ZeroDivisionError):  # errors come back to the caller as they are
        run_deep(10 * limit, lambda: 1 // 0)
    assert sys.getrecursionlimit() == limit  # and the limit is restored
