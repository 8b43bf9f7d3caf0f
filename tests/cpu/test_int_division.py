"""Issue 12 row 11: integer // and % by zero (and INT_MIN // -1) follow numpy in the evaluator and the kernel
(0 for a zero divisor, wrap for the overflow) instead of killing the process with SIGFPE; tuning A // B works."""
import numpy as np
import pytest

import ansorc
from ansorc.ir.program import te
from ansorc.ir.program.evaluate import evaluate
from ansorc.search.evolution import SearchParams
from ansorc.search.tuner import tune
from ansorc.search.tuning import tune_options


def _divmod_graph(dtype):
    A = te.placeholder((4, 16), dtype, "A")
    B = te.placeholder((4, 16), dtype, "B")
    Q = te.compute((4, 16), lambda i, j: A[i, j] // B[i, j], name="Q")
    R = te.compute((4, 16), lambda i, j: A[i, j] % B[i, j] + Q[i, j] * 0, name="R")
    return [A, B, R], [A, B, Q]


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_division_by_zero_and_int_min_over_minus_one_match_numpy(dtype):
    info = np.iinfo(dtype)
    a = np.array([7, -7, 0, info.min, info.max, info.min, 5, -5] * 8, dtype).reshape(4, 16)
    b = np.array([0, 0, 0, -1, -1, 0, 3, 3] * 8, dtype).reshape(4, 16)
    for tensors in _divmod_graph(dtype):
        kern = ansorc.build(tensors, name=f"divmod_{dtype}")
        out = np.full((4, 16), 99, dtype)
        kern(a, b, out)  # before: SIGFPE killed the test process here
        want = evaluate([tensors[-1]], {"A": a, "B": b})[tensors[-1].name]
        np.testing.assert_array_equal(out, want)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(want, a // b)  # numpy's own semantics: x // 0 == 0


def test_tuning_integer_division_with_zeros_in_the_random_inputs_finds_valid_programs(tmp_path):
    A = te.placeholder((32, 32), "int32", "A")
    B = te.placeholder((32, 32), "int32", "B")
    C = te.compute((32, 32), lambda i, j: A[i, j] // B[i, j] + A[i, j] % B[i, j], name="C")
    res = tune([A, B, C], trials=6, log=str(tmp_path / "log.jsonl"),
               options=tune_options(per_round=6, progress=False, runner_kwargs={"min_repeat_ms": 1, "repeat": 1},
                                    params=SearchParams(population=16, generations=1)))
    assert res.best_state is not None and res.best_gflops >= 0
