"""Kernel calls check every argument (type, dtype, shape, C order, writable outputs) on every call, also when the
same arrays come again and the call reuses their pointers, and name the argument in one line."""
import numpy as np
import pytest

import ansorc
from ansorc import te
from ansorc.errors import ArgumentError


@pytest.fixture(scope="module")
def kern():
    A = te.placeholder((4, 8), name="A")
    B = te.compute((4, 8), lambda i, j: A[i, j] * 2.0, name="B")
    return ansorc.build([A, B], name="double")


def test_each_bad_argument_is_named(kern):
    a, b = ansorc.array(np.arange(32).reshape(4, 8), "float32"), ansorc.empty((4, 8))
    kern(a, b)
    np.testing.assert_array_equal(b, np.arange(32).reshape(4, 8) * 2.0)
    cases = [((a.tolist(), b), r"argument 0 \(A\) must be a numpy array, got list"),
             ((a.astype(np.float64), b), r"argument 0 \(A\) must have dtype float32, got float64"),
             ((a, ansorc.empty((8, 4))), r"argument 1 \(B\) must have shape \(4, 8\), got \(8, 4\)"),
             ((ansorc.array(np.zeros((4, 16)), "float32")[:, ::2], b), r"argument 0 \(A\) must be C-contiguous")]
    for args, msg in cases:
        with pytest.raises(ArgumentError, match=msg):
            kern(*args)
    b.flags.writeable = False             # the same arrays as a call before: checked again all the same
    with pytest.raises(ArgumentError, match=r"output argument 1 \(B\) is read-only"):
        kern(a, b)
    b.flags.writeable = True
    a.shape = (8, 4)
    with pytest.raises(ArgumentError, match=r"argument 0 \(A\) must have shape"):
        kern(a, b)
    a.shape = (4, 8)
    kern(a, b)
    with pytest.raises(ArgumentError, match="takes 1 inputs and 1 outputs"):
        kern(a, b, b)
