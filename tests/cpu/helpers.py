"""Shared checks for tests that compile kernels: build under a schedule, run on random data, compare, and make
sure the kernel wrote nothing outside its output arrays (guard zones around every argument)."""
import numpy as np

import ansorc
from ansorc.ir.evaluate import evaluate, random_inputs

GUARD = 4096  # elements of sentinel before and after each argument
SENTINEL = np.float32(-12345.0)


def _guarded(arr: np.ndarray):
    flat = np.full(arr.size + 2 * GUARD, SENTINEL, dtype=arr.dtype)
    view = flat[GUARD:GUARD + arr.size].reshape(arr.shape)
    view[...] = arr
    return flat, view


def check_kernel(tensors, schedule=None, rtol=1e-4, atol=1e-4, seed=0, name="kernel"):
    kern = ansorc.build(tensors, schedule, name=name)
    dag = ansorc.ComputeDAG(tensors)
    inputs = random_inputs(dag.inputs, seed)
    expected = evaluate(list(dag.outputs), inputs)
    bufs = [_guarded(inputs[t.name]) for t in dag.inputs]
    bufs += [_guarded(np.zeros(t.shape, np.dtype(t.dtype))) for t in dag.outputs]
    before = [v.copy() for _, v in bufs[:len(dag.inputs)]]
    kern(*[v for _, v in bufs])
    for flat, view in bufs:
        assert (flat[:GUARD] == SENTINEL).all() and (flat[-GUARD:] == SENTINEL).all(), "write out of bounds"
    for b, (_, v) in zip(before, bufs):
        np.testing.assert_array_equal(v, b, err_msg="an input was modified")
    for t, (_, g) in zip(dag.outputs, bufs[len(dag.inputs):]):
        np.testing.assert_allclose(g, expected[t.name], rtol=rtol, atol=atol, err_msg=f"output {t.name}")
    return kern
