"""Issue 53: dot-product tiles that do not align with the instruction (codegen/dot.py, ir/passes/dot.py) still
run the instruction, bit-exact: K not a multiple of the group (K < G too: the broadcast group zero-padded), N
not a multiple of the lanes (the last column tile widened into its accumulator rows' padding, or a guard on
the lane dropped where it only bounds that row). Memory safety: every program passes the verifier
(ir/passes/verify.py, as under ANSORC_VERIFY=1) and runs clean under ASAN/UBSAN, which see a stack
accumulator's overrun."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import ansorc
from ansorc import workloads
from ansorc.codegen.c import lower_for_target
from ansorc.codegen.target import host_isas
from ansorc.ir.lowering.lower import lower
from ansorc.ir.passes.verify import verify
from ansorc.ir.program.dag import ComputeDAG
from ansorc.search.default_schedule import default_cpu_schedule
from tests.cpu.test_dot_kernels import _matmul_inputs

pytestmark = [pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc"),
              pytest.mark.skipif("avx2" not in host_isas(), reason="no AVX2 on this machine")]
KS = (1, 3, 5, 37, 63, 67)
NS = (3, 13, 37)       # none a multiple of AVX2's 8 lanes: 3 and 13 in one tile, 37 in a peeled last tile


def _per_lane(source: str) -> int:
    """Element-wise products of the grouped copy left in the kernel: the fallback the instruction replaces."""
    return source[source.index("int kernel("):].count("(int32_t)(B_local[")


@pytest.mark.parametrize("k", KS)
@pytest.mark.parametrize("n", NS)
def test_misaligned_k_and_n_run_the_instruction_bit_exact(k, n):
    m = 7
    dag = ComputeDAG(workloads.matmul_u8s8(m, n, k))
    state = default_cpu_schedule(dag, "avx2")
    verify(lower_for_target(lower(state, "kernel"), "avx2"), after="test")   # what ANSORC_VERIFY=1 runs
    kern = ansorc.build(dag, state, target="avx2")
    assert "ansorc_dot_" in kern.source and _per_lane(kern.source) == 0   # N = 3: SSSE3's 4 lanes
    a, b, want = _matmul_inputs(m, n, k)
    np.testing.assert_array_equal(np.asarray(kern(ansorc.array(a), ansorc.array(b))), want)


@pytest.mark.parametrize("m, n, k", [(5, 37, 67), (3, 13, 3), (4, 5, 1), (6, 45, 37)])
def test_misaligned_tiles_run_clean_under_asan_and_ubsan(m, n, k):
    from ansorc.measure.sanitize import SanitizerUnavailable, run_sanitized
    dag = ComputeDAG(workloads.matmul_u8s8(m, n, k))
    src = ansorc.generate_source(dag, default_cpu_schedule(dag, "native"), "kernel")
    a, b, want = _matmul_inputs(m, n, k, seed=5)
    try:
        run = run_sanitized(src, [a, b])
    except SanitizerUnavailable as e:
        pytest.skip(str(e))
    assert run.report == ""
    np.testing.assert_array_equal(run.outputs[0], want)


def test_a_widened_tile_pads_only_the_accumulator_rows():
    """The last column tile's accumulator gets row padding for the whole vector; the output is untouched."""
    dag = ComputeDAG(workloads.matmul_u8s8(13, 37, 67))
    func = lower_for_target(lower(default_cpu_schedule(dag, "avx2"), "kernel"), "avx2")
    from ansorc.ir.lowering.stmt import Allocate, walk_stmt
    pads = {s.buffer.name: s.buffer.row_pad for s in walk_stmt(func.body) if isinstance(s, Allocate)}
    assert any(p for name, p in pads.items() if name.startswith("C_local")), pads
    assert all(b.row_pad == 0 for b in func.args)
