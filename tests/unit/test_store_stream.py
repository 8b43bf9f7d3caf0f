"""The store_stream pragma: a root stage that only writes a kernel output stores its vectors with streaming stores
(an unaligned address takes the plain store), each thread fences them before its parallel loop's iteration ends;
the search samples it only for large outputs."""
from __future__ import annotations

import random

import pytest

from ansorc.codegen.pipeline import render
from ansorc.ir.program import te
from ansorc.ir.program.dag import ComputeDAG
from ansorc.ir.schedule.state import ScheduleError, replay
from ansorc.ir.schedule.steps import Annotate, Pragma, Split, steps_from_json, steps_to_json
from ansorc.search.annotate import STREAM_MIN_BYTES, stream_large_outputs
from ansorc.search.task import SearchTask


def _scale(n: int = 256, m: int = 1024):
    a = te.placeholder((n, m), name="A")
    return [a, te.compute((n, m), lambda i, j: a[i, j] * 2.0, name="B")]


def _steps(stream: bool):
    steps = [Split("B", "j", (8,)), Annotate("B", "i", "parallel"), Annotate("B", "j.1", "vectorize")]
    return steps + ([Pragma("B", "i", "store_stream", 1)] if stream else [])


def test_stream_stores_are_aligned_or_plain_and_fenced_per_parallel_iteration():
    tensors = _scale()
    code = render(tensors, replay(ComputeDAG(tensors), _steps(True)), "k", "avx2").code
    assert "_mm256_stream_ps((B + " in code and "& 31u) ? _mm256_storeu_ps((B + " in code
    body = code[code.index("static void k_par0("):]   # the parallel loop's body (codegen/parallel.py)
    assert "_mm_sfence();" in body[:body.index("\n}\n")]   # each claim fences its stores
    plain = render(tensors, replay(ComputeDAG(tensors), _steps(False)), "k", "avx2").code
    assert "stream" not in plain and "sfence" not in plain


def test_no_stream_where_the_isa_has_none_or_the_stage_reads_its_output():
    tensors = _scale()
    state = replay(ComputeDAG(tensors), _steps(True))
    assert "stream" not in render(tensors, state, "k", "neon").code
    a = te.placeholder((64, 512), name="A")
    k = te.reduce_axis((0, 512), name="k")
    rows = te.compute((64,), lambda i: te.sum(a[i, k], axis=k), name="R")
    red = replay(ComputeDAG([a, rows]), [Annotate("R", "i", "parallel"), Pragma("R", "i", "store_stream", 1)])
    assert "stream" not in render([a, rows], red, "k", "avx2").code


def test_pragma_round_trips_and_unknown_ones_are_refused():
    steps = _steps(True)
    assert steps_from_json(steps_to_json(steps)) == tuple(steps)
    with pytest.raises(ScheduleError, match="unknown pragma"):
        replay(ComputeDAG(_scale()), [Pragma("B", "i", "store_nontemporal", 1)])


def test_sampled_only_for_large_outputs():
    def sampled(n: int, m: int) -> tuple:
        task = SearchTask(ComputeDAG(_scale(n, m)), "avx2")
        state = replay(task.dag, _steps(False))
        rng = random.Random(0)
        got = [any(getattr(s, "key", "") == "store_stream" for s in stream_large_outputs(task, state, rng).steps)
               for _ in range(20)]
        return sum(got), rng.random()
    big_rows = STREAM_MIN_BYTES // (4 * 1024)
    hits, _ = sampled(big_rows, 1024)
    assert 0 < hits < 20
    hits, next_draw = sampled(16, 1024)
    assert hits == 0 and next_draw == random.Random(0).random()   # nothing drawn: other choices stay the same
