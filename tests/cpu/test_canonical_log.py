"""Issue 12 row 4 end to end: a log written while tuning one .te file resumes and applies after its tensors and
indices are renamed (the workload key ignores names, and so now do the logged steps)."""
import numpy as np

from ansorc.autotune import apply_best
from ansorc.frontend import parse_text
from ansorc.ir.program.evaluate import evaluate, random_inputs
from ansorc.measure.record import load
from ansorc.search.evolution import SearchParams
from ansorc.search.tuner import tune
from ansorc.search.tuning import tune_options

TEXT = """param N = 32
input A: float32[N, N]
input B: float32[N, N]
C[i, j] = sum(A[i, k] * B[k, j])
output D[i, j] = max(C[i, j], 0.0)
"""
RENAMED = """param N = 32
input P: float32[N, N]
input Q: float32[N, N]
R[x, y] = sum(P[x, z] * Q[z, y])
output S[x, y] = max(R[x, y], 0.0)
"""
FAST = dict(runner_kwargs={"min_repeat_ms": 1, "repeat": 1}, progress=False,
            params=SearchParams(population=32, generations=1))


def test_a_log_resumes_and_applies_across_renames(tmp_path):
    log = tmp_path / "log.jsonl"
    first = parse_text(TEXT)
    second = parse_text(RENAMED)
    assert [t.name for t in second.tensors] == ["P", "Q", "S"]
    r1 = tune(first.tensors, trials=6, log=str(log), options=tune_options(per_round=6, **FAST))
    assert r1.best_state is not None
    assert all(s[1].startswith("#") for r in load(log) for s in r.steps)  # canonical names in the log
    logged = len(load(log))
    r2 = tune(second.tensors, trials=6, log=str(log), options=tune_options(per_round=6, **FAST))
    assert r2.trials == 6 and len(load(log)) == logged  # everything counted as done, nothing measured again
    assert r2.best_state is not None and {s.name for s in r2.best_state.stages} >= {"S"}
    kern = apply_best(str(log), second.tensors, name="renamed")
    x = random_inputs(second.inputs, 0)
    out = np.zeros((32, 32), np.float32)
    kern(x["P"], x["Q"], out)
    np.testing.assert_allclose(out, evaluate(second.outputs, x)["S"], rtol=1e-4, atol=1e-4)
