"""Issue 12 "must show": random te programs with random schedules from the sampler are either rejected with an
ansorc error or built with -fsanitize=address,undefined and run clean, matching the numpy reference. And the
sanitizer sweep: every benchmark operator (small shapes of the same formulas) x 5 sampled programs, zero reports.
The long run (2,000 programs) is bench/fuzz_sanitize.py."""
from __future__ import annotations

import random
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansorc import workloads as W
from ansorc.api import generate_source
from ansorc.ir.program.bounds import BoundsError
from ansorc.ir.program.evaluate import evaluate, random_inputs
from ansorc.ir.schedule.state import ScheduleError
from ansorc.search.annotate import sample
from ansorc.search.task import HardwareParams, SearchTask
from tests.cpu.fuzz_programs import Chooser, random_program
from tests.cpu.helpers import check_sanitized

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
HW = HardwareParams(num_cores=2)


class _Drawn(Chooser):
    def __init__(self, data):
        self.data = data

    def randint(self, lo, hi):
        return self.data.draw(st.integers(lo, hi))


def check_program(tensors, seed: int, n_programs: int = 1) -> int:
    """How many of n_programs sampled schedules built and ran under the sanitizers, clean and matching the
    reference (0: the sampler or lowering refused them all, with an ansorc error). A sanitizer report or a
    mismatch fails the assertion."""
    task = SearchTask(tensors, hw=HW)
    dag = task.dag
    states = sample(task, n_programs, seed=seed) or [None]
    x = random_inputs(dag.inputs, seed)
    ref = evaluate(list(dag.outputs), x)
    clean = 0
    for state in states:
        try:
            src = generate_source(dag, state, f"fz{seed}")
        except (ScheduleError, ValueError):
            continue
        check_sanitized(dag, src, x, ref, f"{dag}\nschedule: {state.steps if state else None}")
        clean += 1
    return clean


@settings(max_examples=200, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_random_programs_are_rejected_or_run_clean_under_asan_and_ubsan(data):
    try:
        tensors = random_program(_Drawn(data))
    except BoundsError as e:  # the check under test; its message names the read
        assert "compute 's" in str(e) and "subscript" in str(e)
        return
    check_program(tensors, seed=data.draw(st.integers(0, 1000)))


def test_the_generator_makes_both_rejected_and_accepted_programs():
    outcomes = {"rejected": 0, "accepted": 0}
    for seed in range(200):
        try:
            random_program(Chooser(random.Random(seed)))
            outcomes["accepted"] += 1
        except BoundsError:
            outcomes["rejected"] += 1
    assert outcomes["rejected"] >= 20 and outcomes["accepted"] >= 20, outcomes


SMALL = {"GMM": (1, 8, 9, 7), "C1D": (1, 17, 4, 8, 3, 2, 1), "C2D": (1, 9, 9, 4, 8, 3, 2, 1),
         "C3D": (1, 4, 6, 6, 3, 4, 3, 2, 1), "GRP": (1, 8, 8, 8, 8, 3, 2, 1), "DIL": (1, 9, 9, 4, 4, 3, 1, 2),
         "DEP": (1, 9, 9, 8, 3, 2, 1), "T2D": (1, 4, 4, 8, 4, 4, 2, 1), "CAP": (1, 6, 6, 4, 4, 3, 2, 1),
         "NRM": (1, 16, 13), "CBR": (1, 9, 9, 4, 8, 3, 2, 1), "TBG": (1, 16, 2, 8), "SFM": (16, 13)}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(W.WORKLOADS))
def test_sanitizer_sweep_every_benchmark_operator_five_programs(name):
    fn, _ = W.WORKLOADS[name]
    assert check_program(fn(*SMALL[name]), seed=7, n_programs=5) == 5
