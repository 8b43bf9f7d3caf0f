"""Huge sizes fail before anything is allocated, with one line saying how much memory the tensors need (issue 12
row 7: a numpy MemoryError traceback during tuning before)."""
from __future__ import annotations

import pytest

from ansorc.errors import AnsorcError
from ansorc.ir.program import te
from ansorc.ir.program.dag import ComputeDAG
from ansorc.measure import memory
from ansorc.measure.memory import NotEnoughMemoryError, check_fits, measurement_bytes


def _gmm(n: int) -> ComputeDAG:
    a = te.placeholder((n, n), "float32", name="A")
    b = te.placeholder((n, n), "float64", name="B")
    k = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    return ComputeDAG([a, b, c])


def test_bytes_count_every_stage_and_the_workers_copies():
    n = 1000
    # stages A (4 B), B and C (8 B: float32 * float64 is float64) once, then the arguments again
    assert measurement_bytes(_gmm(n)) == 2 * (4 + 8 + 8) * n * n


def test_too_large_is_one_line_with_the_amounts():
    dag = _gmm(40000)
    with pytest.raises(NotEnoughMemoryError) as info:
        check_fits(dag, available=8 * 2**30)
    msg = str(info.value)
    assert "\n" not in msg and isinstance(info.value, AnsorcError)
    assert "needs at least 59.6 GiB" in msg and "8.0 GiB available" in msg and "B: float64[40000, 40000]" in msg
    check_fits(dag, available=60 * 2**30)  # fits: no error


def test_tuning_checks_before_drawing_inputs(monkeypatch):
    from ansorc.search.task import SearchTask
    from ansorc.search.tuning import measure_task
    monkeypatch.setattr(memory, "available_bytes", lambda: 2**20)
    with pytest.raises(NotEnoughMemoryError, match="needs at least"):
        measure_task(SearchTask(_gmm(1024)), seed=0)
    monkeypatch.setattr(memory, "available_bytes", lambda: 2**40)
    assert measure_task(SearchTask(_gmm(8)), seed=0).inputs[0].shape == (8, 8)


def test_available_bytes_reads_this_machine():
    have = memory.available_bytes()
    assert have is None or have > 2**20
