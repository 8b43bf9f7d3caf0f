"""Issue 12 row 5: kernel arguments are `restrict`, so an output sharing memory with another argument (the same
array, or overlapping views of one buffer) is refused with an ArgumentError naming both; disjoint views of one
buffer and an input passed twice are fine."""
from contextlib import nullcontext

import numpy as np
import pytest

import ansorc
from ansorc import te, workloads
from ansorc.errors import ArgumentError


@pytest.fixture(scope="module")
def matmul():
    return ansorc.build(workloads.matmul(16, 16, 16), name="mm")


def test_output_that_is_an_input_is_refused(matmul):
    a = ansorc.array(np.random.default_rng(0).standard_normal((16, 16)), "float32")
    b = ansorc.array(np.eye(16), "float32")
    with pytest.raises(ArgumentError, match=r"output argument 2 \(C\) overlaps argument 0 \(A\)"):
        matmul(a, b, a)
    with pytest.raises(ArgumentError, match=r"\(C\) overlaps argument 1 \(B\)"):
        matmul(a, b, b)


def test_overlapping_views_are_refused_and_disjoint_views_work():
    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: A[i] * 2.0 + 1.0, name="B")
    kern = ansorc.build([A, B])
    base = ansorc.empty((40,), "float32")
    base[:] = np.arange(40)
    with pytest.raises(ArgumentError, match=r"\(B\) overlaps argument 0 \(A\)"):
        kern(base[:16], base[8:24])
    with pytest.raises(ArgumentError, match="overlaps"):
        kern(base[8:24].reshape(16), base[:16])
    kern(base[:16], base[16:32])   # adjacent, not overlapping
    np.testing.assert_array_equal(base[16:32], np.arange(16) * 2.0 + 1.0)


def test_two_outputs_sharing_memory_are_refused():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((8,), lambda i: A[i] * 3.0, name="C")
    kern = ansorc.build([A, B, C])
    a, out = ansorc.array(np.arange(8), "float32"), ansorc.empty((8,), "float32")
    with pytest.raises(ArgumentError, match=r"\(B\) overlaps argument 2 \(C\)"):
        kern(a, out, out)
    b, c = kern(a)
    np.testing.assert_array_equal(b, np.arange(8) + 1.0)
    np.testing.assert_array_equal(c, np.arange(8) * 3.0)


def test_the_same_input_twice_is_allowed(matmul):
    a = ansorc.array(np.random.default_rng(1).standard_normal((16, 16)), "float32")
    np.testing.assert_allclose(matmul(a, a), a @ a, rtol=1e-5, atol=1e-5)


def test_repeated_calls_reuse_pointers_but_still_check_every_argument(matmul):
    """A call with the same arrays as the last one reuses their C pointers; the checks still run, a different
    array takes the new one, and a kept array cannot be resized under its pointer (numpy refuses)."""
    rng = np.random.default_rng(2)
    a, b = (ansorc.array(rng.standard_normal((16, 16)), "float32") for _ in range(2))
    out1, out2 = ansorc.empty((16, 16)), ansorc.empty((16, 16))
    matmul(a, b, out1)
    a[...] = rng.standard_normal((16, 16))   # same array, new data
    matmul(a, b, out1)
    np.testing.assert_allclose(out1, a @ b, rtol=1e-5, atol=1e-5)
    matmul(a, b, out2)                       # another output: written, the first untouched
    np.testing.assert_allclose(out2, a @ b, rtol=1e-5, atol=1e-5)
    with pytest.raises(ArgumentError, match=r"output argument 2 \(C\) overlaps argument 0 \(A\)"):
        matmul(a, b, a)
    out2.shape = (256,)                      # the same object, reshaped in place
    with pytest.raises(ArgumentError, match="must have shape"):
        matmul(a, b, out2)
    owned = np.zeros((16, 16), np.float32)   # owns its data, so numpy could resize it
    with pytest.warns(ansorc.AlignmentWarning) if owned.ctypes.data % 64 else nullcontext():
        matmul(a, b, owned)
    with pytest.raises(ValueError, match="cannot resize"):
        owned.resize((1 << 20,), refcheck=False)

