"""Compiled kernels with checked indices (te.checked_index, ONNX Gather): they match numpy on in-range indices,
fail with KernelError naming the tensor on an out-of-range one, and never read outside a buffer (shown under
AddressSanitizer), for the naive nest and for random schedules from the sampler."""
import shutil
from pathlib import Path

import numpy as np
import pytest

import ansorc
from ansorc import te
from ansorc.api import generate_source
from ansorc.codegen.c import STATUS_INDEX
from ansorc.ir.program.evaluate import evaluate
from ansorc.kernel import KernelError
from ansorc.measure.sanitize import REPORT_MARKERS, SanitizerUnavailable, run_sanitized
from ansorc.net.ops.common import LowerContext, Node
from ansorc.net.ops.gather import OPS
from ansorc.search.annotate import sample
from ansorc.search.evolution import SearchParams
from ansorc.search.task import HardwareParams, SearchTask
from ansorc.search.tuning import tune_options

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
RNG = np.random.default_rng(7)
FAST = dict(runner_kwargs={"min_repeat_ms": 1, "repeat": 1}, progress=False,
            params=SearchParams(population=64, generations=2))


def embedding_matmul():
    """A gathered row feeding a matmul, plus a second lookup whose index changes along the vector axis."""
    A = te.placeholder((50, 32), name="A")
    B = te.placeholder((16,), dtype="int32", name="B")
    W = te.placeholder((32, 48), name="W")
    k = te.reduce_axis((0, 32), name="k")
    C = te.compute((16, 48), lambda i, j: te.sum(A[te.checked_index(B[i], 50), k] * W[k, j], axis=k), name="C")
    D = te.compute((16, 48), lambda i, j: C[i, j] + A[te.checked_index(B[(i + j) % 16] - 1, 50), j % 32],
                   name="D")
    feeds = {"A": RNG.random((50, 32), dtype=np.float32), "B": RNG.integers(1, 50, 16).astype(np.int32),
             "W": RNG.random((32, 48), dtype=np.float32)}
    return [A, B, W, D], feeds


def _sanitized(src, inputs):
    try:
        return run_sanitized(src, inputs)
    except SanitizerUnavailable as e:
        pytest.skip(str(e))


def _reported_index_error(run) -> bool:
    """The program stopped with the index status (the driver exits 10 + status) and no sanitizer report."""
    return run.outputs is None and run.report.startswith(f"exit {10 + STATUS_INDEX}:") and \
        not any(m in run.report for m in REPORT_MARKERS)


def test_kernel_matches_numpy_and_an_out_of_range_index_is_a_kernel_error():
    tensors, feeds = embedding_matmul()
    ref = evaluate(tensors[-1], feeds)["D"]
    kern = ansorc.build(tensors, name="emb")
    args = [ansorc.array(feeds[t.name]) for t in tensors[:3]]
    np.testing.assert_allclose(kern(*args), ref, rtol=1e-5, atol=1e-5)
    for bad in (50, -1, 2**31 - 1):
        b = feeds["B"].copy()
        b[9] = bad
        with pytest.raises(KernelError, match="index out of range in A"):
            kern(args[0], ansorc.array(b), args[2])


def test_an_exported_kernel_loaded_back_names_the_tensor_of_its_status(tmp_path):
    # the meanings travel in the library's signature (data), not in the C next to it
    tensors, feeds = embedding_matmul()
    files = ansorc.build(tensors, name="emb").export(tmp_path, name="emb")
    Path(files["c"]).unlink()
    kern = ansorc.load(files["so"])
    b = feeds["B"].copy()
    b[3] = 77
    with pytest.raises(KernelError, match="index out of range in A"):
        kern(ansorc.array(feeds["A"]), ansorc.array(b), ansorc.array(feeds["W"]))


def test_parallel_threads_report_the_error_and_stay_in_bounds_under_asan():
    tensors, feeds = embedding_matmul()
    task = SearchTask(tensors, hw=HardwareParams(num_cores=2))
    [state] = sample(task, 1, seed=11)
    src = generate_source(task.dag, state, "emb_par")
    assert "ansorc_parallel_for(" in src.code
    inputs = [feeds[t.name] for t in tensors[:3]]
    run = _sanitized(src, inputs)
    assert run.report == "", run.report
    bad = feeds["B"].copy()
    bad[:] = 1000  # every thread reports at once
    assert _reported_index_error(_sanitized(src, [inputs[0], bad, inputs[2]]))


def embeddings_sum():
    """Two lookups added (BERT's embeddings): the gathers are inlined into the add, whose rows are vectorized."""
    A = te.placeholder((30, 40), name="A")
    T = te.placeholder((2, 40), name="T")
    B = te.placeholder((6, 9), dtype="int64", name="B")
    S = te.placeholder((6, 9), dtype="int64", name="S")
    GA = te.compute((6, 9, 40), lambda b, s, h: A[te.checked_index(B[b, s], 30), h], name="GA")
    GT = te.compute((6, 9, 40), lambda b, s, h: T[te.checked_index(S[b, s], 2), h], name="GT")
    E = te.compute((6, 9, 40), lambda b, s, h: GA[b, s, h] + GT[b, s, h], name="E")
    feeds = {"A": RNG.random((30, 40), dtype=np.float32), "T": RNG.random((2, 40), dtype=np.float32),
             "B": RNG.integers(0, 30, (6, 9)), "S": RNG.integers(0, 2, (6, 9))}
    return [A, T, B, S, E], feeds


@pytest.mark.parametrize("graph", [embedding_matmul, embeddings_sum])
def test_random_schedules_stay_correct_and_memory_safe(graph):
    tensors, feeds = graph()
    task = SearchTask(tensors, hw=HardwareParams(num_cores=2))
    ref = evaluate(tensors[-1], feeds)[tensors[-1].name]
    names = [t.name for t in task.dag.inputs]
    inputs = [feeds[n] for n in names]
    bad = list(inputs)
    k = names.index("B")
    bad[k] = feeds["B"].copy()
    bad[k].flat[3] = -7
    states = sample(task, 5, seed=3)
    assert states  # an element-wise chain has a single program (parallel outer, vectorized rows)
    for st in states:
        src = generate_source(task.dag, st, "emb")
        run = _sanitized(src, inputs)
        assert run.report == "", f"{st}\n{run.report}"
        np.testing.assert_allclose(run.outputs[0], ref, rtol=1e-4, atol=1e-4, err_msg=str(st))
        assert _reported_index_error(_sanitized(src, bad)), str(st)


@pytest.mark.parametrize("idx_dtype", ["int32", "int64"])
def test_onnx_gather_compiles_with_negative_indices_wrapping(idx_dtype):
    data = RNG.standard_normal((6, 5, 4)).astype(np.float32)
    idx = np.array([[-1, 0], [4, -5], [2, 3]], dtype=idx_dtype)
    ref = np.take(data, idx, axis=1)  # numpy wraps negative indices as ONNX does
    node = Node("Gather", "gather_1", {"axis": 1}, (data.shape, idx.shape), ("float32", idx_dtype),
                (ref.shape,), ("float32",), "m")
    X = te.placeholder(data.shape, name="X")
    ind = te.placeholder(idx.shape, dtype=idx_dtype, name="ind")
    [Y] = OPS["Gather"].lower(node, [X, ind], LowerContext())
    kern = ansorc.build([X, ind, Y], name="onnx_gather")
    np.testing.assert_array_equal(kern(ansorc.array(data), ansorc.array(idx)), ref)
    for bad in (5, -6):
        with pytest.raises(KernelError, match="index out of range in X"):
            kern(ansorc.array(data), ansorc.array(np.full(idx.shape, bad, dtype=idx_dtype)))


def test_gpu_programs_clamp_in_cuda_and_report_in_the_c_emulation():
    from ansorc.targets.cuda.codegen_cuda import codegen_cuda
    from ansorc.targets.cuda.codegen_emulate import codegen_gpu_emulation
    from ansorc.ir.lowering.lower import lower
    from ansorc.ir.schedule.state import ScheduleError
    from ansorc.kernel import Kernel
    from ansorc.measure.builder import build
    from ansorc.targets.cuda.search_annotate import sample_gpu
    from ansorc.targets.cuda.search_rules import default_gpu_rules
    from ansorc.search.sketch import generate_sketches
    tensors, feeds = embedding_matmul()
    task = SearchTask(tensors, "native")
    checked = 0
    for st in sample_gpu(task, 8, seed=2, sketches=generate_sketches(task, default_gpu_rules())):
        func = lower(st, "emb_gpu", passes=False)
        try:
            cuda = codegen_cuda(func).code
        except ScheduleError:
            continue
        assert "ansorc_clamp_index(" in cuda and "ansorc_checked_index" not in cuda
        [res] = build([codegen_gpu_emulation(func)], target_flags=("-O1", "-fopenmp", "-shared", "-fPIC",
                                                                    "-std=c99"))
        assert res.ok, res.error_msg[:2000]
        kern = Kernel(res.source, res.lib_path)
        args = [ansorc.array(feeds[t.name]) for t in tensors[:3]]
        np.testing.assert_allclose(kern(*args), evaluate(tensors[-1], feeds)["D"], rtol=1e-4, atol=1e-4)
        with pytest.raises(KernelError, match="index out of range in A"):
            kern(args[0], ansorc.array(np.full(16, 99, np.int32)), args[2])
        checked += 1
        if checked == 2:
            break
    assert checked == 2


def test_tuning_a_gather_task_measures_valid_programs(tmp_path):
    """The tuner's random inputs keep checked indices in range (ONNX wrap of negatives included), so gather
    programs measure and the best one matches numpy."""
    data = RNG.standard_normal((3, 64)).astype(np.float32)  # 3 rows: most of -8..8 would be out of range
    node = Node("Gather", "g", {"axis": 0}, (data.shape, (12,)), ("float32", "int64"), ((12, 64),), ("float32",), "m")
    X = te.placeholder(data.shape, name="X")
    ind = te.placeholder((12,), dtype="int64", name="ind")
    [Y] = OPS["Gather"].lower(node, [X, ind], LowerContext())
    kern = ansorc.compile([X, ind, Y], trials=4, log=str(tmp_path / "g.jsonl"),
                          options=tune_options(per_round=4, **FAST))
    idx = RNG.integers(-3, 3, 12)
    np.testing.assert_array_equal(kern(ansorc.array(data), ansorc.array(idx)), np.take(data, idx, axis=0))


def test_a_vector_load_of_a_gathered_row_stays_inside_under_asan():
    """The row index is checked and clamped once; the contiguous load along the row is then in bounds."""
    from ansorc.ir.schedule.state import State
    from ansorc.ir.schedule.steps import Annotate
    A = te.placeholder((7, 32), name="A")
    B = te.placeholder((5,), dtype="int64", name="B")
    G = te.compute((5, 32), lambda i, j: A[te.checked_index(B[i], 7), j] * 3.0, name="G")
    st = State.initial(ansorc.ComputeDAG([A, B, G]))
    st = st.apply(Annotate("G", st.stage("G").iters[-1].name, "vectorize"))
    src = generate_source([A, B, G], st, "rows")
    assert "_loadu_ps((A + " in src.code or "vld1q_f32((A + " in src.code, "expected a contiguous row load"
    a = RNG.standard_normal((7, 32)).astype(np.float32)
    b = np.array([6, 0, 3, 3, 1])
    run = _sanitized(src, [a, b])
    assert run.report == "", run.report
    np.testing.assert_allclose(run.outputs[0], a[b] * 3.0, rtol=1e-6)
    for bad in (7, -1, 1 << 40):
        assert _reported_index_error(_sanitized(src, [a, np.array([6, 0, bad, 3, 1])]))
