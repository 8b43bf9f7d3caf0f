"""Shared checks for tests that compile kernels: build under a schedule, run on random data, compare, and make
sure the kernel wrote nothing outside its output arrays (guard zones around every argument)."""
import numpy as np

import ansorc
from ansorc.ir.program.evaluate import evaluate, random_inputs
from ansorc.measure.builder import build
from ansorc.measure.errors import error_name
from ansorc.measure.runner import Runner

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


def check_in_worker(dag, progs, sources, flags, what, timeout=60, cc="gcc"):
    """Build `sources` (one per entry of `progs`, which names the program in a failure) and run them in the
    measurement worker, as tuning does (a crash is a recorded error, not a dead pytest); every one must build and
    match the reference on random data."""
    results = build(sources, target_flags=flags, timeout=180, cc=cc)
    inputs = random_inputs(dag.inputs, 0)
    ref = evaluate(list(dag.outputs), inputs)
    with Runner([inputs[t.name] for t in dag.inputs], [ref[t.name] for t in dag.outputs],
                min_repeat_ms=0, repeat=1, rtol=1e-4, atol=1e-3, timeout=timeout, cc=cc) as runner:
        measured = runner.run(results)
    for prog, res, m in zip(progs, results, measured):
        assert res.ok, f"{what}: build failed for\n{prog}\n{res.error_msg[:2000]}"
        assert m.ok, f"{what}: {error_name(m.error_code)} for program\n{prog}\n{m.error_msg[:1500]}"


def check_sanitized(dag, source, inputs: dict, reference: dict, what: str) -> None:
    """Build `source` with -fsanitize=address,undefined and run it on `inputs`: no report, outputs equal to
    `reference` (skips where the sanitizers are missing). `what` names the program in a failure."""
    import pytest
    from ansorc.measure.sanitize import SanitizerUnavailable, run_sanitized
    try:
        run = run_sanitized(source, [inputs[t.name] for t in dag.inputs])
    except SanitizerUnavailable as e:
        pytest.skip(str(e))
    assert run.report == "", f"{what}\n{run.report}"
    for t, got in zip(dag.outputs, run.outputs):
        np.testing.assert_allclose(got, reference[t.name], rtol=1e-4, atol=1e-4, err_msg=what)
