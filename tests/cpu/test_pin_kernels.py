"""Kernels with pinned operands (ir/pin.py, AVX2) compute what numpy computes, with gcc and clang."""
import numpy as np
import pytest

import ansorc
from ansorc import workloads
from ansorc.codegen.target import host_isas
from ansorc.ir.evaluate import evaluate, random_inputs
from ansorc.search.default_schedule import default_cpu_schedule
from tests.unit.test_pin import PIN, _tile

from .compilers import COMPILERS

pytestmark = pytest.mark.skipif("avx2" not in host_isas(), reason="this CPU cannot run avx2 kernels")

CASES = {"tile 4x2": lambda: _tile(4, 2), "tile 7x2": lambda: _tile(7, 2, n=63),
         "CAP 8x8x32": lambda: _default(workloads.make("CAP", 1)),
         "C1D, 38 outputs": lambda: _default(workloads.c1d(1, 38, 64, 64, 3, 1, 1))}


def _default(tensors):
    return tensors, default_cpu_schedule(ansorc.ComputeDAG(tensors), target="avx2")


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
