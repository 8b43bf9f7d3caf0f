"""The reference evaluator against numpy formulas written independently here (no te, no evaluator)."""
import numpy as np
import pytest

from ansorc import workloads as W
from ansorc.ir.program import te
from ansorc.ir.program.evaluate import evaluate, random_inputs
from ansorc.ir.program.te import ComputeOp

F64 = np.float64


def run(tensors, seed=0, **kw):
    """Evaluate the last tensor of a workload on random inputs; returns (inputs as float64, output)."""
    inp = random_inputs(tensors, seed)
    out = evaluate([tensors[-1]], inp, **kw)[tensors[-1].name]
    assert out.dtype == np.dtype(tensors[-1].dtype) and out.shape == tensors[-1].shape
    return [inp[t.name].astype(F64) for t in tensors[:-1]], out


def close(got, ref, tol=1e-5):
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)


# ----------------------------------------------------------------------------- independent references

def ref_conv2d(x, w, s, p, d=1, g=1):
    n, h, wd, ci = x.shape
    k, _, cig, co = w.shape
    xp = np.pad(x, ((0, 0), (p, p), (p, p), (0, 0)))
    oh, ow = (h + 2 * p - d * (k - 1) - 1) // s + 1, (wd + 2 * p - d * (k - 1) - 1) // s + 1
    out, cog = np.zeros((n, oh, ow, co)), co // g
    for kh in range(k):
        for kw in range(k):
            patch = xp[:, kh * d: kh * d + s * (oh - 1) + 1: s, kw * d: kw * d + s * (ow - 1) + 1: s, :]
            for gi in range(g):
                out[..., gi * cog:(gi + 1) * cog] += np.einsum(
                    "nhwc,cd->nhwd", patch[..., gi * cig:(gi + 1) * cig], w[kh, kw, :, gi * cog:(gi + 1) * cog])
    return out


def ref_conv1d(x, w, s, p, d=1):
    n, length, ci = x.shape
    k, _, co = w.shape
    xp = np.pad(x, ((0, 0), (p, p), (0, 0)))
    ol = (length + 2 * p - d * (k - 1) - 1) // s + 1
    return sum(np.einsum("nlc,cd->nld", xp[:, r * d: r * d + s * (ol - 1) + 1: s], w[r]) for r in range(k))


def ref_conv3d(x, w, s, p):
    k = w.shape[0]
    xp = np.pad(x, ((0, 0), (p, p), (p, p), (p, p), (0, 0)))
    o = [(x.shape[i] + 2 * p - k) // s + 1 for i in (1, 2, 3)]
    out = 0
    for a in range(k):
        for b in range(k):
            for c in range(k):
                patch = xp[:, a: a + s * (o[0] - 1) + 1: s, b: b + s * (o[1] - 1) + 1: s,
                           c: c + s * (o[2] - 1) + 1: s]
                out = out + np.einsum("ndhwc,cf->ndhwf", patch, w[a, b, c])
    return out


def ref_depthwise(x, w, s, p):
    k = w.shape[1]
    xp = np.pad(x, ((0, 0), (p, p), (p, p), (0, 0)))
    oh, ow = (x.shape[1] + 2 * p - k) // s + 1, (x.shape[2] + 2 * p - k) // s + 1
    return sum(xp[:, kh: kh + s * (oh - 1) + 1: s, kw: kw + s * (ow - 1) + 1: s, :] * w[0, kh, kw]
               for kh in range(k) for kw in range(k))


def ref_conv2d_transpose(x, w, s, p):
    """Scatter-add per workloads.md: O[n, h*s+kh-p, w*s+kw-p, co] += I[n,h,w,ci] * W[kh,kw,ci,co]."""
    n, h, wd, _ = x.shape
    k, co = w.shape[0], w.shape[3]
    full = np.zeros((n, (h - 1) * s + k, (wd - 1) * s + k, co))
    for kh in range(k):
        for kw in range(k):
            full[:, kh: kh + s * (h - 1) + 1: s, kw: kw + s * (wd - 1) + 1: s] += np.einsum(
                "nhwc,cd->nhwd", x, w[kh, kw])
    oh, ow = (h - 1) * s - 2 * p + k, (wd - 1) * s - 2 * p + k
    return full[:, p: p + oh, p: p + ow]


def ref_capsule(x, w, s, p):
    k = w.shape[0]
    xp = np.pad(x, ((0, 0), (p, p), (p, p), (0, 0), (0, 0), (0, 0)))
    oh, ow = (x.shape[1] + 2 * p - k) // s + 1, (x.shape[2] + 2 * p - k) // s + 1
    return sum(np.einsum("nhwikc,kjcd->nhwijd", xp[:, kh: kh + s * (oh - 1) + 1: s, kw: kw + s * (ow - 1) + 1: s],
                         w[kh, kw]) for kh in range(k) for kw in range(k))


# ----------------------------------------------------------------------------- workloads

def test_matmul_and_relu():
    (a, b), c = run(W.matmul(33, 17, 29))
    close(c, a @ b)
    (a, b), d = run(W.matmul_relu(33, 17, 29))
    close(d, np.maximum(a @ b, 0))


@pytest.mark.parametrize("args", [W.smallest_args("GMM"), (3, 5, 7, 11)])
def test_gmm(args):
    (x, y), z = run(W.gmm(*args))
    close(z, x @ y)


def test_gmm_1024_is_exact():
    # 1G multiply-adds, evaluated as one contraction (a materialized 1024^3 product would not fit in memory);
    # how fast it is belongs in benchmarks, not here
    (x, y), z = run(W.make("GMM", 3))
    close(z, x @ y, 1e-4)


C2D_CASES = [W.smallest_args("C2D"), (1, 9, 10, 4, 6, 3, 2, 1), (2, 7, 7, 3, 5, 5, 1, 2), (1, 8, 8, 2, 3, 7, 2, 3)]


@pytest.mark.parametrize("args", C2D_CASES)
def test_c2d(args):
    (x, w), o = run(W.c2d(*args))
    close(o, ref_conv2d(x, w, *args[6:8]))


@pytest.mark.parametrize("args", [W.smallest_args("GRP"), (1, 9, 9, 8, 12, 3, 2, 1)])
def test_grp(args):
    (x, w), o = run(W.grp(*args))
    close(o, ref_conv2d(x, w, *args[6:8], g=4))


@pytest.mark.parametrize("args", [W.smallest_args("DIL"), (1, 11, 12, 3, 4, 3, 2, 1), (1, 7, 7, 2, 2, 3, 1, 1)])
def test_dil(args):
    (x, w), o = run(W.dil(*args))
    close(o, ref_conv2d(x, w, *args[6:8], d=2))


@pytest.mark.parametrize("args", [W.smallest_args("C1D"), (1, 20, 3, 5, 3, 2, 1), (2, 16, 4, 3, 5, 1, 2)])
def test_c1d(args):
    (x, w), o = run(W.c1d(*args))
    close(o, ref_conv1d(x, w, *args[5:7]))


def test_c1d_dilated():
    (x, w), o = run(W.c1d(1, 17, 3, 4, 3, 2, 2, dilation=3))
    close(o, ref_conv1d(x, w, 2, 2, d=3))


@pytest.mark.parametrize("args", [W.smallest_args("C3D"), (1, 5, 6, 7, 3, 4, 3, 2, 1)])
def test_c3d(args):
    (x, w), o = run(W.c3d(*args))
    close(o, ref_conv3d(x, w, *args[7:9]))


@pytest.mark.parametrize("args", [W.smallest_args("DEP"), (1, 9, 9, 5, 3, 1, 1), (2, 10, 11, 3, 5, 2, 2)])
def test_dep(args):
    (x, w), o = run(W.dep(*args))
    close(o, ref_depthwise(x, w, *args[5:7]))


@pytest.mark.parametrize("args", [W.smallest_args("T2D"), (1, 4, 4, 3, 2, 4, 2, 1), (1, 3, 5, 2, 3, 3, 1, 0),
                                  (1, 4, 3, 2, 2, 5, 3, 2), (1, 5, 5, 2, 2, 3, 2, 0), (1, 3, 3, 2, 2, 2, 4, 0),
                                  (1, 5, 5, 2, 2, 3, 2, 3), (1, 4, 4, 2, 2, 2, 1, 2)])  # p > K-1 crops
def test_t2d(args):
    (x, w), o = run(W.t2d(*args))
    close(o, ref_conv2d_transpose(x, w, *args[6:8]))


@pytest.mark.parametrize("args", [W.smallest_args("CAP"), (1, 6, 5, 3, 2, 3, 1, 1)])
def test_cap(args):
    (x, w), o = run(W.cap(*args))
    close(o, ref_capsule(x, w, *args[6:8]))


def test_nrm():
    (a,), d = run(W.smallest("NRM"))
    close(d, np.sqrt((a * a).sum(axis=(1, 2))))
    (a,), d = run(W.nrm(3, 5, 7))
    close(d, np.sqrt((a * a).sum(axis=(1, 2))))


@pytest.mark.parametrize("args", [W.smallest_args("CBR"), (1, 9, 9, 3, 4, 3, 2, 1)])
def test_cbr(args):
    (x, w, bias, scale, offset), o = run(W.cbr(*args))
    close(o, np.maximum((ref_conv2d(x, w, *args[6:8]) + bias) * scale + offset, 0))


def test_tbg():
    (q, k), s = run(W.smallest("TBG"))
    close(s, np.einsum("bihd,bjhd->bhij", q, k))


def test_sfm():
    (a,), s = run(W.smallest("SFM"))
    e = np.exp(a - a.max(axis=1, keepdims=True))
    close(s, e / e.sum(axis=1, keepdims=True))


# ----------------------------------------------------------------------------- semantics

def test_floor_div_mod_on_negatives():
    a = te.placeholder((17,), "int32", "a")
    outs = [te.compute((17,), f, name=n) for n, f in [
        ("d", lambda i: a[i] // 3), ("m", lambda i: a[i] % 3), ("dn", lambda i: a[i] // -3),
        ("mn", lambda i: a[i] % -3), ("iv", lambda i: (i - 8) // 4 + (i - 8) % 4 * 100)]]
    x = np.arange(-8, 9, dtype=np.int32)
    r = evaluate(outs, {"a": x})
    for name, ref in [("d", x // 3), ("m", x % 3), ("dn", x // -3), ("mn", x % -3), ("iv", x // 4 + x % 4 * 100)]:
        assert r[name].dtype == np.int32
        np.testing.assert_array_equal(r[name], ref)
    assert r["d"][0] == -3 and r["m"][0] == 1  # floor, not C truncation


def test_select_masks_out_of_range_reads_in_dead_branch():
    a = te.placeholder((5,), name="a")
    b = te.compute((9,), lambda i: te.if_then_else(te.all(i >= 2, i < 7), a[i - 2], 0.0), name="b")
    x = np.arange(1, 6, dtype=np.float32)
    np.testing.assert_array_equal(evaluate([b], {"a": x})["b"], [0, 0, 1, 2, 3, 4, 5, 0, 0])
    # short-circuit &&: the second operand's read is only live where the first holds
    c = te.compute((9,), lambda i: te.if_then_else(te.all(i < 5, a[te.min(i, 20)] > 2.0), 1.0, 0.0), name="c")
    np.testing.assert_array_equal(evaluate([c], {"a": x})["c"], [0, 0, 1, 1, 1, 0, 0, 0, 0])


def test_live_out_of_range_read_raises():
    a = te.placeholder((5,), name="a")
    with pytest.raises(ValueError, match=r"a\[i\].*0\.\.5, outside 0\.\.4"):  # te.compute refuses it...
        te.compute((6,), lambda i: a[i] * 2.0, name="b")
    i = te.IterVar(te.var("i"), 6, "S")  # ...and the oracle still catches a graph built around that check
    b = te.Tensor(ComputeOp("b", (i,), (), a[i.var] * 2.0, None, "float32", (a,)))
    with pytest.raises(IndexError, match=r"a\[5\]"):
        evaluate([b], {"a": np.zeros(5, np.float32)})


def test_max_min_reductions_and_where():
    a = te.placeholder((7, 13), name="a")
    k = te.reduce_axis((0, 13), "k")
    mx = te.compute((7,), lambda i: te.max(a[i, k], axis=k), name="mx")
    mn = te.compute((7,), lambda i: te.min(a[i, k], axis=k), name="mn")
    pos = te.compute((7,), lambda i: te.sum(a[i, k], axis=k, where=a[i, k] > 0.0), name="pos")
    x = random_inputs([a], 3)["a"]
    r = evaluate([mx, mn, pos], {"a": x})
    np.testing.assert_array_equal(r["mx"], x.max(1))
    np.testing.assert_array_equal(r["mn"], x.min(1))
    close(r["pos"], np.where(x > 0, x, 0).sum(1))


def test_int32_and_float64_matmul():
    A, B, C = W.matmul(9, 11, 13, dtype="int32")
    inp = random_inputs([A, B], 1)
    assert inp["A"].dtype == np.int32 and np.abs(inp["A"]).max() <= 8
    r = evaluate([C], inp)["C"]
    assert r.dtype == np.int32
    np.testing.assert_array_equal(r, inp["A"].astype(np.int64) @ inp["B"])
    A, B, C = W.matmul(9, 11, 13, dtype="float64")
    inp = random_inputs([C], 1)
    r = evaluate([C], inp)["C"]
    assert r.dtype == np.float64
    np.testing.assert_allclose(r, inp["A"] @ inp["B"], rtol=1e-13)


def test_float32_result_is_rounded_once_from_float64():
    a = te.placeholder((4,), name="a")
    b = te.compute((4,), lambda i: te.exp(a[i]) * 3.0 + te.sigmoid(a[i]) - te.sqrt(te.abs(a[i])), name="b")
    x = np.array([-1.5, -0.25, 0.5, 2.0], np.float32)
    ref = (np.exp(x.astype(F64)) * 3 + 1 / (1 + np.exp(-x.astype(F64))) - np.sqrt(np.abs(x.astype(F64))))
    np.testing.assert_array_equal(evaluate([b], {"a": x})["b"], ref.astype(np.float32))


def test_chunking_gives_the_same_answer():
    # tiny chunks force blocking of spatial and reduce axes (partial sums, running max)
    for tensors in (W.matmul(6, 7, 9), W.c2d(1, 6, 6, 3, 4, 3, 2, 1), W.sfm(5, 11), W.t2d(1, 3, 3, 2, 2, 4, 2, 1)):
        inp = random_inputs(tensors, 2)
        want = evaluate(tensors[-1:], inp)
        got = evaluate(tensors[-1:], inp, chunk_elems=5)
        for name in want:
            close(got[name], want[name], 1e-6)


def test_sum_over_an_unused_reduce_axis_multiplies():
    a = te.placeholder((3,), name="a")
    k = te.reduce_axis((0, 4), "k")
    b = te.compute((3,), lambda i: te.sum(a[i], axis=k), name="b")
    c = te.compute((3,), lambda i: te.sum(te.const(2.0), axis=k), name="c")
    r = evaluate([b, c], {"a": np.array([1, 2, 3], np.float32)})
    np.testing.assert_array_equal(r["b"], [4, 8, 12])
    np.testing.assert_array_equal(r["c"], [8, 8, 8])


def test_intermediates_returned_and_inputs_checked():
    a = te.placeholder((2, 3), name="a")
    b = te.compute((2, 3), lambda i, j: a[i, j] + 1.0, name="b")
    c = te.compute((3, 2), lambda i, j: b[j, i] * 2.0, name="c")
    r = evaluate(c, {"a": np.ones((2, 3), np.float32)})
    assert set(r) == {"b", "c"} and (r["c"] == 4).all()
    with pytest.raises(KeyError, match="'a'"):
        evaluate([c], {})
    with pytest.raises(ValueError, match="shape"):
        evaluate([c], {"a": np.ones((3, 2), np.float32)})


def test_random_inputs_deterministic():
    ts = W.cbr(1, 4, 4, 3, 2, 3, 1, 1)
    r1, r2 = random_inputs(ts, 7), random_inputs(ts, 7)
    assert list(r1) == ["data", "kernel", "bias", "bn_scale", "bn_offset"]
    for k in r1:
        np.testing.assert_array_equal(r1[k], r2[k])
        assert r1[k].dtype == np.float32 and -1 <= r1[k].min() and r1[k].max() <= 1
    assert not np.array_equal(random_inputs(ts, 8)["data"], r1["data"])


def test_an_out_of_range_read_names_the_point_when_its_indices_vary_along_different_axes():
    a = te.placeholder((7, 7), name="a")
    i, j = te.IterVar(te.var("i"), 7, "S"), te.IterVar(te.var("j"), 7, "S")
    body = a[i.var * 2, j.var]  # built around te.compute's check: only the first index leaves the tensor
    b = te.Tensor(ComputeOp("b", (i, j), (), body, None, "float32", (a,)))
    with pytest.raises(IndexError, match=r"reads a\[8, 0\] outside shape \(7, 7\)"):
        evaluate([b], {"a": np.zeros((7, 7), np.float32)})
