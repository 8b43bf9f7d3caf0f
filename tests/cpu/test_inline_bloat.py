"""A chain the ONNX fuzzer found (seed 7000146 of tests/cpu/test_fuzz_onnx.py): Tanh then Asin. Tanh was inlined
into Asin's polynomials, which read their input 2,925 times as a tree: a 2.4 MB library that gcc had not
compiled after 5 minutes. Now the translation unit stays small and the result matches numpy."""
import shutil

import numpy as np
import pytest
from onnx import TensorProto, helper

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")


@pytest.mark.parametrize("op,ref", [("Asin", np.arcsin), ("Acos", np.arccos), ("Atan", np.arctan),
                                    ("Sin", np.sin), ("Tan", np.tan)])
def test_a_producer_read_thousands_of_times_stays_materialized(op, ref, tmp_path):
    import ansorc.net
    nodes = [helper.make_node("Tanh", ["x"], ["t"]), helper.make_node(op, ["t"], ["y"])]
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 7])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 7])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    x = np.random.default_rng(0).standard_normal((3, 7)).astype(np.float32) * 2
    with ansorc.net.compile(m) as model:
        size = len(open(model.files["c"]).read())
        (y,) = model(x)
    assert size < 150_000, size
    np.testing.assert_allclose(y, ref(np.tanh(x.astype(np.float64))), rtol=2e-6, atol=2e-6)
