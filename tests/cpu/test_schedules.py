"""Hand-written schedules (every step type) compile and match the numpy reference."""
import numpy as np
import pytest

import ansorc
from ansorc import te, workloads
from ansorc.codegen.target import Target
from ansorc.ir.schedule.steps import (Annotate, CacheRead, CacheWrite, ComputeAt, ComputeInline, ComputeRoot,
                                      FollowSplit, Fuse, Pragma, Reorder, Rfactor, Split)

from .helpers import check_kernel
from tests.kernel_text import body_of


def ssrsrs_gmm_steps(i_tiles=(2, 8, 4), j_tiles=(4, 1, 16), k_tile=(8,), unroll=64, level=2):
    """GMM tiled as Ansor's CPU sketch: cache_write, SSRSRS on C.local, C follows at `level`, parallel +
    vectorize + unroll."""
    steps = [CacheWrite("C", "local"),
             Split("C.local", "i", i_tiles), Split("C.local", "j", j_tiles), Split("C.local", "k", k_tile),
             Reorder("C.local", ("i.0", "j.0", "i.1", "j.1", "k.0", "i.2", "j.2", "k.1", "i.3", "j.3")),
             FollowSplit("C", "i", 1, level), FollowSplit("C", "j", 2, level)]
    if level == 2:
        steps += [Reorder("C", ("i.0", "j.0", "i.1", "j.1", "i.2", "j.2")), ComputeAt("C.local", "C", "j.1")]
        inner = "j.2"
    else:
        steps += [Reorder("C", ("i.0", "j.0", "i.1", "j.1")), ComputeAt("C.local", "C", "j.0")]
        inner = "j.1"
    steps += [Fuse("C", ("i.0", "j.0")), Annotate("C", "i.0@j.0", "parallel"),
              Annotate("C.local", "j.3", "vectorize"), Annotate("C", inner, "vectorize"),
              Pragma("C.local", "i.0", "auto_unroll_max_step", unroll)]
    return steps


def test_gmm_1024_ssrsrs_cache_write():
    A, B, C = workloads.matmul(1024, 1024, 1024)
    dag = ansorc.ComputeDAG([A, B, C])
    state = ansorc.replay(dag, ssrsrs_gmm_steps())
    kern = check_kernel([A, B, C], state, rtol=1e-4, atol=1e-3)
    assert "ansorc_parallel_for(" in kern.source
    fma = {"avx512": "_mm512_fmadd_ps", "avx2": "_mm256_fmadd_ps", "neon": "vfmaq_f32"}
    isa = Target.from_name("native").isa
    if isa not in fma:
        pytest.skip(f"no SIMD intrinsics for {isa}")
    assert fma[isa] in kern.source  # the vectorized inner loop is an intrinsic FMA, not a hint to the compiler


@pytest.mark.parametrize("level", [1, 2])
def test_gmm_ssrsrs_fusion_levels(level):
    A, B, C = workloads.matmul(128, 96, 64)
    check_kernel([A, B, C], ssrsrs_gmm_steps((2, 4, 4), (2, 3, 8), (16,), 16, level))


def test_gmm_512_relu_compute_at():
    A, B, R = workloads.matmul_relu(512, 512, 512)
    steps = [Split("relu", "i", (8, 8)), Split("relu", "j", (4, 16)),
             Reorder("relu", ("i.0", "j.0", "i.1", "j.1", "i.2", "j.2")),
             ComputeAt("C", "relu", "j.1"),
             Split("C", "k", (4,)), Reorder("C", ("k.0", "i", "k.1", "j")),
             Fuse("relu", ("i.0", "j.0")), Annotate("relu", "i.0@j.0", "parallel"),
             Annotate("relu", "j.2", "vectorize"), Annotate("C", "j", "vectorize"),
             Pragma("C", "k.0", "auto_unroll_max_step", 16)]
    check_kernel([A, B, R], steps, atol=1e-3)


def test_c2d_padding_inlined():
    data, kernel, conv = workloads.c2d(1, 56, 56, 64, 64, 3, 1, 1)
    steps = [ComputeInline("pad"), CacheWrite("conv", "local"),
             Split("conv.local", "h", (7, 2)), Split("conv.local", "w", (2, 4)), Split("conv.local", "co", (2, 16)),
             Split("conv.local", "rc", (8,)),
             Reorder("conv.local", ("n", "h.0", "w.0", "co.0", "rh", "rw", "rc.0", "h.1", "w.1", "co.1", "rc.1",
                                    "h.2", "w.2", "co.2")),
             FollowSplit("conv", "h", 2, 1), FollowSplit("conv", "w", 3, 1), FollowSplit("conv", "co", 4, 1),
             Reorder("conv", ("n", "h.0", "w.0", "co.0", "h.1", "w.1", "co.1")),
             ComputeAt("conv.local", "conv", "co.0"),
             Fuse("conv", ("n", "h.0", "w.0")), Annotate("conv", "n@h.0@w.0", "parallel"),
             Annotate("conv.local", "co.2", "vectorize"), Annotate("conv", "co.1", "vectorize")]
    kern = check_kernel([data, kernel, conv], steps, atol=1e-3)
    assert "pad" not in body_of(kern.source, "kernel").split("{")[1]  # no separate pad buffer


def test_c2d_padding_compute_at():
    data, kernel, conv = workloads.c2d(1, 14, 14, 16, 32, 3, 1, 1)
    steps = [Split("conv", "h", (2,)), Split("conv", "w", (7,)),
             Reorder("conv", ("n", "h.0", "w.0", "co", "h.1", "w.1", "rh", "rw", "rc")),
             ComputeAt("pad", "conv", "w.0")]
    check_kernel([data, kernel, conv], steps)


def test_dep():
    data, kernel, conv = workloads.dep(1, 112, 112, 32, 3, 1, 1)
    steps = [ComputeInline("pad"), Split("conv", "h", (4,)), Split("conv", "c", (16,)),
             Reorder("conv", ("n", "h.0", "w", "c.0", "h.1", "rh", "rw", "c.1")),
             Fuse("conv", ("n", "h.0")), Annotate("conv", "n@h.0", "parallel"), Annotate("conv", "c.1", "vectorize"),
             Pragma("conv", "n@h.0", "auto_unroll_max_step", 64)]
    check_kernel([data, kernel, conv], steps)


@pytest.mark.parametrize("which", ["outer", "inner"])
def test_nrm_rfactor(which):
    A, D = workloads.nrm(1, 1024, 1024)
    steps = [Fuse("sq_sum", ("i", "j")), Split("sq_sum", "i@j", (64,))]
    if which == "outer":
        steps += [Rfactor("sq_sum", "i@j.0", 1), Annotate("sq_sum.rf", "i@j.0.v", "parallel"),
                  Annotate("sq_sum.rf", "i@j.1", "unroll")]
    else:
        steps += [Rfactor("sq_sum", "i@j.1", 1), Reorder("sq_sum.rf", ("b", "i@j.0", "i@j.1.v")),
                  Annotate("sq_sum.rf", "i@j.1.v", "vectorize")]
    check_kernel([A, D], steps, rtol=1e-4)


def test_rfactor_non_divisible():
    A = te.placeholder((3, 1000), name="A")
    k = te.reduce_axis((0, 1000), name="k")
    S = te.compute((3,), lambda b: te.sum(A[b, k], axis=k), name="S")
    steps = [Split("S", "k", (64,)), Rfactor("S", "k.0", 1), Reorder("S.rf", ("b", "k.0.v", "k.1"))]
    check_kernel([A, S], steps)


@pytest.mark.parametrize("vector", [False, True])
def test_rfactor_of_the_only_reduce_axis_initializes_its_accumulators(vector):
    # S.rf then reduces over no loop: its element is the identity plus one term, also in a stack buffer computed
    # at a loop of S (once left uninitialized: results were whatever the stack held)
    A = te.placeholder((5, 48), name="A")
    B = te.placeholder((3, 48), name="B")
    k = te.reduce_axis((0, 48), name="k")
    S = te.compute((5, 3), lambda i, j: te.sum(A[i, k] * B[j, k], axis=k), name="S")
    steps = [Rfactor("S", "k", 2), ComputeAt("S.rf", "S", "j")] + [Annotate("S.rf", "k.v", "vectorize")] * vector
    check_kernel([A, B, S], steps)
    check_kernel([A, B, S], [Rfactor("S", "k", 2)])


def test_softmax():
    A, out = workloads.sfm(1024, 1024)
    steps = [ComputeInline("exp"), Split("softmax", "j", (16,)), Annotate("softmax", "j.1", "vectorize"),
             Annotate("softmax", "i", "parallel"), ComputeAt("row_max", "softmax", "i"),
             ComputeAt("row_sum", "softmax", "i")]
    check_kernel([A, out], steps)


def test_split_not_dividing():
    A = te.placeholder((1000, 30), name="A")
    B = te.compute((1000, 30), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    steps = [Split("B", "i", (64,)), Split("B", "j", (8,)), Annotate("B", "i.0", "parallel"),
             Annotate("B", "j.1", "vectorize")]
    check_kernel([A, B], steps)


def test_cache_read_and_compute_root():
    A, B, C = workloads.matmul(64, 48, 32)
    steps = [CacheRead("B", "local", ("C",)), Split("C", "i", (16,)), ComputeAt("B.local", "C", "i.0"),
             ComputeRoot("B.local")]
    check_kernel([A, B, C], steps)
    steps = [CacheRead("B", "local", ("C",)), Split("C", "i", (16,)), ComputeAt("B.local", "C", "i.0")]
    check_kernel([A, B, C], steps)


def test_unroll_annotation_and_multiple_outputs():
    A = te.placeholder((40, 24), name="A")
    B = te.compute((40, 24), lambda i, j: te.exp(A[i, j]), name="B")
    C = te.compute((40, 24), lambda i, j: B[i, j] + A[i, j], name="C")
    steps = [Split("C", "j", (4,)), Annotate("C", "j.1", "unroll"), ComputeAt("B", "C", "i")]
    kern = check_kernel([A, B, C], steps)  # B is an output: computed at C but written to its argument
    a = np.random.rand(40, 24).astype("float32")
    b, c = kern(a)
    np.testing.assert_allclose(b, np.exp(a), rtol=1e-5)


def test_aligned_helpers_and_the_misalignment_warning():
    import warnings
    a_t = ansorc.te.placeholder((64, 64), name="A")
    b_t = ansorc.te.compute((64, 64), lambda i, j: a_t[i, j] * 2.0, name="B")
    kern = ansorc.build([a_t, b_t])
    x = ansorc.array(np.arange(64 * 64, dtype=np.float32).reshape(64, 64))
    out = ansorc.empty((64, 64), "float32")
    assert x.ctypes.data % 64 == 0 and out.ctypes.data % 64 == 0 and out.flags.c_contiguous
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # aligned arguments: no warning
        kern(x, out)
        assert kern(x).ctypes.data % 64 == 0  # outputs the kernel allocates are aligned too
    np.testing.assert_array_equal(out, 2 * x)
    raw = np.empty(64 * 64 + 16, np.float32)
    off = next(k for k in range(16) if (raw.ctypes.data + 4 * k) % 64)
    shifted = raw[off:off + 64 * 64].reshape(64, 64)
    shifted[...] = x
    with pytest.warns(ansorc.AlignmentWarning, match="A not 64-byte aligned"):
        kern(shifted, out)
    np.testing.assert_array_equal(out, 2 * x)  # still correct
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kern(shifted, out)  # warned once per kernel, not on every call
