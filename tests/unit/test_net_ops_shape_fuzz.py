"""Random Slice, Reshape and Pad parameters: the lowering (te + evaluator) agrees with numpy's own slicing,
reshaping and padding, whose semantics ONNX's are."""
import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansorc import te
from ansorc.ir.program.evaluate import evaluate
from ansorc.net.ops.common import LowerContext, Node
from ansorc.net.ops import table

OPS = table("shape", "shape_const", "resize")

FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SHAPE = (4, 1, 6)
X = np.arange(math.prod(SHAPE), dtype=np.float32).reshape(SHAPE)


def _run(op, ins, attrs=None, in_shapes=(SHAPE,)):
    x = te.placeholder(SHAPE, "float32", "x")
    node = Node(op, "n", {**(attrs or {}), "_opset": 18}, tuple(in_shapes), ("float32",) * len(in_shapes), (),
                ("float32",), "m")
    ctx = LowerContext()
    [y] = OPS[op].lower(node, [x] + ins, ctx)
    return X if y is x else evaluate([y], {"x": X, **ctx.weights})[y.name]


BOUND = st.integers(-9, 9) | st.sampled_from([2**63 - 1, -2**63])


@FUZZ
@given(st.lists(st.tuples(st.integers(0, 2), BOUND, BOUND, st.integers(-3, 3).filter(bool)), min_size=1,
                max_size=3, unique_by=lambda t: t[0]))
def test_slice_matches_numpy_slicing(spec):
    want = X[tuple(next((slice(s, e, k) for a, s, e, k in spec if a == d), slice(None)) for d in range(3))]
    if want.size == 0:
        return  # empty results are unsupported (checked elsewhere)
    ins = [np.array([t[i] for t in spec], np.int64) for i in (1, 2, 0, 3)]
    got = _run("Slice", ins, in_shapes=(SHAPE,) + ((len(spec),),) * 4)
    np.testing.assert_array_equal(got.reshape(want.shape), want)


def _factorizations(n):
    return [d for d in range(1, n + 1) if n % d == 0]


@FUZZ
@given(st.data())
def test_reshape_matches_numpy(data):
    dims, left = [], math.prod(SHAPE)
    while left > 1 and len(dims) < 4:
        d = data.draw(st.sampled_from(_factorizations(left)))
        dims.append(d)
        left //= d
    dims.append(left)
    got = _run("Reshape", [np.array(dims, np.int64)], in_shapes=(SHAPE, (len(dims),)))
    np.testing.assert_array_equal(got.reshape(dims), X.reshape(dims))


@FUZZ
@given(st.lists(st.integers(-1, 3), min_size=6, max_size=6), st.sampled_from(["constant", "edge", "wrap"]))
def test_pad_matches_numpy(pads, mode):
    if mode != "constant":
        pads = [max(p, 0) for p in pads]  # numpy pads only grow in these modes
    grow = [(max(pads[d], 0), max(pads[d + 3], 0)) for d in range(3)]
    want = np.pad(X, grow, mode=mode, **({"constant_values": 7.0} if mode == "constant" else {}))
    want = want[tuple(slice(-min(pads[d], 0), want.shape[d] + min(pads[d + 3], 0)) for d in range(3))]
    if want.size == 0:
        return
    got = _run("Pad", [np.array(pads, np.int64), np.array(7.0, np.float32)], {"mode": mode},
               in_shapes=(SHAPE, (6,), ()))
    np.testing.assert_array_equal(got.reshape(want.shape), want)


@FUZZ
@given(st.integers(1, 9), st.integers(1, 9), st.integers(1, 9), st.integers(1, 9),
       st.sampled_from(["nearest", "linear"]),
       st.sampled_from(["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric"]),
       st.sampled_from(["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]))
def test_resize_matches_onnx_reference(h, w, oh, ow, mode, ctm, nearest_mode):
    from tests.unit.onnx_node_harness import lower_and_compare
    x = np.random.default_rng(h * 10 + w).uniform(-1, 1, (1, 2, h, w)).astype(np.float32)
    attrs = {"mode": mode, "coordinate_transformation_mode": ctm, "nearest_mode": nearest_mode}
    lower_and_compare(OPS, "Resize", [x, None, None, np.array([1, 2, oh, ow], np.int64)], attrs, opset=19,
                      rtol=1e-5, atol=1e-6)
