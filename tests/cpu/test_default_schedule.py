"""The default schedule of untuned tasks (search/default_schedule.py): valid, deterministic, correct when built,
on every benchmark workload, on random te programs and on fused groups of a network (which the search tunes)."""
import functools
import random

import pytest

import ansorc
from ansorc import te, workloads
from ansorc.errors import AnsorcError
from ansorc.ir.schedule.state import replay
from ansorc.ir.schedule.steps import steps_to_json
from ansorc.net.fuse import fuse
from ansorc.net.network import group_dag
from ansorc.search.default_schedule import default_cpu_schedule
from ansorc.search.task import HardwareParams
from ansorc.search.tuning import tune_options
from tests.cpu.fuzz_programs import Chooser, random_program
from tests.unit.net_graphs import conv_block, matmul, network, relu, resnet_block, softmax, weight

from .helpers import check_kernel


def annotations(state, kind: str) -> list:
    return [(s.name, it.name) for s in state.stages for it in s.iters if it.annotation == kind]


@pytest.mark.parametrize("name", sorted(workloads.WORKLOADS))
def test_default_schedule_of_every_workload_builds_and_matches(name):
    tensors = workloads.smallest(name)
    dag = ansorc.ComputeDAG(tensors)
    state = default_cpu_schedule(dag)
    assert state.is_complete
    assert steps_to_json(replay(dag, state.steps).steps) == steps_to_json(state.steps)  # replays from its steps
    assert steps_to_json(default_cpu_schedule(ansorc.ComputeDAG(workloads.smallest(name))).steps) == \
        steps_to_json(state.steps)                                                   # deterministic
    check_kernel(tensors, state, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("n", [197, 61])
def test_a_prime_vector_extent_gets_a_register_tile_with_a_guarded_last_one(n):
    # attention's scores over 197 tokens (ViT): no vector tile divides 197, and the untiled loop ran at 4 GFLOP/s
    a, b = te.placeholder((3, n, 64), name="a"), te.placeholder((3, 64, n), name="b")
    k = te.reduce_axis((0, 64), name="k")
    c = te.compute((3, n, n), lambda h, i, j: te.sum(a[h, i, k] * b[h, k, j], axis=k), name="c")
    state = default_cpu_schedule(ansorc.ComputeDAG([a, b, c]), "avx2")
    assert state.has_stage("c.local") and ("c.local", "j.1") in annotations(state, "vectorize")
    assert state.stage("c.local").iter("j.1").extent == 16    # 13 tiles of two vectors, the last one guarded
    check_kernel([a, b, c], state, rtol=1e-4, atol=1e-3)


def test_a_vector_tile_is_whole_vectors_where_they_divide_the_axis():
    # RegNet's grouped 3x3 conv over 104 channels (NHWC, groups of 8): 13 lanes left 5 of every tile scalar
    tensors = workloads.matmul(64, 104, 32)
    state = default_cpu_schedule(ansorc.ComputeDAG(tensors), "avx2")
    assert state.stage("C.local").iter("j.1").extent == 8
    check_kernel(tensors, state, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("n, lanes", [(440, 32), (104, 16)])
def test_a_guarded_tile_of_whole_vectors_beats_a_divisor_of_fewer_busy_lanes(n, lanes):
    # RegNetY's 440 and 104 channels on AVX-512: 22 (one vector and 6 lanes) and 26 lanes divide them, but leave
    # 31% and 19% of every tile's lanes idle; guarded tiles of whole vectors leave 2% and 7%, on the last tile
    tensors = workloads.matmul(49, n, 64)
    state = default_cpu_schedule(ansorc.ComputeDAG(tensors), "avx512")
    assert state.stage("C.local").iter("j.1").extent == lanes
    check_kernel(tensors, state, rtol=1e-4, atol=1e-3)


def test_matmul_is_parallel_vectorized_and_register_tiled():
    tensors = workloads.make("GMM", 2)     # 512^3: a 512 x 32 panel of B is 64 KB, so it is blocked and packed
    state = default_cpu_schedule(ansorc.ComputeDAG(tensors), hw=HardwareParams(num_cores=2, vector_bytes=64))
    assert state.has_stage("C.local")                       # the register tile accumulates in a local block
    # 16 panels of 32 columns x 4 blocks of 128 rows, panels outermost: A and B are of one size, and a thread's
    # consecutive blocks then share B's panel, of which a tile reads a vector tile per step (of A a few elements)
    assert annotations(state, "parallel") == [("C", "b@j.0@i.0")]
    assert ("C.local", "j.1") in annotations(state, "vectorize")
    # per block of 256 steps of k (k.0), the 16 row tiles (i.1) sweep it in turn, each accumulating 8 rows x 32
    # columns (i.2, j.1: the vector loop innermost) in registers
    names = [it.name for it in state.stage("C.local").iters]
    assert names[-1] == "j.1" and names.index("k.0") < names.index("i.1") < names.index("k.1") < names.index("i.2")
    assert state.stage("C.local").iter("i.2").extent == 8 and state.stage("C.local").iter("k.1").extent == 256
    # B's slice for a block is copied to a contiguous buffer there, vectorized
    pack = state.stage("B.local")
    assert pack.attach == ("C.local", "k.0")
    assert ("B.local", pack.iters[-1].name) in annotations(state, "vectorize")
    check_kernel(tensors, state, rtol=1e-4, atol=1e-3)
    check_kernel(workloads.matmul(64, 48, 40), default_cpu_schedule(ansorc.ComputeDAG(workloads.matmul(64, 48, 40))))


def test_a_padded_conv_with_a_large_panel_is_blocked_and_packed_and_correct():
    tensors = workloads.c2d(1, 16, 32, 64, 64, 3, 1, 1)   # 576 x 32 floats of weights per tile: 72 KB
    state = default_cpu_schedule(ansorc.ComputeDAG(tensors), hw=HardwareParams(num_cores=2, vector_bytes=64))
    [pack] = [st.name for st in state.stages if st.name.endswith(".local") and st.op.reduce_axes == ()]
    assert state.stage(pack).attach[0].endswith(".local")
    check_kernel(tensors, state, rtol=1e-4, atol=1e-3)


def test_weights_re_read_by_many_row_blocks_are_read_from_a_blocked_copy():
    # 8 x 16 x 16 outputs in blocks of <= 128 rows: each 32-column block of the 3x3x3 weights is swept by 16 row
    # blocks, so the kernel reads a copy blocked by the tile, [co // 32, kd, kh, kw, ci, co % 32], made once per call
    tensors = workloads.c3d(1, 8, 16, 16, 16, 64, 3, 1, 1)
    hw = HardwareParams(num_cores=2, vector_bytes=64)
    state = default_cpu_schedule(ansorc.ComputeDAG(tensors), hw=hw)
    copy = state.stage("kernel.local")
    assert copy.compute_at == "root" and copy.op.shape == (2, 3, 3, 3, 16, 32)
    assert [s.block for s in state.steps if type(s).__name__ == "CacheRead"] == [32]    # and no per-block pack
    assert ("kernel.local", copy.iters[-1].name) in annotations(state, "vectorize")
    assert [a for s, a in annotations(state, "parallel") if s == "kernel.local"]
    check_kernel(tensors, state, rtol=1e-4, atol=1e-3)
    # few row blocks (one 16 x 16 plane in 2 blocks): the strided panel is packed per block step instead
    few = default_cpu_schedule(ansorc.ComputeDAG(workloads.c3d(1, 1, 16, 16, 16, 64, 3, 1, 1)), hw=hw)
    assert [s.block for s in few.steps if type(s).__name__ == "CacheRead"] == [0]


@pytest.mark.parametrize("co", [3, 2])
def test_rows_too_short_for_a_vector_vectorize_the_contiguous_reduction(co):
    # T2D to 3 (or 2) output channels: no vector fits the output rows, so the vector runs along the input
    # channels (64), split by a vector whose partial sums conv_phases.rf keeps per output, in a register tile of
    # every channel by as many output columns as fit, and sums once; the weights (kh, kw, ci, co) are read from a
    # copy with co moved to the front, where ci is contiguous
    tensors = workloads.t2d(1, 8, 8, 64, co, 4, 2, 1)
    state = default_cpu_schedule(ansorc.ComputeDAG(tensors), hw=HardwareParams(num_cores=2, vector_bytes=64))
    assert state.stage("conv_phases.rf").attach[0] == "conv_phases"
    assert {("conv_phases.rf", "rc.1.v"), ("conv_phases", "rc.1.v")} <= set(annotations(state, "vectorize"))
    assert ("conv_phases", "rc", (16,)) in [(s.stage, s.iter, s.lengths) for s in state.steps
                                            if type(s).__name__ == "Split"]
    assert [s.block for s in state.steps if type(s).__name__ == "CacheRead"] == [1]
    assert state.stage("kernel.local").op.shape == (co, 4, 4, 64, 1)
    check_kernel(tensors, state, rtol=1e-4, atol=1e-3)
    # AVX2 (16 registers): 12 accumulators, the output columns (qw, 16 per phase) split by 12 // co
    avx2 = HardwareParams(num_cores=2, vector_bytes=32, vector_registers=16)
    tensors = workloads.t2d(1, 16, 16, 32, co, 4, 2, 1)
    state = default_cpu_schedule(ansorc.ComputeDAG(tensors), hw=avx2)
    splits = {(s.stage, s.iter): s.lengths for s in state.steps if type(s).__name__ == "Split"}
    assert splits[("conv_phases", "qw")] == (4,) and splits[("conv_phases", "rc")] == (8,)
    assert state.stage("conv_phases.rf").attach == ("conv_phases", "qw.0")
    check_kernel(tensors, state, rtol=1e-4, atol=1e-3)


def test_a_short_row_reduction_read_contiguously_needs_no_copy():
    a = te.placeholder((40, 96), "float32", "a")
    b = te.placeholder((3, 96), "float32", "b")
    k = te.reduce_axis((0, 96), "k")
    c = te.compute((40, 3), lambda i, j: te.sum(a[i, k] * b[j, k], axis=k), name="c")
    state = default_cpu_schedule(ansorc.ComputeDAG([a, b, c]), hw=HardwareParams(num_cores=2, vector_bytes=64))
    assert state.has_stage("c.rf") and not [s for s in state.steps if type(s).__name__ == "CacheRead"]
    check_kernel([a, b, c], state, rtol=1e-4, atol=1e-3)
    w = te.placeholder((96, 3), "float32", "w")     # read twice along k, k second to last: one copy serves both
    d = te.compute((40, 3), lambda i, j: te.sum(a[i, k] * w[k, j] + w[k, j] * 2.0, axis=k), name="d")
    state = default_cpu_schedule(ansorc.ComputeDAG([a, w, d]), hw=HardwareParams(num_cores=2, vector_bytes=64))
    assert [st.name for st in state.stages] == ["w.local", "d.rf", "d"]
    check_kernel([a, w, d], state, rtol=1e-4, atol=1e-3)


def test_tile_rows_run_along_an_axis_the_weights_do_not_use():
    # a capsule conv's output is (n, h, w, cap_i, cap_j, co) and its weights (rh, rw, k, cap_j, rc, co): rows of
    # cap_j would each need their own weight vectors, so the tile's rows are output columns (w, 8 of them)
    tensors = workloads.cap(1, 8, 8, 16, 16, 3, 1, 1)
    state = default_cpu_schedule(ansorc.ComputeDAG(tensors), hw=HardwareParams(num_cores=2, vector_bytes=64))
    tile = [s for s in state.steps if type(s).__name__ == "Split" and s.stage == "conv.local" and s.iter == "w"]
    assert tile and tile[-1].lengths[-1] == 8
    check_kernel(tensors, state, rtol=1e-4, atol=1e-3)


def test_a_deep_7x7_conv_stacks_whole_rows_of_the_next_axis_into_a_block():
    tensors = workloads.c2d(1, 7, 7, 128, 256, 3, 1, 1)   # w (7) is one tile: the block takes all 7 rows of h too
    state = default_cpu_schedule(ansorc.ComputeDAG(tensors), hw=HardwareParams(num_cores=2, vector_bytes=64))
    [local] = [st for st in state.stages if st.op.reduce_axes]
    names = [it.name for it in local.iters]
    assert local.iter("h.1").extent == 7 and names.index("h.1") < names.index("w.1") < names.index("w.2")
    check_kernel(tensors, state, rtol=1e-4, atol=1e-3)


def test_a_prime_reduction_is_swept_whole_and_its_panel_not_copied():
    tensors = workloads.matmul(64, 64, 1021)   # no slice of 64-256 steps divides 1021: no sweep loop to pack at
    state = default_cpu_schedule(ansorc.ComputeDAG(tensors), hw=HardwareParams(num_cores=2, vector_bytes=64))
    names = [it.name for it in state.stage("C.local").iters]
    assert not state.has_stage("B.local") and names.index("i.1") < names.index("k") < names.index("i.2")
    check_kernel(tensors, state, rtol=1e-4, atol=1e-3)


def test_a_small_panel_is_neither_blocked_nor_packed():
    tensors = workloads.matmul(256, 256, 128)   # 128 x 32 floats of B: 16 KB, in L1 anyway
    state = default_cpu_schedule(ansorc.ComputeDAG(tensors), hw=HardwareParams(num_cores=2, vector_bytes=64))
    names = [it.name for it in state.stage("C.local").iters]
    assert not state.has_stage("B.local") and names[-3:] == ["k", "i.1", "j.1"]
    check_kernel(tensors, state, rtol=1e-4, atol=1e-3)


AVX2 = HardwareParams(num_cores=2, vector_bytes=32, vector_registers=16)


def tile_rows(state, stage: str, axis: str) -> int:
    """The innermost split factor of `axis`, or its whole extent when it is not split."""
    splits = [s for s in state.steps if type(s).__name__ == "Split" and s.stage == stage and s.iter == axis]
    return splits[0].lengths[-1] if splits else state.stage(stage).iter(axis).extent


def test_sixteen_registers_take_a_tile_of_twelve_accumulators():
    # AVX2: 6 rows x 2 vectors (12 accumulators, 4 registers for the operands), not 4 x 2; 1024 rows have no
    # divisor 6, so blocks of 19 tiles overlap the last one and the tile itself is never guarded
    tensors = workloads.matmul(1024, 64, 256)
    state = default_cpu_schedule(ansorc.ComputeDAG(tensors), hw=AVX2)
    assert tile_rows(state, "C.local", "i") == 6 and tile_rows(state, "C.local", "j") == 16
    check_kernel(tensors, state, rtol=1e-4, atol=1e-3)
    # AVX-512 keeps 16 accumulators of its 32 registers: 8 x 2 vectors
    state = default_cpu_schedule(ansorc.ComputeDAG(tensors), hw=HardwareParams(num_cores=2, vector_bytes=64))
    assert tile_rows(state, "C.local", "i") == 8


def test_a_row_block_keeps_its_slice_of_a_within_half_of_l2():
    # GMM 1024: a block of 19 tiles (114 rows) reads 456 KB of A over the reduction; at most 256 KB: 9 tiles
    tensors = workloads.matmul(1024, 64, 1024)
    state = default_cpu_schedule(ansorc.ComputeDAG(tensors), hw=AVX2)
    [split] = [s for s in state.steps if type(s).__name__ == "Split" and s.stage == "C.local" and s.iter == "i"]
    assert split.lengths == (9, 6) and 9 * 6 * 1024 * 4 <= 256 << 10
    check_kernel(tensors, state, rtol=1e-4, atol=1e-3)


def test_a_tile_that_would_be_guarded_inside_its_block_takes_a_divisor():
    # 64 output columns in one row block: 6-row tiles would leave the last one guarded in the reduction loop
    # (its accumulators then stay in memory); 4 rows divide 64
    tensors = workloads.c1d(1, 64, 256, 256, 5, 1, 2)
    state = default_cpu_schedule(ansorc.ComputeDAG(tensors), hw=AVX2)
    assert tile_rows(state, "conv.local", "l") == 4
    check_kernel(tensors, state, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("ci, rows", [(64, 7), (3, 4)])
def test_seven_wide_rows_stretch_the_tile_unless_the_reduction_is_shorter_than_a_vector(ci, rows):
    # 7 output columns: 6-row tiles do not divide them; 7 x 2 vectors (14 accumulators) do, the FMAs reading the
    # weights from memory; but 3 input channels unroll into the tap loop and keep the weights in registers
    tensors = workloads.c2d(1, 7, 7, ci, 32, 3, 1, 1)
    state = default_cpu_schedule(ansorc.ComputeDAG(tensors), hw=AVX2)
    assert tile_rows(state, "conv.local", "w") == rows
    check_kernel(tensors, state, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("n, packed", [(512, True), (32, False)])
def test_a_small_panel_whose_rows_share_l1_sets_is_packed(n, packed):
    # 512 x 16 floats of B is 32 KB: small, but with rows 2 KB apart they map to two L1 sets; 128 B apart they
    # spread over all
    tensors = workloads.matmul(64, n, 512)
    state = default_cpu_schedule(ansorc.ComputeDAG(tensors), hw=AVX2)
    assert state.has_stage("B.local") == packed
    check_kernel(tensors, state, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("ci", [8, 256])   # a small panel (one tile) and a large one (blocked and packed)
def test_a_prime_row_extent_gets_a_full_tile_and_a_guarded_last_one(ci):
    tensors = workloads.c2d(1, 11, 11, ci, 32, 3, 1, 1)   # 11 output columns: no divisor between 5 and 8
    state = default_cpu_schedule(ansorc.ComputeDAG(tensors))
    splits = [s for s in state.steps if type(s).__name__ == "Split" and s.stage == "conv.local" and s.iter == "w"]
    assert splits and splits[0].lengths[-1] == 6              # 6 + 5 rows: 1 of 12 idle
    check_kernel(tensors, state, rtol=1e-4, atol=1e-3)


def test_few_cores_fuse_fewer_loops_and_short_loops_are_not_split():
    tensors = workloads.make("C2D", 1)     # 1 x 56 x 56 x 64 -> 64, 1x1
    dag = ansorc.ComputeDAG(tensors)
    one = default_cpu_schedule(dag, hw=HardwareParams(num_cores=1, vector_bytes=64))
    many = default_cpu_schedule(dag, hw=HardwareParams(num_cores=64, vector_bytes=64))
    [(_, p1)], [(_, p64)] = annotations(one, "parallel"), annotations(many, "parallel")
    assert p1.count("@") < p64.count("@")
    elementwise = workloads.sfm(4, 8)
    state = default_cpu_schedule(ansorc.ComputeDAG(elementwise), hw=HardwareParams(vector_bytes=64))
    assert ("softmax", "j") in annotations(state, "vectorize")          # 8 lanes: vectorized whole, not split


def test_a_gpu_target_is_refused_in_one_line():
    with pytest.raises(ansorc.ScheduleError, match="GPU target"):
        default_cpu_schedule(ansorc.ComputeDAG(workloads.matmul(8, 8, 8)), "cuda")


@pytest.mark.parametrize("isa", ["avx2", "avx512", "neon"])   # a 64-wide row is 4 vectors on AVX-512, 8 on AVX2
def test_gathers_across_rows_are_not_vectorized(isa):
    tensors = workloads.sfm(64, 64)      # row_max reads A[i, k]: a vector over i would gather down a column
    state = default_cpu_schedule(ansorc.ComputeDAG(tensors), isa)   # the schedule, built for this machine
    vectors = annotations(state, "vectorize")
    assert not [a for a in vectors if a[0] in ("row_max", "row_sum") and a[1] == "i"]
    assert ("row_max.rf", "k.1.v") in vectors        # along the row instead (row_fused)
    check_kernel(tensors, state, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape, perm", [((128, 12, 64), (1, 2, 0)),   # TBG's key transpose (per batch)
                                         ((48, 40), (1, 0)),           # vector 16 and tile 8 of 40
                                         ((7, 5, 33), (2, 0, 1)),      # a 5-lane vector (4 + 1 pieces)
                                         ((7, 3, 33), (2, 0, 1)),      # the write axis (3) too short
                                         ((3, 64, 30), (0, 2, 1))])
def test_a_transposing_copy_is_tiled_by_both_axes_and_correct(shape, perm):
    A = te.placeholder(shape, "float32", "A")
    out = tuple(shape[p] for p in perm)
    inv = [perm.index(k) for k in range(len(shape))]
    T = te.compute(out, lambda *ix: A[tuple(ix[inv[k]] for k in range(len(shape)))], name="T")
    state = default_cpu_schedule(ansorc.ComputeDAG([A, T]))
    w, r = T.op.axes[-1].name, T.op.axes[inv[-1]].name
    names = [it.name for it in state.stage("T").iters]
    if shape[perm[-1]] >= 4:
        assert names[-2:] == [f"{r}.1", f"{w}.1"] and ("T", f"{w}.1") in annotations(state, "vectorize")
    else:
        assert not any(n.endswith(".1") for n in names)   # no vector factor: the plain copy
    check_kernel([A, T], state, rtol=0, atol=0)


@functools.lru_cache(maxsize=None)
def _random_programs(count: int, tiled: bool) -> tuple:
    """The first `count` valid random programs whose default schedule is (or is not) register-tiled."""
    found, seed = [], 0
    while len(found) < count:
        seed += 1
        try:
            tensors = random_program(Chooser(random.Random(seed)))
        except AnsorcError:
            continue            # out-of-bounds programs are refused by te.compute: not this test's subject
        state = default_cpu_schedule(ansorc.ComputeDAG(tensors))
        if any(s.name.endswith(".local") for s in state.stages) == tiled:
            found.append((tensors, state))
    return tuple(found)


@pytest.mark.parametrize("tiled", [True, False])
@pytest.mark.parametrize("index", range(6))
def test_default_schedule_of_random_programs_matches_the_evaluator(index, tiled):
    tensors, state = _random_programs(6, tiled)[index]
    check_kernel(tensors, state, rtol=1e-4, atol=1e-4)


def _model():
    weights = {}
    x = ansorc.te.placeholder((1, 8, 10, 10), name="x")
    y = resnet_block(conv_block(x, 8, weights, "stem"), weights, "r1")
    flat = ansorc.te.compute((1, 800), lambda n, j: y[n, j // 100, (j // 10) % 10, j % 10], name="flat")
    w = weight((800, 16), "fc_w", weights)
    return network([x], [softmax(relu(matmul(flat, w, "fc"), "fc_relu"), "prob")], weights)


def test_default_schedule_of_every_fused_group_builds_and_matches():
    net = _model()
    groups = fuse(net)
    assert len(groups) >= 4
    for g in groups:
        dag = group_dag(net, g)
        check_kernel(list(dag.tensors), default_cpu_schedule(dag), rtol=1e-4, atol=1e-4, name=g.name)


@pytest.mark.slow
def test_the_search_tunes_a_fused_group(tmp_path):
    """A conv group (pad, conv, bias, residual add, relu) is a task the sketch rules and the tuner handle."""
    net = _model()
    [g] = [g for g in fuse(net) if "r1_add" in g.ops]
    dag = group_dag(net, g)
    res = ansorc.tune(list(dag.tensors), trials=6, log=str(tmp_path / "log.json"),
                      options=tune_options(per_round=6, retime_top=0, progress=False))
    assert res.best_state is not None and res.best_seconds > 0
    check_kernel(list(dag.tensors), res.best_state, rtol=1e-4, atol=1e-4)


def test_a_copy_that_only_permutes_rows_is_inlined_and_a_transpose_is_kept():
    # TBG: query_T (b, h, i, d) <- query (b, i, h, d) keeps d last, so the scores read the query in place;
    # key_T (b, h, d, j) <- key (b, j, h, d) moves d and is made, tiled by both axes
    tensors = workloads.tbg(1, 16, 2, 32)
    state = default_cpu_schedule(ansorc.ComputeDAG(tensors), hw=AVX2)
    attach = {s.name: s.compute_at for s in state.stages}
    assert attach["query_T"] == "inline" and attach["key_T"] == "root"
    check_kernel(tensors, state, rtol=1e-4, atol=1e-3)


def test_a_softmax_is_computed_row_by_row_in_one_parallel_loop():
    # max, exp, sum and divide inside the output's parallel row loop, each row reduction factored into vector
    # accumulators: no intermediate makes a round trip through memory
    tensors = workloads.sfm(64, 256)
    state = default_cpu_schedule(ansorc.ComputeDAG(tensors), hw=AVX2)
    assert annotations(state, "parallel") == [("softmax", "i")]
    attached = {s.name for s in state.stages if s.compute_at == "attached"}
    assert attached == {"row_max.rf", "row_max", "exp", "row_sum.rf", "row_sum"}
    assert {(s, "k.1.v") for s in ("row_max.rf", "row_sum.rf")} <= set(annotations(state, "vectorize"))
    check_kernel(tensors, state, rtol=1e-5, atol=1e-6)


def test_rows_too_long_for_l1_are_not_fused():
    tensors = workloads.sfm(4, 8192)     # 32 KB of exp per row
    state = default_cpu_schedule(ansorc.ComputeDAG(tensors), hw=AVX2)
    assert not any(s.compute_at == "attached" for s in state.stages)
    check_kernel(tensors, state, rtol=1e-5, atol=1e-6)


def test_a_zero_padding_read_only_over_its_window_is_inlined_tagged_or_not():
    # ansorc.workloads writes its padding as a plain select against 0 (no "pad" tag, as the ONNX importer gives):
    # a depthwise conv or a pool, whose reduce axes index the input only beside an output axis, reads it inlined
    hw = HardwareParams(num_cores=2, vector_bytes=32, vector_registers=16)
    dep = workloads.dep(1, 14, 14, 32, 3, 1, 1)
    assert default_cpu_schedule(ansorc.ComputeDAG(dep), hw=hw).stage("pad").compute_at == "inline"
    check_kernel(dep, default_cpu_schedule(ansorc.ComputeDAG(dep), hw=hw), rtol=1e-4, atol=1e-4)
    # a 1-D conv has two reduce axes too, but one sums the channels (read alone in its subscript): a padded copy
    c1d = workloads.c1d(1, 32, 16, 16, 3, 1, 1)
    assert default_cpu_schedule(ansorc.ComputeDAG(c1d), hw=hw).stage("pad").compute_at != "inline"
    # a select against a nonzero value is not a zero padding
    a = te.placeholder((1, 8, 8, 4), "float32", "a")
    p = te.compute((1, 10, 10, 4), lambda n, h, w, c: te.if_then_else(
        te.all(h >= 1, h < 9, w >= 1, w < 9), a[n, h - 1, w - 1, c], te.const(1.0, "float32")), name="p")
    rh, rw = te.reduce_axis((0, 3), "rh"), te.reduce_axis((0, 3), "rw")
    o = te.compute((1, 8, 8, 4), lambda n, h, w, c: te.sum(p[n, h + rh, w + rw, c], axis=[rh, rw]), name="o")
    assert default_cpu_schedule(ansorc.ComputeDAG([a, o]), hw=hw).stage("p").compute_at != "inline"


def test_a_reduction_to_one_value_computes_partial_rows_in_parallel():
    # a norm of a whole matrix: the outer reduce axis is factored out, its rows summed in parallel, each a vector
    # reduction, and folded by one vector loop (before: one scalar chain on one core, 8-16x slower)
    tensors = workloads.nrm(1, 64, 256)
    state = default_cpu_schedule(ansorc.ComputeDAG(tensors), hw=AVX2)
    assert annotations(state, "parallel") == [("sq_sum.rf", "b@i.v")]
    assert {("sq_sum.rf", "j"), ("sq_sum", "i.v")} <= set(annotations(state, "vectorize"))
    check_kernel(tensors, state, rtol=1e-5, atol=1e-4)
    # a single reduce axis is split into chunks first, a max as a sum; enough outputs keep their parallel loop
    a = te.placeholder((2, 1 << 14), "float32", "a")
    k = te.reduce_axis((0, 1 << 14), "k")
    m = te.compute((2,), lambda i: te.max(a[i, k], axis=k), name="m")
    state = default_cpu_schedule(ansorc.ComputeDAG([a, m]), hw=AVX2)
    assert annotations(state, "parallel") == [("m.rf", "i@k.0.v")] and state.stage("m.rf").iter("k.1").extent == 1024
    check_kernel([a, m], state, rtol=0, atol=0)
    many = te.compute((64,), lambda i: te.sum(a[i % 2, k], axis=k), name="many")
    assert not default_cpu_schedule(ansorc.ComputeDAG([a, many]), hw=AVX2).has_stage("many.rf")


@pytest.mark.parametrize("make", [workloads.c2d, workloads.dil])
def test_taps_past_a_7_wide_tile_are_written_out_with_their_columns(make):
    # a 7 x 7 conv's register tile is a whole output row: the 3 column taps are written out, the first and last
    # with a tile one column shorter (the column that would read the zero padding); same results
    from ansorc.codegen.pipeline import render
    tensors = make(1, 7, 7, 32, 32, 3, 1, 1)
    dag = ansorc.ComputeDAG(tensors)
    state = default_cpu_schedule(dag, hw=AVX2)
    code = render(dag, state, "k", "avx2").code
    assert "conv_local_rw" not in code and "fmadd" in code
    check_kernel(tensors, state, rtol=1e-4, atol=1e-3)
