"""Kernels whose padded input copy is stored with the row_pad pragma (ir/lowering/layout.py) compute what the reference
does and write nothing outside their outputs: a 2-D conv over 512 channels (columns 2 KB apart) and a 3-D conv
over 256 (rows 8 KB apart), each under its default program with the pragma added."""
import pytest

import ansorc
from ansorc import workloads
from ansorc.ir.schedule.steps import Pragma
from ansorc.search.default_schedule import default_cpu_schedule
from ansorc.search.task import HardwareParams

from .helpers import check_kernel

AVX2 = HardwareParams(num_cores=2, vector_bytes=32, vector_registers=16)


@pytest.mark.parametrize("tensors", [workloads.c2d(1, 5, 5, 512, 16, 3, 1, 1),
                                     workloads.c3d(1, 4, 6, 6, 256, 16, 3, 1, 1)], ids=["c2d", "c3d"])
def test_a_conv_reading_a_row_padded_copy_matches_the_reference(tensors):
    state = default_cpu_schedule(ansorc.ComputeDAG(tensors), hw=AVX2)
    assert state.stage("pad").compute_at == "root"
    state = state.apply(Pragma("pad", state.stage("pad").iters[0].name, "row_pad", 1))
    kern = check_kernel(tensors, state, rtol=1e-4, atol=1e-3)
    assert "528" in kern.source if tensors[0].shape[-1] == 512 else "272" in kern.source
