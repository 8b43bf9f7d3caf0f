"""Kernels with pinned operands (ir/passes/pin.py, AVX2) compute what numpy computes, with gcc and clang; register names
stay apart from loop variables."""
import numpy as np
import pytest

import ansorc
from ansorc import workloads
from ansorc.codegen.target import host_isas
from ansorc.ir.program.evaluate import evaluate, random_inputs
from ansorc.search.default_schedule import default_cpu_schedule
from tests.unit.test_pin import PIN, _tile

from .compilers import COMPILERS


CASES = {"tile 4x2": lambda: _tile(4, 2), "tile 7x2": lambda: _tile(7, 2, n=63),
         "CAP 8x8x32": lambda: _default(workloads.make("CAP", 1)),
         "C1D, 38 outputs": lambda: _default(workloads.c1d(1, 38, 64, 64, 3, 1, 1))}


def _default(tensors):
    return tensors, default_cpu_schedule(ansorc.ComputeDAG(tensors), target="avx2")


@pytest.mark.skipif("avx2" not in host_isas(), reason="this CPU cannot run avx2 kernels")
@pytest.mark.parametrize("cc", COMPILERS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_pinned_kernel_matches_numpy(case, cc):
    tensors, schedule = CASES[case]()
    kern = ansorc.build(tensors, schedule, target="avx2", cc=cc)
    assert PIN in kern.source
    dag = ansorc.ComputeDAG(tensors)
    inputs = random_inputs(dag.inputs, 0)
    out = np.zeros(dag.outputs[-1].shape, np.float32)
    kern(*[inputs[t.name] for t in dag.inputs], out)
    np.testing.assert_allclose(out, evaluate(list(dag.outputs), inputs)[dag.outputs[-1].name], rtol=1e-4,
                               atol=1e-4)


def test_a_register_is_not_named_like_a_loop_variable():
    # the register of m's accumulator would be m_r0, the name of m's loop over its reduce axis r0: shadowed by
    # the loop variable, the sum read the index instead of the register (found on an ONNX softmax)
    from ansorc import te
    from tests.cpu.helpers import check_kernel
    a = te.placeholder((4, 6), "float32", "A")
    r0 = te.reduce_axis((0, 6), "r0")
    m = te.compute((4,), lambda i: te.max(a[i, r0], axis=r0), name="m")
    out = te.compute((4, 6), lambda i, j: a[i, j] - m[i], name="out")
    state = default_cpu_schedule(ansorc.ComputeDAG([a, out]))
    assert state.stage("m").compute_at == "attached"
    kern = check_kernel([a, out], state)
    assert "m_r0_1" in kern.source and "int32_t m_r0 = 0" in kern.source
