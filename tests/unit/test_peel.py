"""A pure stage's overrunning last tile is computed by a narrower copy (peel.py) instead of shifted back over the
tile before it: no point is computed twice, no min() is left in the full tiles' indices, every access stays
provably in bounds, and programs the peel does not fit are lowered as before."""
import ansorc
from ansorc import te
from ansorc.ir.program.expr import walk
from ansorc.ir.lowering.lower import lower
from ansorc.ir.lowering.peel import narrow_lengths, peel_candidates, peel_keys
from ansorc.ir.schedule.state import State, replay
from ansorc.ir.schedule.steps import (Annotate, CacheWrite, ComputeAt, ComputeInline, FollowSplit, Fuse, Reorder, Split)
from ansorc.ir.lowering.stmt import For, IfThenElse, store_executions, walk_stmt
from ansorc.ir.passes.verify import check_in_bounds
from tests.unit.test_shift_inward import relu, row_sums, stores, tiled_matmul


def loops(func) -> dict:
    return {s.var: s for s in walk_stmt(func.body) if isinstance(s, For)}


def no_min(func, buffer: str) -> bool:
    return all("min" not in repr(i) for s in stores(func, buffer) for i in s.indices)


def test_a_serial_tile_loop_runs_the_full_tiles_then_the_narrow_copy():
    state = relu(100).apply(Split("b", "i", (16,)))
    assert peel_candidates(state) == [("b", "i.0", "i.0", 0, (4,), 12 / 100)]
    f = lower(state)
    assert store_executions(f.body) == 100          # shifted: 7 tiles of 16 = 112
    assert loops(f)["b_i_0"].extent == 6 and loops(f)["b_i_1_tail"].extent == 4
    assert no_min(f, "b") and not any(isinstance(s, IfThenElse) for s in walk_stmt(f.body))
    check_in_bounds(f)


def test_a_parallel_tile_loop_runs_the_copy_as_its_last_iteration():
    f = lower(relu(100).apply(Split("b", "i", (16,))).apply(Annotate("b", "i.0", "parallel")))
    outer = loops(f)["b_i_0"]
    assert outer.kind == "parallel" and outer.extent == 7
    conds = sorted(repr(s.cond) for s in walk_stmt(outer.body) if isinstance(s, IfThenElse))
    assert conds == ["(b_i_0 < 6)", "(b_i_0 == 6)"]
    assert no_min(f, "b")
    check_in_bounds(f)


def test_a_register_tile_followed_by_its_copy_out_is_peeled_through_the_split_it_follows():
    # 130 rows in 6-row register tiles (c.local's split, which the copy c follows): the last tile is 4 rows
    _, state = tiled_matmul(130, 32)
    [(stage, tile, _, src, lengths, _)] = peel_candidates(state)
    assert (stage, tile, lengths) == ("c", "i.0", (4,)) and isinstance(state.steps[src], Split)
    f = lower(state)
    copies = stores(f, "c")
    assert no_min(f, "c") and len(copies) >= 2
    # the copy's accumulator tile has 4 rows: its local buffer is renamed and smaller
    tails = [s for s in walk_stmt(f.body) if hasattr(s, "buffer") and getattr(s.buffer, "name", "").endswith("_tail")]
    assert tails and tails[0].buffer.shape[0] == 4
    check_in_bounds(f)


def test_both_overrunning_splits_of_a_register_tile_are_peeled():
    # 130 rows in 6-row tiles and 40 columns in 16-column vector tiles: 3 x 2 = 6 versions of the tile
    _, state = tiled_matmul(130, 40, vectorize=True)
    assert peel_keys(state) == [("c", "i.0"), ("c", "j.0")]
    f = lower(state)
    assert no_min(f, "c")
    locals_ = {s.buffer.shape for s in walk_stmt(f.body) if hasattr(s, "buffer") and hasattr(s.buffer, "shape")}
    assert {(6, 16), (6, 8), (4, 16), (4, 8)} <= locals_
    check_in_bounds(f)


def test_programs_the_peel_does_not_fit_keep_their_form():
    assert not peel_candidates(relu(96).apply(Split("b", "i", (16,))))            # the split divides
    assert not peel_candidates(row_sums(100, 8).apply(Split("s", "i", (16,))))    # a reduction: guarded
    gpu = relu(100).apply(Split("b", "i", (32,))).apply(Annotate("b", "i.0", "blockIdx.x"))
    assert not peel_candidates(gpu)
    vector_tiles = relu(100).apply(Split("b", "i", (16,))).apply(Annotate("b", "i.0", "vectorize"))
    assert not peel_candidates(vector_tiles)


def test_a_split_followed_by_a_stage_outside_the_tile_is_not_peeled():
    # c.local stays a root stage: narrowing the split it shares with c would change a buffer computed outside
    # the tile loop
    _, state = tiled_matmul(130, 32)
    steps = [s for s in state.steps if type(s).__name__ != "ComputeAt"]
    root_local = replay(state.dag, steps)
    assert root_local.stage("c.local").compute_at == "root"
    assert not peel_candidates(root_local)
    assert any("min" in repr(n) for s in stores(lower(root_local), "c") for i in s.indices for n in walk(i))


def test_the_features_read_the_program_before_the_peel():
    state = relu(100).apply(Split("b", "i", (16,)))
    unpeeled = lower(state, passes=False)
    assert "b_i_1_tail" not in loops(unpeeled) and not no_min(unpeeled, "b")



def test_a_fused_parallel_loop_runs_the_copy_where_its_innermost_part_is_the_last_tile():
    # TBG's shape of loop: (row block, tile) fused and parallel, the tile index its innermost part
    a = te.placeholder((3, 100), "float32", "a")
    b = te.compute((3, 100), lambda r, i: te.max(a[r, i], 0.0), name="b")
    state = State.initial(ansorc.ComputeDAG([a, b]))
    for step in (Split("b", "i", (16,)), Fuse("b", ("r", "i.0")), Annotate("b", "r@i.0", "parallel")):
        state = state.apply(step)
    assert [c[:3] for c in peel_candidates(state)] == [("b", "i.0", "r@i.0")]
    f = lower(state)
    outer = loops(f)["b_r_i_0"]
    assert outer.kind == "parallel" and outer.extent == 21
    conds = sorted(repr(s.cond) for s in walk_stmt(outer.body) if isinstance(s, IfThenElse))
    assert conds == ["((b_r_i_0 % 7) < 6)", "((b_r_i_0 % 7) == 6)"]
    check_in_bounds(f)


def test_a_vector_tail_that_is_not_whole_vectors_keeps_the_shifted_tile():
    def vector_tiles(n):
        return relu(n).apply(Split("b", "i", (16,))).apply(Annotate("b", "i.1", "vectorize"))
    assert not peel_candidates(vector_tiles(99))          # a tail of 3 lanes would run scalar
    assert peel_candidates(vector_tiles(100))             # 4 lanes: a whole vector


def depthwise_relu6(width: int) -> State:
    """MobileNet-v2's 3x3 depthwise conv + bias + ReLU6 over a zero-padded input, as its untuned default program
    lays it out: 6-column register tiles computed at the ReLU6 copy's channel tile, the reduction versioned (a
    copy without the padding's selects where the tile's taps are all inside)."""
    x = te.placeholder((1, 8, width, 32), "float32", "x")
    k = te.placeholder((3, 3, 1, 32), "float32", "k")
    b = te.placeholder((32,), "float32", "b")
    pad = te.compute((1, 10, width + 2, 32), lambda n, i, j, c: te.if_then_else(
        te.all(i >= 1, i < 9, j >= 1, j < width + 1), x[n, i - 1, j - 1, c], 0.0), name="pad")
    rh, rw = te.reduce_axis((0, 3), "rh"), te.reduce_axis((0, 3), "rw")
    conv = te.compute((1, 8, width, 32), lambda n, i, j, c: te.sum(pad[n, i + rh, j + rw, c] * k[rh, rw, 0, c],
                                                                  axis=[rh, rw]), name="conv")
    bias = te.compute((1, 8, width, 32), lambda n, i, j, c: conv[n, i, j, c] + b[c], name="bias")
    out = te.compute((1, 8, width, 32), lambda n, i, j, c: te.min(te.max(bias[n, i, j, c], 0.0), 6.0), name="out")
    state = State.initial(ansorc.ComputeDAG([x, k, b, out]))
    for step in (ComputeInline("pad"), ComputeInline("bias"), CacheWrite("conv", "local"),
                 Split("conv.local", "j", (6,)), Split("conv.local", "c", (16,)),
                 Reorder("conv.local", ("n", "i", "j.0", "c.0", "rh", "rw", "j.1", "c.1")), ComputeInline("conv"),
                 FollowSplit("out", "j", 3, 1), FollowSplit("out", "c", 4, 1),
                 Reorder("out", ("n", "i", "j.0", "c.0", "j.1", "c.1")), ComputeAt("conv.local", "out", "c.0"),
                 Fuse("out", ("n", "i")), Annotate("out", "n@i", "parallel"),
                 Annotate("conv.local", "c.1", "vectorize"), Annotate("out", "c.1", "vectorize")):
        state = state.apply(step)
    return state


def test_a_versioned_reduction_in_the_full_tiles_stays_provably_in_bounds():
    # The version test reads the tile's start min(j0 * 6, 14) as the index does; with j0 <= 2 the full tiles'
    # indices fold it to j0 * 6, and so must the test, or the checker no longer ties one to the other
    state = depthwise_relu6(20)
    assert peel_keys(state) == [("out", "j.0")]
    f = lower(state)
    assert "min((out_j_0" not in repr(f.body)   # (ReLU6 has a min of its own)
    check_in_bounds(f)


def test_a_multi_level_split_keeps_its_inner_tiles_in_the_copy():
    assert narrow_lengths((18, 6), 52) == (9, 6) and narrow_lengths((2, 6), 8) == (2, 6)
    assert narrow_lengths((6,), 1) == (1,) and narrow_lengths((2, 6), 4) == (1, 4)
    # 100 points in 16-point tiles of 4-point inner tiles (lengths (4, 4)) leave 4: the copy is one inner tile
    state = relu(100).apply(Split("b", "i", (4, 4)))
    assert peel_candidates(state) == [("b", "i.0", "i.0", 0, (1, 4), 12 / 100)]
    f = lower(state)
    assert store_executions(f.body) == 100
    # 107 leave 11: three inner tiles, 1 point recomputed (shifted: 5)
    state = relu(107).apply(Split("b", "i", (4, 4)))
    assert peel_candidates(state) == [("b", "i.0", "i.0", 0, (3, 4), 4 / 107)]
    assert store_executions(lower(state).body) == 108
    check_in_bounds(f)
    # a last tile the inner tiles already fill gains nothing: not peeled
    assert not peel_candidates(relu(20).apply(Split("b", "i", (2, 6))))   # 8 left: two 6-point inner tiles again


def test_a_copy_that_saves_less_than_one_percent_is_not_made():
    # 512 rows in 6-row tiles: the shifted last tile recomputes 4 rows (0.8%); a 2-row copy costs about as much
    state = relu(512).apply(Split("b", "i", (6,)))
    assert not peel_candidates(state)
    assert peel_candidates(relu(98).apply(Split("b", "i", (6,))))   # 4 of 98
