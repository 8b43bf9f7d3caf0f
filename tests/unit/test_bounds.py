"""Issue 12 rows 2, 3 and 12: every read of a te program is proven in bounds at te.compute, or rejected there
with the tensor, the subscript and its range; tensors too large for 32-bit indices are refused."""
import numpy as np
import pytest

from ansorc import workloads as W
from ansorc.frontend import parse_text
from ansorc.frontend.errors import TeError
from ansorc.ir.program import te
from ansorc.ir.program.bounds import BoundsError
from ansorc.ir.program.evaluate import evaluate, random_inputs

A = te.placeholder((8,), name="A")
Idx = te.placeholder((8,), "int32", name="Idx")


@pytest.mark.parametrize("make, pattern", [
    (lambda: te.compute((8,), lambda i: A[i + 1], name="B"), r"A\[\(i \+ 1\)\]: subscript 0 .* 1\.\.8, outside 0\.\.7"),
    (lambda: te.compute((9,), lambda i: A[i], name="B"), r"A\[i\].* 0\.\.8, outside 0\.\.7"),  # output too large
    (lambda: te.compute((1,), lambda i: te.sum(A[te.reduce_axis((0, 9), "k")], axis=te.reduce_axis((0, 9), "k")),
                        name="B"), None),
    (lambda: te.compute((8,), lambda i: A[i * i], name="B"), r"0\.\.49, outside 0\.\.7"),
    (lambda: te.compute((8,), lambda i: A[te.max(i + 1, 0)], name="B"), r"1\.\.8"),
    (lambda: te.compute((8,), lambda i: A[(i.astype("float32") * 1.5).astype("int32")], name="B"),
     r"cannot be proven inside 0\.\.7"),
    (lambda: te.compute((8,), lambda i: A[Idx[i]], name="B"), r"A\[Idx\[i\]\].*cannot be proven"),
    (lambda: te.compute((8,), lambda i: te.if_then_else(i < 8, A[i + 1], 0.0), name="B"), r"1\.\.8"),  # loose
    (lambda: te.compute((8,), lambda i: te.if_then_else(Idx[i] < 8, A[Idx[i]], 0.0), name="B"), "cannot be proven"),
])
def test_unprovable_reads_are_rejected_at_compute(make, pattern):
    with pytest.raises(BoundsError, match=pattern or "outside 0..7"):
        make()


def test_reduce_axis_wider_than_its_dimension_is_rejected():
    k = te.reduce_axis((0, 9), "k")
    with pytest.raises(BoundsError, match=r"reads A\[k\]: subscript 0 \(k\) ranges over 0\.\.8, outside 0\.\.7"):
        te.compute((1,), lambda i: te.sum(A[k], axis=k), name="B")
    k = te.reduce_axis((1, 9), "k")  # a shifted reduce axis is checked after the shift
    with pytest.raises(BoundsError, match=r"1\.\.8"):
        te.compute((1,), lambda i: te.sum(A[k], axis=k), name="B")


@pytest.mark.parametrize("body", [
    lambda i: te.if_then_else(te.all(i >= 1, i < 9), A[i - 1], 0.0),                     # padding
    lambda i: te.if_then_else(i < 1, 0.0, A[i - 1]),                                       # the else arm
    lambda i: te.if_then_else(te.all(Idx[i] >= 0, Idx[i] < 8), A[Idx[i]], 0.0),            # a guarded gather
    lambda i: te.if_then_else(te.all(Idx[i] >= 0, Idx[i] <= 7), A[Idx[i] + 0], 0.0),
    lambda i: te.if_then_else(te.any(Idx[i] < 0, Idx[i] >= 8), 0.0, A[Idx[i]]),           # by De Morgan
    lambda i: te.if_then_else(i * i < 8, A[i * i], 0.0),                                   # non-affine, guarded
    lambda i: te.if_then_else(te.all(i < 8, A[te.min(i, 7)] > 0.0), 1.0, 0.0),            # && short-circuit
    lambda i: A[te.abs(i - 4)] + A[(i * 5) % 8] + A[te.min(i + 1, 7)] + A[8 - 1 - (i // 2)],
    lambda i: te.if_then_else(te.all(i > 20, i < 10), A[i + 100], 0.0),                   # never taken
])
def test_proven_and_guarded_reads_are_accepted_and_the_oracle_agrees(body):
    B = te.compute((8,), body, name="B")
    x = random_inputs([A], 1)
    x["Idx"] = np.array([0, 7, 8, -1, 3, 9, 2, 5], np.int32)
    evaluate([B], x)  # no IndexError: what the check accepts, the numpy evaluator can run


def test_index_arithmetic_that_overflows_int32_is_rejected():
    with pytest.raises(BoundsError, match="overflows int32"):
        te.compute((8,), lambda i: A[(i * 65536 * 65536) % 8], name="B")


def test_every_benchmark_workload_at_every_shape_still_builds():
    for name, (fn, shapes) in W.WORKLOADS.items():
        for s in shapes:
            assert fn(*s), name


@pytest.mark.parametrize("body, message", [
    ("A[i*i]", r"5:1: error: index out of range: .*A\[\(i \* i\)\].*0\.\.81, outside 0\.\.9"),
    ("A[max(i+1, 0)]", r"1\.\.10, outside 0\.\.9"),
    ("A[int32(i*1.5)]", r"cannot be proven inside 0\.\.9"),
    ("A[Idx[i]]", r"A\[Idx\[i\]\].*cannot be proven"),
])
def test_non_affine_subscripts_in_expression_files_are_rejected_with_the_location(body, message):
    text = f"param N = 10\ninput A: float32[N]\ninput Idx: int32[N]\n\noutput C[i] = {body} where i < N\n"
    with pytest.raises(TeError, match=message):
        parse_text(text)


def test_non_affine_subscripts_in_range_or_guarded_are_accepted():
    text = ("param N = 10\ninput A: float32[N]\ninput Idx: int32[N]\n"
            "output C[i] = A[abs(i - 9)] + A[(i * 7) % N] + (A[i * i] if i * i < N else 0.0) "
            "+ (A[Idx[i]] if 0 <= Idx[i] < N else 0.0) where i < N\n")
    prog = parse_text(text)
    x = {"A": np.arange(10, dtype=np.float32), "Idx": np.array([0, 9, 10, -1, 3, 4, 5, 6, 7, 8], np.int32)}
    got = evaluate(prog.outputs, x)["C"]
    i = np.arange(10)
    ok = (x["Idx"] >= 0) & (x["Idx"] < 10)
    want = x["A"][abs(i - 9)] + x["A"][(i * 7) % 10] + np.where(i * i < 10, x["A"][np.minimum(i * i, 9)], 0) + \
        np.where(ok, x["A"][np.clip(x["Idx"], 0, 9)], 0)
    np.testing.assert_array_equal(got, want)


def test_tensors_beyond_32_bit_indices_are_refused():
    with pytest.raises(ValueError, match=r"'big' of shape \(65536, 32768\) has 2147483648 elements"):
        te.placeholder((65536, 32768), name="big")
    te.placeholder((65536, 32767), name="fits")
    with pytest.raises(ValueError, match="at most 2147483647"):
        te.compute((1 << 16, 1 << 16), lambda i, j: te.const(0.0), name="big")


def test_a_guard_on_an_expression_the_ranges_fold_still_proves_the_read():
    """kernel[(p + 0) % 2 + 2 * t] under `(p + 0) % 2 + 2 * t < 3`: with p in 0..1 the subscript folds to p + 2 * t
    while the guard keeps its `%` atom; the read is proven all the same (T2D's phases, K = 3, s = 2), and a guard
    one too loose is not enough."""
    K = te.placeholder((3,), name="K")
    t = te.reduce_axis((0, 2), "t")

    def phase(limit):
        def body(n, p):
            kh = (p + 0) % 2 + t.var * 2
            return te.sum(te.if_then_else(kh < limit, K[kh], 0.0), axis=t)
        return te.compute((1, 2), body, name="B")
    phase(3)
    with pytest.raises(BoundsError, match=r"outside 0\.\.2"):
        phase(4)
