"""Kernels with constant inputs keep what they compute from them alone (ir/lowering/prepared.py, codegen/prepared.py):
equal to numpy on every call, made again for other weight arrays or after constants_changed(), safe under
concurrent calls with different weights, and measured by the worker with the copy already made."""
from __future__ import annotations

import shutil
import threading

import numpy as np
import pytest

import ansorc
from ansorc.codegen.pipeline import render
from ansorc.ir.program import te
from ansorc.ir.program.dag import ComputeDAG
from ansorc.ir.schedule.state import State
from ansorc.measure.builder import build
from ansorc.measure.errors import MeasureErrorNo as E
from ansorc.measure.runner import Runner

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")

N, K, M = 24, 40, 32


def _dag(constant: bool = True) -> ComputeDAG:
    """C = A @ W through WT, a transposed copy of W: with W constant, WT is made once and kept."""
    a = te.placeholder((N, K), name="A")
    w = te.placeholder((K, M), name="W")
    wt = te.compute((M, K), lambda j, r: w[r, j] * 0.5, name="WT")
    r = te.reduce_axis((0, K), name="r")
    c = te.compute((N, M), lambda i, j: te.sum(a[i, r] * wt[j, r], axis=r), name="C")
    return ComputeDAG([a, w, c], constants=["W"] if constant else ())


def _inputs(seed: int):
    rng = np.random.default_rng(seed)
    return (ansorc.array(rng.standard_normal((N, K), dtype=np.float32)),
            ansorc.array(rng.standard_normal((K, M), dtype=np.float32)))


def _want(a, w):
    return a @ (w * 0.5)


@pytest.fixture(scope="module")
def kernel():
    dag = _dag()
    return ansorc.build(dag, State.initial(dag), name="mm_const")


def test_equal_to_numpy_on_every_call_and_for_other_weights(kernel):
    assert kernel.source_obj.prepared and "if (WT_stale)" in kernel.source
    a, w = _inputs(0)
    for _ in range(3):
        np.testing.assert_allclose(kernel(a, w), _want(a, w), rtol=1e-5, atol=1e-5)
    _, w2 = _inputs(1)
    np.testing.assert_allclose(kernel(a, w2), _want(a, w2), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(kernel(a, w), _want(a, w), rtol=1e-5, atol=1e-5)


def test_weights_rewritten_at_the_same_address_are_seen(kernel):
    """The key of a constant is its address and 32 words sampled across it: new weights that land where freed
    ones were (or are written over them) are told apart."""
    a, w = _inputs(2)
    kernel(a, w)
    w *= 3.0
    np.testing.assert_allclose(kernel(a, w), _want(a, w), rtol=1e-5, atol=1e-4)


def test_constants_changed_makes_the_copy_again(kernel):
    a, w = _inputs(8)
    kernel(a, w)
    w.reshape(-1)[1] += 10.0   # an element the samples skip (words 0, 41, 82, ... of 1280): not seen
    assert not np.allclose(kernel(a, w), _want(a, w), rtol=1e-5, atol=1e-4)
    kernel.constants_changed()
    np.testing.assert_allclose(kernel(a, w), _want(a, w), rtol=1e-5, atol=1e-4)


def test_concurrent_calls_with_different_weights(kernel):
    """Threads (cffi releases the GIL) calling with two weight arrays at once: a call never reads a copy that
    another call is making from other weights."""
    a, w1 = _inputs(3)
    _, w2 = _inputs(4)
    wants = {1: _want(a, w1), 2: _want(a, w2)}
    errors = []

    def work(t):
        for i in range(40):
            which = 1 + (i + t) % 2
            got = kernel(a, w1 if which == 1 else w2)
            if not np.allclose(got, wants[which], rtol=1e-5, atol=1e-5):
                errors.append((t, i, which))
    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_the_worker_checks_and_times_a_kernel_that_keeps_a_copy(tmp_path, monkeypatch):
    monkeypatch.setenv("ANSORC_CACHE_DIR", str(tmp_path / "cache"))
    dag = _dag()
    src = render(dag, State.initial(dag), "mm_measured", "native")
    wrong = render(dag, State.initial(dag), "mm_wrong", "native")
    wrong = type(wrong)(wrong.code.replace("* 0.5f", "* 0.25f"), "mm_wrong", wrong.args, prepared=True)
    good, bad = build([src, wrong], build_dir=tmp_path / "builds")
    a, w = _inputs(5)
    with Runner({"A": a, "W": w}, {"C": _want(a, w)}, min_repeat_ms=1) as runner:
        ok, off = runner.run([good, bad])
    assert ok.ok and ok.median > 0
    assert off.error_code == E.WRONG_ANSWER   # the check reads the kept copy, made from the weights


def test_prepared_spans_tell_where_the_copy_is_and_cold_timing_evicts_it(tmp_path, monkeypatch):
    """ENTRY_prepared_spans gives the kept copy's address and size (WT: M x K floats), which the worker evicts with
    the cold inputs before each timed call, as a whole model reads the copy from memory."""
    from cffi import FFI
    monkeypatch.setenv("ANSORC_CACHE_DIR", str(tmp_path / "cache"))
    dag = _dag()
    kern = ansorc.build(dag, State.initial(dag), name="mm_spans")
    ffi = FFI()
    ffi.cdef("int mm_spans_prepared_spans(void** at, size_t* bytes, int n);")
    lib = ffi.dlopen(kern.lib_path)
    at, nbytes = ffi.new("void*[4]"), ffi.new("size_t[4]")
    assert lib.mm_spans_prepared_spans(at, nbytes, 4) == 1 and at[0] == ffi.NULL   # nothing made yet
    a, w = _inputs(9)
    np.testing.assert_allclose(kern(a, w), _want(a, w), rtol=1e-5, atol=1e-5)
    assert lib.mm_spans_prepared_spans(at, nbytes, 4) == 1 and at[0] != ffi.NULL and nbytes[0] == M * K * 4
    [lib_cold] = build([render(dag, State.initial(dag), "mm_cold", "native")], build_dir=tmp_path / "builds")
    with Runner({"A": a, "W": w}, {"C": _want(a, w)}, min_repeat_ms=1, cold=["W"]) as runner:
        [res] = runner.run([lib_cold])
    assert res.ok and res.median > 0


def test_a_tuned_kernel_with_constant_weights_equals_numpy(tmp_path):
    dag = _dag()
    log = tmp_path / "mm.jsonl"
    kern = ansorc.compile(dag, trials=4, log=str(log), name="mm_tuned")
    a, w = _inputs(6)
    for _ in range(2):
        np.testing.assert_allclose(kern(a, w), _want(a, w), rtol=1e-5, atol=1e-5)
    assert ansorc.compile(_dag(False).tensors, trials=0, log=str(log), constants=["W"], name="mm_again")


def test_an_exported_kernel_keeps_the_copy_and_says_so_in_its_header(tmp_path, kernel):
    kernel.export(str(tmp_path), "mm_exported")
    header = (tmp_path / "mm_exported.h").read_text()
    assert "void mm_exported_constants_changed(void);" in header
    loaded = ansorc.load(str(tmp_path / "libmm_exported.so"))
    a, w = _inputs(7)
    np.testing.assert_allclose(loaded(a, w), _want(a, w), rtol=1e-5, atol=1e-5)
    w += 1.0
    loaded.constants_changed()
    np.testing.assert_allclose(loaded(a, w), _want(a, w), rtol=1e-5, atol=1e-5)


def test_the_command_line_declares_constants_and_names_a_wrong_one(tmp_path):
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "ansorc.cli", "compile", "examples/c2d.te", "-o", str(tmp_path),
                               "--trials", "0", "-D", "H=7", "-D", "W=7", "-D", "CI=512", "-D", "CO=512", *args],
                              capture_output=True, text=True, cwd=root)
    r = cli("--constant", "Wt")
    assert r.returncode == 0, r.stderr
    assert "void c2d_constants_changed(void);" in (tmp_path / "c2d.h").read_text()
    bad = cli("--constant", "Weights")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "--constant: constant 'Weights' is not an input of the kernel (inputs: ['I', 'Wt'])" in bad.stderr
