"""Skipping reduction steps that add the identity (ir/passes/skip.py): which conditions are found, where lowering puts
the guards, and where it must not (inside vector loops, around GPU thread loops and barriers, around work too
small to pay for the test)."""
import re
from types import SimpleNamespace

from ansorc import te, workloads
from ansorc.ir.program.dag import ComputeDAG
from ansorc.ir.program.expr import Binary, Compare, Const, Read, Select, Var, free_vars, substitute, walk
from ansorc.ir.lowering.lower import lower
from ansorc.ir.program.simplify import simplify
from ansorc.ir.passes.skip import (MIN_GUARDED_STEPS, contribution_conditions, relaxed, skip_wrap, skips_along,
                                   skips_unevenly)
from ansorc.ir.passes.tile_edges import tile_edges
from ansorc.ir.lowering.stmt import (THREAD_KINDS, Barrier, For, IfThenElse, Seq, Store, ThreadReduce, store_executions,
                                     walk_stmt)
from ansorc.search.default_schedule import default_cpu_schedule
from ansorc.targets.cuda.search_annotate import sample_gpu
from ansorc.search.task import SearchTask


def _skip_guards_with_loops(body, outer=()):
    """(guard, loops enclosing it) for every skip guard."""
    if isinstance(body, IfThenElse) and body.skip:
        yield body, outer
    if isinstance(body, For):
        outer = outer + (body,)
    for child in getattr(body, "stmts", ()) or [getattr(body, "body", None) or getattr(body, "then", None)]:
        if child is not None:
            yield from _skip_guards_with_loops(child, outer)


def _guards(tensors):
    dag = ComputeDAG(tensors)
    return list(_skip_guards_with_loops(lower(default_cpu_schedule(dag), "k", passes=False).body))


def test_a_padded_conv_skips_the_taps_on_its_padding_around_whole_reduction_loops():
    guards = _guards(workloads.make("C3D", 2))   # 3x3x3 taps over 14x14 pixels, 256 channels
    assert guards, "no skip guard in the default program of a padded 3-D conv"
    for g, outer in guards:
        names = {f.var for f in outer}
        assert free_vars(g.cond) <= names, "the guard reads a loop that is not around it"
        assert not any(f.kind == "vectorize" for f in outer)
        inner = [s.var for s in walk_stmt(g.then) if isinstance(s, For)]
        assert any("_r" in v for v in inner), f"guard around no reduction loop: {inner}"
        assert store_executions(g.then, vector_once=True) >= MIN_GUARDED_STEPS
        assert not any(isinstance(n, Read) for n in walk(g.cond))


def test_conditions_come_through_products_and_materialized_pads():
    x = te.placeholder((8,), name="x")
    pad = te.compute((10,), lambda i: te.if_then_else(te.all(i >= 1, i < 9), x[i - 1], 0.0), name="pad")
    w = te.placeholder((3,), name="w")
    r = te.reduce_axis((0, 3), "r")
    out = te.compute((8,), lambda i: te.sum(pad[i + r] * w[r], axis=r), name="out")
    bodies = {"pad": ([a.name for a in pad.op.axes], pad.op.body)}
    conds = contribution_conditions(out.op.body, 0, bodies.get)
    assert len(conds) == 2 and all(free_vars(c) == {out.op.axes[0].name, "r"} for c in conds), conds


def test_a_where_clause_of_a_max_reduction_is_a_condition_and_a_non_identity_select_is_not():
    a = te.placeholder((16, 16), name="a")
    k = te.reduce_axis((0, 16), "k")
    causal = te.compute((16,), lambda i: te.max(a[i, k], axis=k, where=k <= i), name="causal")
    body = causal.op.body
    assert contribution_conditions(body, float("-inf"), lambda n: None)
    assert not contribution_conditions(body, 0, lambda n: None), "-inf padding is not a sum's identity"
    ones = te.compute((16,), lambda i: te.sum(te.if_then_else(k <= i, a[i, k], 1.0), axis=k), name="ones")
    assert not contribution_conditions(ones.op.body, 0, lambda n: None)


def test_a_condition_that_reads_data_is_not_hoisted():
    a = te.placeholder((16, 16), name="a")
    m = te.placeholder((16,), name="m")
    k = te.reduce_axis((0, 16), "k")
    masked = te.compute((16,), lambda i: te.sum(te.if_then_else(m[k] > 0.0, a[i, k], 0.0), axis=k), name="masked")
    assert not contribution_conditions(masked.op.body, 0, lambda n: None)


def test_small_reductions_get_no_guard():
    # a depthwise 3x3 conv: the taps of one tile are a few dozen vector FMAs, less than the test would cost
    assert not _guards(workloads.make("DEP", 0))


def test_no_guard_encloses_gpu_threads_or_barriers():
    reduce_vars = {"r"}
    cond = [Compare(">=", Var("h"), Const(1, "int32"))]
    update = Store("acc", (Const(0, "int32"),), Const(1.0, "float32"))
    plain = For("r", 512, "serial", update)
    assert isinstance(skip_wrap(plain, cond, (), reduce_vars), IfThenElse), "the control is not guarded"
    with_barrier = For("r", 512, "serial", Seq((Barrier(), update)))
    on_threads = For("r", 512, "serial", For("tx", 32, "threadIdx.x", update))
    for loop in (with_barrier, on_threads):
        assert skip_wrap(loop, cond, (), reduce_vars) is loop
    small = For("r", 3, "serial", update)
    assert skip_wrap(small, cond, (), reduce_vars) is small


def test_gpu_programs_keep_guards_off_threads():
    task = SearchTask(workloads.make("C2D", 3), target="cuda")
    for state in sample_gpu(task, 12, seed=3):
        for g, _ in _skip_guards_with_loops(lower(state, "k", passes=False).body):
            for s in walk_stmt(g.then):
                assert not isinstance(s, (Barrier, ThreadReduce))
                assert not (isinstance(s, For) and s.kind in THREAD_KINDS), s.kind


def test_a_max_plus_update_skips_through_its_sum():
    x = te.placeholder((8,), name="x")
    pad = te.compute((10,), lambda i: te.if_then_else(te.all(i >= 1, i < 9), x[i - 1], float("-inf")), name="pad")
    w = te.placeholder((3,), name="w")
    r = te.reduce_axis((0, 3), "r")
    out = te.compute((8,), lambda i: te.max(pad[i + r] + w[r], axis=r), name="out")
    bodies = {"pad": ([a.name for a in pad.op.axes], pad.op.body)}
    assert len(contribution_conditions(out.op.body, float("-inf"), bodies.get)) == 2
    assert not contribution_conditions(out.op.body, 0, bodies.get), "a sum of padding is not a product"


def test_a_causal_mask_skips_the_blocks_past_the_tiles_last_row():
    i, k = Var("i"), Var("k")
    c = Compare("<=", k, i)
    # k = 16*k0 + k1 and i = 8*i0 + i1 with k1 and i1 inside: the block of k0 runs iff 16*k0 <= 8*i0 + 7
    k_split = Binary("+", Binary("*", Var("k0"), Const(16, "int32"), "int32"), Var("k1"), "int32")
    i_split = Binary("+", Binary("*", Var("i0"), Const(8, "int32"), "int32"), Var("i1"), "int32")
    cond = substitute(c, {"k": k_split, "i": i_split})
    r = relaxed(cond, {"k1": 16, "i1": 8})
    assert free_vars(r) == {"k0", "i0"}
    for k0 in range(4):
        for i0 in range(8):
            some = any(16 * k0 + k1 <= 8 * i0 + i1 for k1 in range(16) for i1 in range(8))
            got = simplify(substitute(r, {"k0": Const(k0, "int32"), "i0": Const(i0, "int32")}))
            assert isinstance(got, Const) and bool(got.value) == some, (k0, i0, got)
    assert relaxed(Compare("==", k, i), {"k": 4}) is None
    assert relaxed(Compare("<", Binary("//", k, Const(2, "int32"), "int32"), i), {"k": 4}) is None


def test_a_causal_matmul_gets_guards_at_its_row_and_reduction_blocks():
    a, b = te.placeholder((512, 512), name="a"), te.placeholder((512, 512), name="b")
    k = te.reduce_axis((0, 512), "k")
    cm = te.compute((512, 512), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k, where=k <= i), name="cm")
    guards = _guards([a, b, cm])
    assert guards and all(free_vars(g.cond) <= {f.var for f in outer} for g, outer in guards)


def _chunks(code: str) -> set:
    """The claim sizes of the kernel's parallel loops (codegen/parallel.py: 1 round-robin, -1 ranges, 0 guided)."""
    return set(re.findall(r"ansorc_parallel_for\(\w+, &ansorc_c, \d+, (-?\d+)\);", code))


def test_iterations_that_skip_unevenly_are_dealt_out_round_robin():
    from ansorc.codegen.pipeline import render
    # a larger than b: its row blocks are the outer loops, and the causal mask skips more of the earlier ones
    a, b = te.placeholder((1024, 1024), name="a"), te.placeholder((1024, 512), name="b")
    k = te.reduce_axis((0, 1024), "k")
    cm = te.compute((1024, 512), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k, where=k <= i), name="cm")
    dag = ComputeDAG([a, b, cm])
    code = render(dag, default_cpu_schedule(dag), target="avx2").code
    assert "1" in _chunks(code)
    # a and b of one size: B's column panels are the outer loops, each of them skipping as much as the others
    b = te.placeholder((1024, 1024), name="b")
    cm = te.compute((1024, 1024), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k, where=k <= i), name="cm")
    dag = ComputeDAG([a, b, cm])
    code = render(dag, default_cpu_schedule(dag), target="avx2").code
    assert _chunks(code) and "1" not in _chunks(code)
    plain = workloads.make("GMM", 0)
    dag = ComputeDAG(plain)
    code = render(dag, default_cpu_schedule(dag), target="avx2").code
    assert _chunks(code) and "1" not in _chunks(code)


def _guarded_loop(cond, extent=12, inner=3):
    """A parallel loop i over a loop r with a skip guard `cond` (on i and r) around a store."""
    body = IfThenElse(cond, Store("o", (Var("i"),), Const(1.0, "float32")), skip=True)
    return For("i", extent, "parallel", For("r", inner, "serial", body))


def test_only_skips_that_leave_parallel_ranges_uneven_are_dealt_out_round_robin():
    i, r = Var("i"), Var("r")
    # a padded conv's first row skips one tap of three: two, four or eight ranges of rows stay even
    padding = Compare(">=", Binary("+", i, r, "int32"), Const(1, "int32"))
    assert skips_along(_guarded_loop(padding)) and not skips_unevenly(_guarded_loop(padding))
    # a causal mask skips more the earlier the row: the first range does a fraction of the last one's work
    causal = Compare("<=", r, Binary("//", i, Const(4, "int32"), "int32"))
    assert skips_unevenly(_guarded_loop(causal, inner=3))
    # a condition not evaluated there (a read) keeps round-robin
    assert skips_unevenly(_guarded_loop(Compare(">", Read("m", (i,), "int32"), r)))


def test_a_default_program_whose_tiles_overlap_the_rows_end_gives_each_thread_one_range():
    from ansorc.codegen.pipeline import render
    # GRP 56x56x64 stride 2: 28 output columns in 6-column windows (the last overlaps the one before), a skip guard
    # on the parallel loop (the top padding row): round-robin would have two threads write the overlap
    dag = ComputeDAG(workloads.make("GRP", 0))
    state = default_cpu_schedule(dag, "avx2")   # AVX-512's and NEON's tiles of this row do not overlap
    assert any(type(s).__name__ == "Pragma" and s.key == "parallel_ranges" for s in state.steps)
    code = render(dag, state, target="avx2").code
    assert "-1" in _chunks(code) and "1" not in _chunks(code) and "ansorc_min_i32" in code   # ranges


def test_every_relaxation_holds_only_where_all_inner_values_satisfy():
    k_split = Binary("+", Binary("*", Var("k0"), Const(16, "int32"), "int32"), Var("k1"), "int32")
    i_split = Binary("+", Binary("*", Var("i0"), Const(8, "int32"), "int32"), Var("i1"), "int32")
    for op in ("<=", ">", "<", ">="):
        r = relaxed(Compare(op, k_split, i_split), {"k1": 16, "i1": 8}, every=True)
        for k0 in range(4):
            for i0 in range(8):
                every = all(eval(f"{16 * k0 + k1} {op} {8 * i0 + i1}") for k1 in range(16) for i1 in range(8))
                got = simplify(substitute(r, {"k0": Const(k0, "int32"), "i0": Const(i0, "int32")}))
                assert bool(got.value) == every, (op, k0, i0)


def test_a_causal_reduction_runs_its_blocks_below_the_diagonal_without_the_mask():
    a, b = te.placeholder((1024, 1024), name="a"), te.placeholder((1024, 1024), name="b")
    k = te.reduce_axis((0, 1024), "k")
    cm = te.compute((1024, 1024), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k, where=k <= i), name="cm")
    body = lower(default_cpu_schedule(ComputeDAG([a, b, cm])), "k", passes=False).body
    stores = [(s, outer) for s, outer in _stores_with_guards(body) if s.buffer == "cm_local" and outer]
    plain = [s for s, _ in stores if not any(isinstance(n, Select) for n in walk(s.value))]
    masked = [s for s, _ in stores if any(isinstance(n, Select) for n in walk(s.value))]
    assert plain and masked, "no copy of the reduction without the mask"


def _stores_with_guards(s, guards=()):
    if isinstance(s, Store):
        yield s, guards
    if isinstance(s, IfThenElse):
        guards = guards + (s.cond,)
    for child in getattr(s, "stmts", ()) or [getattr(s, "body", None) or getattr(s, "then", None)]:
        if child is not None:
            yield from _stores_with_guards(child, guards)


def test_a_tap_loop_is_written_out_with_the_tile_columns_each_tap_feeds():
    w, rw = Var("w"), Var("rw")
    pad_col = Binary("+", w, rw, "int32")          # pad[w + rw]: columns 1..7 hold data
    conds = [Compare(">=", pad_col, Const(1, "int32")), Compare("<", pad_col, Const(8, "int32"))]
    loops = [("h", 7), ("rw", 3), ("rc", 64), ("w", 7)]
    iters = [SimpleNamespace(kind=k, annotation="") for k in "SRRS"]
    edges = tile_edges(conds, loops, iters, 1, simplify)
    assert (edges.tap, edges.tile, edges.versions) == (1, 3, (((), ((1, 7), (0, 7), (0, 6))),))
    # dilation 2 (pad[w + 2 rw], 5 output columns): the first tap misses the first column, the last the last
    col = Binary("+", w, Binary("*", rw, Const(2, "int32"), "int32"), "int32")
    dil = [Compare(">=", col, Const(1, "int32")), Compare("<", col, Const(8, "int32"))]
    assert tile_edges(dil, [("rw", 3), ("rc", 8), ("w", 5)], iters[1:], 0, simplify).versions == \
        (((), ((1, 5), (0, 5), (0, 4))),)
    # a row of 14 in two tiles of 7 (pad[7 w0 + w + rw]): one version per tile, the first tile's first column
    # and the second tile's last skip a tap
    row = Binary("+", Binary("*", Var("w0"), Const(7, "int32"), "int32"), pad_col, "int32")
    two = [Compare(">=", row, Const(1, "int32")), Compare("<", row, Const(15, "int32"))]
    edges = tile_edges(two, [("w0", 2), ("rw", 3), ("rc", 8), ("w", 7)], iters, 1, simplify)
    first, second = (("w0", 0),), (("w0", 1),)
    assert edges.versions == ((first, ((1, 7), (0, 7), (0, 7))), (second, ((0, 7), (0, 7), (0, 6))))
    # not when the tile loop is outside a reduction loop (the skip guards cover it), is vectorized, or every tap
    # feeds every column
    assert tile_edges(conds, [("h", 7), ("rw", 3), ("w", 7), ("rc", 64)], iters, 1, simplify) is None
    vec = iters[:3] + [SimpleNamespace(kind="S", annotation="vectorize")]
    assert tile_edges(conds, loops, vec, 1, simplify) is None
    wide = [Compare(">=", pad_col, Const(0, "int32")), Compare("<", pad_col, Const(9, "int32"))]
    assert tile_edges(wide, loops, iters, 1, simplify) is None
