"""The whole space is valid: for every benchmark operator (smallest shape) 100 random programs compile and
match the numpy reference. Built at -O1 in parallel (quick to build and to run), plus a few
at the real -O3 flags."""
import numpy as np
import pytest

from ansorc import workloads
from ansorc.api import generate_source
from ansorc.ir.evaluate import evaluate, random_inputs
from ansorc.kernel import Kernel
from ansorc.measure.builder import DEFAULT_CFLAGS, build
from ansorc.search.annotate import sample
from ansorc.search.task import HardwareParams, SearchTask

FAST_FLAGS = ("-O1", "-march=native", "-fopenmp", "-shared", "-fPIC", "-std=c99")


def _check(name, n, flags, seed):
    task = SearchTask(workloads.smallest(name), hw=HardwareParams(num_cores=2))
    progs = sample(task, n, seed=seed)
    assert len(progs) >= min(n, 20), f"{name}: only {len(progs)} distinct programs"
    sources = [generate_source(task.dag, p, name=f"{name.lower()}_{k}") for k, p in enumerate(progs)]
    results = build(sources, target_flags=flags, timeout=180)  # validity, not speed: huge unrolled bodies are slow to build
    inputs = random_inputs(task.dag.inputs, 0)
    ref = evaluate(list(task.dag.outputs), inputs)
    args = [inputs[t.name] for t in task.dag.inputs]
    for prog, res in zip(progs, results):
        assert res.ok, f"{name}: build failed for\n{prog}\n{res.error_msg[:2000]}"
        out = Kernel(res.source, res.lib_path)(*args)
        out = out if isinstance(out, tuple) else (out,)
        for t, o in zip(task.dag.outputs, out):
            np.testing.assert_allclose(o, ref[t.name], rtol=1e-4, atol=1e-3,
                                       err_msg=f"{name}: wrong result for program\n{prog}")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(workloads.WORKLOADS))
def test_100_random_programs_match(name):
    _check(name, 100, FAST_FLAGS, seed=11)


@pytest.mark.parametrize("name", ["GMM", "C2D", "NRM", "SFM", "DEP", "T2D"])
def test_random_programs_match_at_o3(name):
    _check(name, 6, DEFAULT_CFLAGS, seed=5)
