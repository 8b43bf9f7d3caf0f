"""Expression files: every example loads with the right shapes and computes what numpy computes; language
features (ranges, lifting, types, defines) behave as docs/expression-language.md says."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ansorc.frontend import Program, TeError, load, parse_text
from ansorc.ir.program import expr as ir
from ansorc.ir.program.dag import ComputeDAG
from ansorc.ir.program.evaluate import evaluate, random_inputs

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

DEFAULT_SHAPES = {  # output shapes at the default sizes
    "matmul_relu": [(512, 512)], "gmm": [(1, 512, 512)], "c2d": [(1, 56, 56, 64)], "dep": [(1, 112, 112, 32)],
    "softmax": [(512, 512)], "nrm": [(1,)], "cbr": [(1, 28, 28, 128)], "c1d": [(1, 128, 128)],
    "t2d": [(1, 8, 8, 256)], "c3d": [(1, 16, 14, 14, 256)], "grp": [(1, 28, 28, 128)], "dil": [(1, 54, 54, 64)],
    "cap": [(1, 8, 8, 4, 4, 32)], "tbg": [(1, 12, 128, 128)],
}


def test_examples_directory_has_exactly_the_listed_files():
    assert sorted(p.stem for p in EXAMPLES.glob("*.te")) == sorted(DEFAULT_SHAPES)


@pytest.mark.parametrize("name", sorted(DEFAULT_SHAPES))
def test_example_loads_with_expected_shapes(name):
    prog = load(EXAMPLES / f"{name}.te")
    assert isinstance(prog, Program)
    assert [t.shape for t in prog.outputs] == DEFAULT_SHAPES[name]
    assert prog.tensors == prog.inputs + prog.outputs
    assert all(t.dtype == "float32" for t in prog.tensors)
    assert prog.text == (EXAMPLES / f"{name}.te").read_text()
    dag = ComputeDAG(prog.tensors)  # the IR accepts what the frontend builds
    assert dag.flop_count > 0


# ----------------------------------------------------------------------------- numpy references

def _pad(x, p, axes):
    width = [(p, p) if a in axes else (0, 0) for a in range(x.ndim)]
    return np.pad(x, width)


def conv_nhwc(x, w, s, p, d=1):
    """x: N x spatial... x CI, w: K... x CI x CO (any number of spatial dims)."""
    nsp = x.ndim - 2
    xp = _pad(x.astype(np.float64), p, range(1, 1 + nsp))
    ks = w.shape[:nsp]
    out_sp = [(xp.shape[1 + a] - d * (ks[a] - 1) - 1) // s + 1 for a in range(nsp)]
    out = np.zeros([x.shape[0], *out_sp, w.shape[-1]])
    for k in np.ndindex(*ks):
        sl = tuple(slice(k[a] * d, k[a] * d + s * (out_sp[a] - 1) + 1, s) for a in range(nsp))
        out += np.tensordot(xp[(slice(None), *sl)], w[k], axes=([nsp + 1], [0]))
    return out


def _run(name, defines):
    prog = load(EXAMPLES / f"{name}.te", defines=defines)
    x = random_inputs(prog.inputs, seed=1)
    results = evaluate(prog.outputs, x)
    return prog, x, [results[t.name] for t in prog.outputs]


def test_matmul_relu_matches_numpy():
    _, x, (d,) = _run("matmul_relu", {"N": 16, "M": 24, "K": 8})
    np.testing.assert_allclose(d, np.maximum(x["A"] @ x["B"], 0), rtol=1e-5, atol=1e-6)


def test_gmm_matches_numpy():
    _, x, (z,) = _run("gmm", {"B": 2, "N": 8, "M": 4, "K": 16})
    np.testing.assert_allclose(z, x["X"] @ x["Y"], rtol=1e-5, atol=1e-6)


def test_softmax_matches_numpy():
    _, x, (y,) = _run("softmax", {"M": 7, "N": 33})
    e = np.exp(x["X"] - x["X"].max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_nrm_matches_numpy():
    _, x, (d,) = _run("nrm", {"B": 3, "M": 9, "N": 5})
    np.testing.assert_allclose(d, np.sqrt((x["A"].astype(np.float64) ** 2).sum(axis=(1, 2))), rtol=1e-5)


@pytest.mark.parametrize("s,p", [(1, 1), (2, 1), (2, 0), (1, 2)])
def test_c2d_matches_numpy(s, p):
    _, x, (o,) = _run("c2d", {"H": 9, "W": 7, "CI": 3, "CO": 5, "K": 3, "S": s, "P": p})
    np.testing.assert_allclose(o, conv_nhwc(x["I"], x["Wt"], s, p), rtol=1e-5, atol=1e-5)


def test_c1d_c3d_dil_match_numpy():
    _, x, (o,) = _run("c1d", {"L": 11, "CI": 4, "CO": 3, "K": 3, "S": 2, "P": 1})
    np.testing.assert_allclose(o, conv_nhwc(x["I"], x["Wt"], 2, 1), rtol=1e-5, atol=1e-5)
    _, x, (o,) = _run("c3d", {"D": 4, "H": 5, "W": 6, "CI": 2, "CO": 3, "K": 3, "S": 1, "P": 1})
    np.testing.assert_allclose(o, conv_nhwc(x["I"], x["Wt"], 1, 1), rtol=1e-5, atol=1e-5)
    _, x, (o,) = _run("dil", {"H": 9, "W": 9, "CI": 2, "CO": 3, "K": 3, "S": 1, "P": 1, "DL": 2})
    np.testing.assert_allclose(o, conv_nhwc(x["I"], x["Wt"], 1, 1, d=2), rtol=1e-5, atol=1e-5)


def test_dep_and_grp_match_numpy():
    _, x, (o,) = _run("dep", {"H": 8, "W": 8, "C": 4, "K": 3, "S": 2, "P": 1})
    ref = np.concatenate([conv_nhwc(x["I"][..., c:c + 1], x["Wt"][0, :, :, c:c + 1, None], 2, 1)
                          for c in range(4)], axis=-1)
    np.testing.assert_allclose(o, ref, rtol=1e-5, atol=1e-5)
    _, x, (o,) = _run("grp", {"H": 6, "W": 6, "CI": 8, "CO": 4, "K": 3, "S": 1, "P": 1, "G": 2})
    ref = np.concatenate([conv_nhwc(x["I"][..., 4 * g:4 * g + 4], x["Wt"][..., 2 * g:2 * g + 2], 1, 1)
                          for g in range(2)], axis=-1)
    np.testing.assert_allclose(o, ref, rtol=1e-5, atol=1e-5)


def test_cbr_matches_numpy():
    _, x, (o,) = _run("cbr", {"H": 8, "W": 8, "CI": 3, "CO": 4, "K": 3, "S": 2, "P": 1})
    conv = conv_nhwc(x["I"], x["Wt"], 2, 1)
    np.testing.assert_allclose(o, np.maximum((conv + x["Bias"]) * x["Scale"] + x["Shift"], 0), rtol=1e-5,
                               atol=1e-5)


def test_t2d_matches_scatter_reference():
    size = {"H": 3, "W": 4, "CI": 3, "CO": 2, "K": 4, "S": 2, "P": 1}
    _, x, (o,) = _run("t2d", size)
    i, w = x["I"].astype(np.float64), x["Wt"]
    s, k, p = 2, 4, 1
    full = np.zeros((1, (3 - 1) * s + k, (4 - 1) * s + k, 2))
    for h, ww, kh, kw in np.ndindex(3, 4, k, k):
        full[:, h * s + kh, ww * s + kw] += i[:, h, ww] @ w[kh, kw]
    np.testing.assert_allclose(o, full[:, p:p + o.shape[1], p:p + o.shape[2]], rtol=1e-5, atol=1e-5)


def test_cap_and_tbg_match_numpy():
    _, x, (o,) = _run("cap", {"H": 5, "W": 5, "CI": 2, "CO": 3, "K": 3, "S": 2, "P": 1, "CS": 2})
    ip = _pad(x["I"].astype(np.float64), 1, (1, 2))
    ref = np.zeros(o.shape)
    for oh, ow, rh, rw in np.ndindex(o.shape[1], o.shape[2], 3, 3):
        ref[:, oh, ow] += np.einsum("nikc,kjcd->nijd", ip[:, oh * 2 + rh, ow * 2 + rw], x["Wt"][rh, rw])
    np.testing.assert_allclose(o, ref, rtol=1e-5, atol=1e-5)
    _, x, (s,) = _run("tbg", {"B": 2, "L": 5, "NH": 3, "DH": 4})
    np.testing.assert_allclose(s, np.einsum("bihd,bjhd->bhij", x["Q"], x["Kt"]), rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------- language features

def test_defines_override_defaults_and_derived_params_follow():
    prog = load(EXAMPLES / "c2d.te", defines={"S": 2, "H": "28", "W": 28})
    assert prog.params["S"] == 2 and prog.params["OH"] == 14 and prog.params["OW"] == 14
    assert prog.outputs[0].shape == (1, 14, 14, 64)
    assert set(prog.params) == {"N", "H", "W", "CI", "CO", "K", "S", "P", "OH", "OW"}


def test_tensor_names_come_from_the_file_and_lifted_reductions_get_fresh_names():
    prog = load(EXAMPLES / "nrm.te")
    assert [t.name for t in prog.inputs] == ["A"] and [t.name for t in prog.outputs] == ["D"]
    (lifted,) = prog.intermediates
    assert lifted.name == "D_sum" and lifted.op.combiner == "sum" and lifted.shape == (1,)
    assert [a.name for a in lifted.op.reduce_axes] == ["i", "j"]
    # x ** 2 multiplies out instead of calling pow
    assert isinstance(lifted.op.body, ir.Binary) and lifted.op.body.op == "*"


def test_axes_keep_the_index_names_and_reductions_are_whole_bodies():
    prog = load(EXAMPLES / "matmul_relu.te")
    c = prog.intermediates[0]
    assert [a.name for a in c.op.axes] == ["i", "j"] and [a.name for a in c.op.reduce_axes] == ["k"]
    assert c.op.combiner == "sum" and prog.outputs[0].op.combiner is None


def _eval_text(text, inputs, defines=None):
    prog = parse_text(text, "t.te", defines)
    res = evaluate(prog.outputs, inputs)
    return prog, [res[t.name] for t in prog.outputs]


def test_inline_padding_select_and_if_forms_agree():
    text = """
param N = 10, P = 2
input A: float32[N]
output X: float32[N + 2*P]
X[i] = A[i - P] if P <= i < N + P else 0.0
output Y: float32[N + 2*P]
Y[i] = select(i >= P and i - P < N, A[i - P], 0)
"""
    a = np.arange(1, 11, dtype=np.float32)
    _, (x, y) = _eval_text(text, {"A": a})
    np.testing.assert_array_equal(x, np.pad(a, 2))
    np.testing.assert_array_equal(y, np.pad(a, 2))


def test_conditions_that_keep_reads_in_range_are_accepted():
    text = """
param N = 6
input A: float32[N]
input B: float32[N, 3]
output X: float32[N + 1]
X[i] = 0.0 if i < 1 or i > N - 1 + 1 else A[i - 1]        # else-branch: the negated condition holds
output Y: float32[N + 1]
Y[i] = A[i - 1] * 2.0 if not (i < 1) and i - 1 != 99 else select(i == 0, 1.0, -1.0)
output Z[i] = sum(B[i + r - 1, q] if i >= 1 and i + r <= N else 0.0) where i < N, r < 2
"""
    a = np.arange(6, dtype=np.float32)
    b = np.arange(18, dtype=np.float32).reshape(6, 3)
    _, (x, y, z) = _eval_text(text, {"A": a, "B": b})
    np.testing.assert_array_equal(x, np.concatenate([[0], a]))
    np.testing.assert_array_equal(y, np.concatenate([[1], 2 * a]))
    ref = [sum(b[i + r - 1].sum() for r in range(2) if i >= 1 and i + r <= 6) for i in range(6)]
    np.testing.assert_array_equal(z, ref)


def test_where_ranges_with_nonzero_lower_bound_and_pooling():
    text = """
param N = 8
input A: float32[N]
output S: float32[N]
S[i] = sum(A[i + r] if 0 <= i + r < N else 0.0) where -1 <= r <= 1
output Pool[i] = max(A[2*i + r]) where i < N // 2, r < 2
"""
    a = np.random.default_rng(0).standard_normal(8).astype(np.float32)
    prog, (s, pool) = _eval_text(text, {"A": a})
    ref = np.convolve(a, np.ones(3), mode="same")
    np.testing.assert_allclose(s, ref, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(pool, a.reshape(4, 2).max(axis=1))
    assert prog.outputs[0].op.reduce_axes[0].extent == 3


def test_nested_reductions_are_lifted_into_their_own_tensors():
    text = """
param M = 4, N = 6
input X: float32[M, N]
output Y[i, j] = exp(X[i, j] - max(X[i, k])) / sum(exp(X[i, l] - max(X[i, m])))
output Total[i] = sum(X[i, j] * max(X[i, k]))
"""
    x = np.random.default_rng(3).standard_normal((4, 6)).astype(np.float32)
    prog, (y, total) = _eval_text(text, {"X": x})
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(total, x.sum(axis=1) * x.max(axis=1), rtol=1e-5)
    names = {t.name for t in prog.intermediates}
    assert len(names) == len(prog.intermediates) == 4  # three maxes and one sum, all distinct names
    ComputeDAG(prog.tensors)


def test_scalar_reduction_becomes_a_one_element_tensor():
    text = "param N = 5\ninput A: float32[N]\noutput B[i] = A[i] / sum(A[k])\n"
    a = np.arange(1, 6, dtype=np.float32)
    _, (b,) = _eval_text(text, {"A": a})
    np.testing.assert_allclose(b, a / a.sum())


def test_types_int_tensors_casts_and_gather():
    text = """
param N = 4, M = 3
input A: float32[N, M]
input Idx: int32[N]
output G[i, j] = A[Idx[i], j] if 0 <= Idx[i] < N else -1.0   # a gather is only accepted guarded
output C: float64[N]
C[i] = Idx[i] * 2 + 1                  # int value into a float64 tensor: implicit
output T[i] = int32(A[i, 0] * 10.0) % 3
output F[i, j] = float32(i) / 2 + A[i, j] ** 0.5 * 0.0
"""
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    idx = np.array([3, 0, 7, 1], dtype=np.int32)
    prog, (g, c, t, f) = _eval_text(text, {"A": a, "Idx": idx})
    assert [o.dtype for o in prog.outputs] == ["float32", "float64", "int32", "float32"]
    np.testing.assert_array_equal(g, np.where((idx < 4)[:, None], a[np.minimum(idx, 3)], -1.0))
    np.testing.assert_array_equal(c, idx * 2.0 + 1)
    np.testing.assert_array_equal(t, (a[:, 0] * 10).astype(np.int32) % 3)
    assert any(isinstance(e, ir.Call) and e.name == "pow" for e in ir.walk(prog.outputs[3].op.body))


def test_literals_take_the_type_of_the_other_operand():
    prog = parse_text("input X: float64[3]\noutput Y[i] = max(X[i] * 2.0, 0)\n")
    assert prog.outputs[0].dtype == "float64"
    consts = [e for e in ir.walk(prog.outputs[0].op.body) if isinstance(e, ir.Const)]
    assert consts and all(c.dtype == "float64" for c in consts)


def test_identities_fold_so_stride_one_indices_stay_plain():
    prog = load(EXAMPLES / "c2d.te", defines={"P": 0, "H": 8, "W": 8, "CI": 2, "CO": 2})
    read = next(e for e in ir.walk(prog.outputs[0].op.body) if isinstance(e, ir.Read) and e.name == "Pad")
    assert repr(read) == "Pad[n, (h + rh), (w + rw), rc]"


def test_order_free_definitions_multiple_outputs_and_unused_inputs():
    text = """# outputs first, producers later
output Z[i] = Y[i] + 1.0; input A: float32[4]
input Unused: float32[2]
output W[i] = A[i] * 2.0
Y[i] = A[i] * A[i]
"""
    prog = parse_text(text)
    assert [t.name for t in prog.inputs] == ["A", "Unused"]
    assert [t.name for t in prog.outputs] == ["Z", "W"]
    assert [t.name for t in prog.tensors] == ["A", "Unused", "Z", "W"]


def test_source_forms_crlf_bom_bytes_comments_and_wrapped_lines():
    text = "\ufeffparam N = 3  # size\r\ninput A: float32[N]\r\n\r\noutput B[i] = (A[i]\r\n   + 1.0)  # wrapped\r\n"
    assert parse_text(text).outputs[0].shape == (3,)
    assert parse_text(text.encode("utf-8"), "bytes.te").outputs[0].shape == (3,)


def test_load_accepts_paths_and_reports_missing_files(tmp_path):
    f = tmp_path / "k.te"
    f.write_text("input A: float32[2]\noutput B[i] = -A[i]\n")
    assert load(str(f)).outputs[0].shape == (2,)
    with pytest.raises(TeError) as e:
        load(tmp_path / "missing.te")
    assert "missing.te:1:1: error: cannot read the file" in str(e.value)


def test_constant_folding_of_sizes_and_literals():
    prog = parse_text("param K = 2 ** 3 - 1, L = -K % 3\ninput A: float32[K, L + 1]\n"
                      "output B[i, j] = A[i, j] * (2 - 3) ** 2 / 4\n")
    assert prog.params == {"K": 7, "L": 2} and prog.outputs[0].shape == (7, 3)
    a = np.ones((7, 3), np.float32)
    np.testing.assert_allclose(evaluate(prog.outputs, {"A": a})["B"], a * 0.25)
