"""Kernels with streaming stores (the store_stream pragma) compute the same values, on an aligned output and on
one whose rows start off the vector alignment (those stores take the plain path)."""
from __future__ import annotations

import warnings

import numpy as np

import ansorc
from ansorc import workloads
from ansorc.codegen.target import Target
from ansorc.ir.program.dag import ComputeDAG
from ansorc.ir.schedule.state import replay
from ansorc.search.tuning import default_state
from ansorc.search.task import SearchTask
from ansorc.ir.schedule.steps import Pragma


def _softmax_with(key: str, value: int, name: str, seed: int):
    """The default softmax program with pragma `key` on its output stage, built; random input; numpy's exps."""
    tensors = workloads.make("SFM", 0)
    dag = ComputeDAG(tensors)
    base = default_state(SearchTask(dag, "native"))
    out = dag.outputs[0].name
    state = replay(dag, tuple(base.steps) + (Pragma(out, base.stage(out).iters[0].name, key, value),))
    kern = ansorc.build(tensors, state, name=name)
    x = ansorc.array(np.random.default_rng(seed).standard_normal(dag.inputs[0].shape, dtype=np.float32))
    return kern, x, np.exp(x - x.max(axis=1, keepdims=True))


def test_streamed_softmax_matches_numpy_aligned_and_not():
    kern, x, e = _softmax_with("store_stream", 1, "sfm_stream", 0)
    want = e / e.sum(axis=1, keepdims=True)
    aligned = ansorc.empty(want.shape, np.float32)
    kern(x, aligned)
    np.testing.assert_allclose(aligned, want, rtol=1e-5, atol=1e-7)
    raw = np.zeros(want.size + 1, np.float32)
    shifted = raw[1:].reshape(want.shape)      # 4 bytes past a 64-byte boundary
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")        # the kernel warns that the output is not 64-byte aligned
        kern(x, shifted)
    np.testing.assert_allclose(shifted, want, rtol=1e-5, atol=1e-7)
    if Target.from_name("native").isa in ("avx2", "avx512"):
        assert "_stream_ps(" in kern.source


def test_prefetched_softmax_matches_numpy():
    """The prefetch pragma (passes/prefetch.py) on a softmax's row loop, two rows ahead: the same values, the last rows'
    prefetches clamped into the input."""
    kern, x, e = _softmax_with("prefetch", 2, "sfm_prefetch", 1)
    got = ansorc.empty(e.shape, np.float32)
    kern(x, got)
    np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
    if Target.from_name("native").isa in ("avx2", "avx512", "neon"):
        assert "__builtin_prefetch(A + ansorc_min_i32(" in kern.source
