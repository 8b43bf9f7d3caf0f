"""The te DSL's user-facing behaviour: what it exposes, what it builds and what it refuses."""
import numpy as np
import pytest

from ansorc.ir.program import te
from ansorc.ir.program.evaluate import evaluate
from ansorc.ir.program.expr import Binary, Cast, Read, Select
from ansorc.ir.program.te import ComputeOp, PlaceholderOp


def test_placeholder_and_compute_expose_shape_dtype_name():
    a = te.placeholder((4, 5), "int32", "a")
    assert (a.shape, a.dtype, a.name, a.ndim) == ((4, 5), "int32", "a", 2)
    assert isinstance(a.op, PlaceholderOp)
    b = te.compute((5, 4), lambda i, j: a[j, i] * 2, name="b")
    assert (b.shape, b.dtype, b.name) == ((5, 4), "int32", "b")
    assert isinstance(b.op, ComputeOp) and b.op.combiner is None and b.op.reduce_axes == ()
    assert [x.name for x in b.op.axes] == ["i", "j"] and [x.extent for x in b.op.axes] == [5, 4]
    assert b.op.inputs == (a,) and b == b and b != a and len({a, b, a}) == 2
    f = te.compute((5,), lambda i: a[0, i % 4].astype("float32") * 0.5, name="f")
    assert f.dtype == "float32"
    assert te.placeholder(3).shape == (3,) and te.placeholder(3).dtype == "float32"


def test_reading_gives_read_nodes():
    a = te.placeholder((4, 5), name="a")
    r = a[1, 2]
    assert isinstance(r, Read) and r.name == "a" and r.dtype == "float32" and r.tensor is a


def test_bad_shapes_and_indices_raise():
    with pytest.raises(ValueError, match="positive"):
        te.placeholder((0, 3))
    with pytest.raises(ValueError):
        te.placeholder((2,), "float8")
    a = te.placeholder((4, 5), name="a")
    with pytest.raises(IndexError, match="2 dimensions, indexed with 1"):
        a[1]
    with pytest.raises(IndexError, match="indexed with 3"):
        te.compute((4,), lambda i: a[i, 0, 0])
    with pytest.raises(TypeError, match="integer"):
        a[0, a[0, 0]]
    with pytest.raises(TypeError, match="takes 1 indices but the shape has 2"):
        te.compute((4, 5), lambda i: a[i, 0])
    with pytest.raises(ValueError, match="not an axis"):
        k = te.reduce_axis((0, 5), "k")
        te.compute((4,), lambda i: a[i, k])  # used but not listed in a reducer
    with pytest.raises(ValueError, match="lo < hi"):
        te.reduce_axis((3, 3))


def test_elementwise_max_min_vs_reductions():
    a = te.placeholder((3, 4), name="a")
    k = te.reduce_axis((0, 4), "k")
    e = te.max(a[0, 0], a[1, 1])
    assert isinstance(e, Binary) and e.op == "max"
    relu = te.compute((3, 4), lambda i, j: te.max(a[i, j], 0.0), name="relu")
    clip = te.compute((3, 4), lambda i, j: te.min(a[i, j], 0), name="clip")
    assert relu.op.combiner is None and relu.dtype == "float32"
    rmax = te.compute((3,), lambda i: te.max(a[i, k], axis=k), name="rmax")
    rmin = te.compute((3,), lambda i: te.min(a[i, k], k), name="rmin")  # axis given positionally
    assert rmax.op.combiner == "max" and [x.name for x in rmax.op.reduce_axes] == ["k"]
    assert rmin.op.combiner == "min" and rmax.op.reduce_axes[0].kind == "R"
    x = np.array([[1, -2, 3, -4], [-5, 6, -7, 8], [0, 0, -1, 1]], np.float32)
    r = evaluate([relu, clip, rmax, rmin], {"a": x})
    np.testing.assert_array_equal(r["relu"], np.maximum(x, 0))
    np.testing.assert_array_equal(r["clip"], np.minimum(x, 0))
    np.testing.assert_array_equal(r["rmax"], x.max(1))
    np.testing.assert_array_equal(r["rmin"], x.min(1))


def test_reducer_misuse_raises():
    a = te.placeholder((3, 4), name="a")
    with pytest.raises(TypeError, match="needs axis"):
        te.sum(a[0, 0])
    with pytest.raises(TypeError, match="reduce_axis"):
        te.sum(a[0, 0], a[0, 1])
    k = te.reduce_axis((0, 4), "k")
    with pytest.raises(TypeError, match="whole body of a compute"):
        te.compute((3,), lambda i: te.sum(a[i, k], axis=k) + 1.0, name="bad")
    with pytest.raises(TypeError, match="whole body of a compute"):
        te.compute((3,), lambda i: te.exp(te.max(a[i, k], axis=k)), name="bad2")


def test_reduce_axis_with_nonzero_lower_bound():
    a = te.placeholder((10,), name="a")
    k = te.reduce_axis((2, 6), "k")
    b = te.compute((1,), lambda i: te.sum(a[k + i], axis=k), name="b")
    assert b.op.reduce_axes[0].extent == 4
    x = np.arange(10, dtype=np.float32)
    assert evaluate([b], {"a": x})["b"][0] == 2 + 3 + 4 + 5


def test_multi_axis_reduction_and_where():
    a = te.placeholder((2, 3, 4), name="a")
    i, j = te.reduce_axis((0, 3), "i"), te.reduce_axis((0, 4), "j")
    s = te.compute((2,), lambda b: te.sum(a[b, i, j], axis=[i, j], where=i > j), name="s")
    assert len(s.op.reduce_axes) == 2 and isinstance(s.op.body, Select)
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    mask = np.arange(3)[:, None] > np.arange(4)[None, :]
    np.testing.assert_allclose(evaluate([s], {"a": x})["s"], (x * mask).sum((1, 2)), rtol=1e-6)


def test_astype():
    a = te.placeholder((5,), name="a")
    e = a[0].astype("int32")
    assert isinstance(e, Cast) and e.dtype == "int32" and a[0].astype("float32") == a[0]
    t = te.compute((5,), lambda i: a[i].astype("int32"), name="t")  # truncates toward zero, like C
    f = te.compute((5,), lambda i: (i - 2).astype("float64") / 4.0, name="f")
    assert t.dtype == "int32" and f.dtype == "float64"
    r = evaluate([t, f], {"a": np.array([-1.5, -0.5, 0.5, 1.9, 2.0], np.float32)})
    np.testing.assert_array_equal(r["t"], [-1, 0, 0, 1, 2])
    np.testing.assert_array_equal(r["f"], [-0.5, -0.25, 0, 0.25, 0.5])
    assert r["f"].dtype == np.float64


def test_if_then_else_and_all_any():
    a = te.placeholder((6,), name="a")
    b = te.compute((6,), lambda i: te.if_then_else(te.all(i >= 1, i < 4, a[i] > 0.0), a[i], -1.0), name="b")
    c = te.compute((6,), lambda i: te.if_then_else(te.any(i.equal(0), i.equal(5)), 1.0, 0.0), name="c")
    d = te.compute((6,), lambda i: te.if_then_else(te.all(), 7, 0), name="d")
    x = np.array([3, 2, -1, 4, 5, 6], np.float32)
    r = evaluate([b, c, d], {"a": x})
    np.testing.assert_array_equal(r["b"], [-1, 2, -1, 4, -1, -1])
    np.testing.assert_array_equal(r["c"], [1, 0, 0, 0, 0, 1])
    assert r["d"].dtype == np.int32 and (r["d"] == 7).all()
    with pytest.raises(TypeError, match="truth value"):
        te.compute((6,), lambda i: a[i] if i > 2 else 0.0)
    with pytest.raises(TypeError, match="boolean"):
        te.if_then_else(a[0], 1.0, 0.0)


def test_math_functions():
    a = te.placeholder((4,), name="a")
    fns = {"exp": np.exp, "tanh": np.tanh, "abs": np.abs, "floor": np.floor, "ceil": np.ceil}
    def unary(n):
        f = getattr(te, n)
        return te.compute((4,), lambda i: f(a[i]), name=n)
    outs = [unary(n) for n in fns]
    outs.append(te.compute((4,), lambda i: te.pow(te.abs(a[i]), 1.5) + te.log(te.abs(a[i]) + 1.0), name="pl"))
    outs.append(te.compute((4,), lambda i: te.sqrt(i), name="si"))  # int argument becomes float32
    x = np.array([-1.5, -0.2, 0.7, 2.5], np.float32)
    r = evaluate(outs, {"a": x})
    for n, f in fns.items():
        np.testing.assert_allclose(r[n], f(x), rtol=1e-6)
    np.testing.assert_allclose(r["pl"], np.abs(x) ** 1.5 + np.log(np.abs(x) + 1), rtol=1e-6)
    assert outs[-1].dtype == "float32"
    np.testing.assert_allclose(r["si"], np.sqrt(np.arange(4)), rtol=1e-6)


def test_variadic_compute_and_default_names():
    a = te.placeholder((2, 3, 4), name="a")
    b = te.compute(a.shape, lambda *i: a[i] + 1.0, name="b")
    assert [x.name for x in b.op.axes] == ["i0", "i1", "i2"]
    x = np.ones((2, 3, 4), np.float32)
    assert (evaluate([b], {"a": x})["b"] == 2).all()
    c, d = te.compute((2,), lambda i: a[i, 0, 0]), te.compute((2,), lambda i: a[i, 0, 0])
    assert c.name != d.name  # unnamed computes get distinct names


def test_ansorc_te_is_an_importable_module():
    import importlib

    import ansorc
    te_mod = importlib.import_module("ansorc.te")
    import ansorc.te as te_alias
    assert te_alias is te_mod is ansorc.te
    assert te_alias.placeholder is te.placeholder and te_alias.sum is te.sum
    a = te_alias.placeholder((4,), name="A")
    b = te_alias.compute((4,), lambda i: a[i] + 1.0, name="B")
    assert b.shape == (4,)
