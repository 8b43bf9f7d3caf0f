"""onnx's backend node tests through ansorc's backend, compared as onnx's runner does.

test_node_conformance is the real run over the support table (ops.SUPPORT): every supported case through
the numpy reference executor, and compiled to C and run (the compiled executor: ansorc.net.compile with default
schedules) for every fourth case and one case of each operator those miss, or for every case with
ANSORC_CONFORMANCE=full (about 6 minutes on 2 cores, 11 on a slow day). It prints the counts and the missing ops
and fails when a supported case fails, unless the case is in XFAIL with its reason. The other tests
check the harness itself on the test table of mini_ops.py."""
import functools
import os

import numpy as np
import pytest

from ansorc.net.backend import compiled, reference
from ansorc.net.ops import SUPPORT

from .conformance import node_cases, run_all, run_case
from .mini_ops import TABLE

# case name -> why it is expected to fail (a reason is required for every entry)
XFAIL: dict = {}

MINI_CASES = ("test_relu", "test_add_bcast", "test_mul", "test_matmul_2d", "test_basic_conv_with_padding",
              "test_conv_with_strides_and_asymmetric_padding", "test_identity", "test_shape_start_1",
              "test_dropout_default_mask", "test_constantofshape_float_ones", "test_size")


def cases(names):
    found = {c.name: c for c in node_cases() if c.name in names}
    assert sorted(found) == sorted(names)
    return [found[n] for n in names]


@pytest.mark.slow
def test_harness_passes_the_cases_the_test_table_covers():
    report = run_all(TABLE, cases(MINI_CASES))
    assert [r.name for r in report.by("passed")] == list(MINI_CASES), report.text()


@pytest.mark.slow
def test_harness_fails_a_wrong_executor_and_reports_missing_ops():
    def off_by_a_bit(model):
        run = reference(model, table=TABLE)
        return lambda inputs: [o + np.asarray(1e-2, o.dtype) for o in run(inputs)]
    relu, mul = cases(("test_relu", "test_mul"))
    assert run_case(relu, TABLE, executor=off_by_a_bit).status == "failed"
    assert run_case(relu, TABLE, executor=functools.partial(reference, table=TABLE)).status == "passed"
    r = run_case(mul, {k: v for k, v in TABLE.items() if k != "Mul"})
    assert r.status == "unsupported" and "operator Mul is not supported" in r.detail
    report = run_all({k: v for k, v in TABLE.items() if k != "Relu"}, cases(("test_relu", "test_add_bcast")))
    assert report.missing() == {"Relu": 1} and len(report.by("passed")) == 1


def every_fourth_and_each_op(cases) -> list:
    """Every fourth case, and the first case of any operator those miss: no supported op goes uncompiled."""
    ops = lambda c: {n.op_type for n in c.model.graph.node} if c.model is not None else set()  # noqa: E731
    picked = list(cases[::4])
    seen = set().union(*(ops(c) for c in picked))
    for c in cases:
        if not ops(c) <= seen:
            picked.append(c)
            seen |= ops(c)
    return sorted(picked, key=lambda c: c.name)


@pytest.mark.slow
@pytest.mark.parametrize("executor", ["reference", "compiled"])
def test_node_conformance(capsys, executor):
    if not SUPPORT:
        pytest.skip("the support table (ops_*.py) is empty on this branch: nothing to run")
    for name, why in XFAIL.items():
        assert why, f"XFAIL entry {name} needs a reason"
    run = {"reference": reference, "compiled": compiled}[executor]
    cases = node_cases()
    if executor == "compiled" and os.environ.get("ANSORC_CONFORMANCE") != "full":
        cases = every_fourth_and_each_op(cases)
    report = run_all(SUPPORT, cases, executor=functools.partial(run, table=SUPPORT))
    with capsys.disabled():
        print("\n" + report.text())
    unexpected = [r for r in report.by("failed") if r.name not in XFAIL]
    assert not unexpected, "\n".join(f"{r.name}: {r.detail}" for r in unexpected)
