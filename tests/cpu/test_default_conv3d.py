"""The default schedule of 3-D convolutions (search/default_schedule.py): which axis the register tile takes, how
the weights are read, and that each built kernel computes the right thing."""
import ansorc
from ansorc import workloads
from ansorc.search import default_schedule as ds
from ansorc.search.default_schedule import default_cpu_schedule
from ansorc.search.task import HardwareParams

from .helpers import check_kernel
from .test_default_schedule import AVX2, tile_rows


def test_weights_larger_than_the_caches_are_blocked_for_few_re_reads(monkeypatch):
    # C3D 7x7x512's weights, unpadded (depth tiles: 7 row blocks): 27 MB re-read by 7 row blocks, 400 FLOPs per
    # byte of them: one blocked copy per call
    tensors = workloads.c3d(1, 18, 9, 9, 512, 512, 3, 1, 0)
    hw = HardwareParams(num_cores=2, vector_bytes=32, vector_registers=16)   # AVX2
    state = default_cpu_schedule(ansorc.ComputeDAG(tensors), hw=hw)
    assert [s.block for s in state.steps if type(s).__name__ == "CacheRead"] == [16]
    # the same weights, were they small enough for the caches, are packed per block step
    monkeypatch.setattr(ds, "LAYOUT_PANEL_BYTES", 1 << 30)
    small = default_cpu_schedule(ansorc.ComputeDAG(tensors), hw=hw)
    assert [s.block for s in small.steps if type(s).__name__ == "CacheRead"] == [0]
    # a small version of the shape takes the same path and computes the right thing
    monkeypatch.setattr(ds, "LAYOUT_PANEL_BYTES", 64 << 10)
    little = workloads.c3d(1, 18, 9, 9, 32, 32, 3, 1, 0)   # 108 KB of weights, 392 FLOPs per byte, 7 re-reads
    state = default_cpu_schedule(ansorc.ComputeDAG(little), hw=hw)
    assert [s.block for s in state.steps if type(s).__name__ == "CacheRead"] == [16]
    check_kernel(little, state, rtol=1e-4, atol=1e-3)


def test_a_short_innermost_reduction_sweeps_with_the_ones_outside_it():
    # the C3D stem reduces over 3 input channels innermost: its row tiles sweep rw x rc (21 steps) per block step
    # instead of loading and storing the register tile every 3 steps
    hw = HardwareParams(num_cores=2, vector_bytes=32, vector_registers=16)   # AVX2
    state = default_cpu_schedule(ansorc.ComputeDAG(workloads.make("C3D", 0)), hw=hw)
    names = [it.name for it in state.stage("conv.local").iters]
    assert names.index("rw") > names.index("w.1") and names.index("rc") > names.index("w.1"), names
    assert names.index("rh") < names.index("w.1"), names
    little = workloads.c3d(1, 4, 16, 16, 3, 16, 7, 2, 3)   # the stem's taps and channels at a small size
    state = default_cpu_schedule(ansorc.ComputeDAG(little), hw=hw)
    names = [it.name for it in state.stage("conv.local").iters]
    assert names.index("rw") > names.index("w.1"), names
    check_kernel(little, state, rtol=1e-4, atol=1e-3)


def test_seven_wide_rows_of_a_3d_conv_tile_its_depth_instead():
    # 7 output columns would need a stretched tile; the depth (8) gives 4-row tiles of 8 accumulators, whose
    # weights vectors stay in registers
    tensors = workloads.c3d(1, 10, 9, 9, 32, 32, 3, 1, 0)     # unpadded: 8 x 7 x 7 outputs
    state = default_cpu_schedule(ansorc.ComputeDAG(tensors), hw=AVX2)
    assert tile_rows(state, "conv.local", "d") == 4 and tile_rows(state, "conv.local", "co") == 16
    check_kernel(tensors, state, rtol=1e-4, atol=1e-3)


def test_seven_wide_padded_rows_of_a_3d_conv_keep_the_stretched_tile():
    # with taps on the padding, lowering writes the column taps out: the edge taps in 6-column tiles that fit the
    # registers, and a 7-column tile covers each whole row (16 deep: the weights' blocked copy is read in place)
    tensors = workloads.c3d(1, 16, 7, 7, 32, 32, 3, 1, 1)
    state = default_cpu_schedule(ansorc.ComputeDAG(tensors), hw=AVX2)
    assert tile_rows(state, "conv.local", "w") == 7 and tile_rows(state, "conv.local", "co") == 16
    source = ansorc.generate_source(tensors, state, target="avx2").code
    assert "conv_local_rw <" not in source and "conv_local_r0 =" in source   # taps written out, tiles pinned
    check_kernel(tensors, state, rtol=1e-4, atol=1e-3)
