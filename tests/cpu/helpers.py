"""Shared checks for tests that compile kernels: build under a schedule, run on random data, compare."""
import numpy as np

import ansorc
from ansorc.ir.evaluate import evaluate, random_inputs


def check_kernel(tensors, schedule=None, rtol=1e-4, atol=1e-4, seed=0, name="kernel"):
    kern = ansorc.build(tensors, schedule, name=name)
    dag = ansorc.ComputeDAG(tensors)
    inputs = random_inputs(dag.inputs, seed)
    expected = evaluate(list(dag.outputs), inputs)
    got = kern(*[inputs[t.name] for t in dag.inputs])
    got = got if isinstance(got, tuple) else (got,)
    for t, g in zip(dag.outputs, got):
        np.testing.assert_allclose(g, expected[t.name], rtol=rtol, atol=atol, err_msg=f"output {t.name}")
    return kern
