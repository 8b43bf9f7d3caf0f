"""A pure stage's last partial tile shifts back inside its axis (ir/relations.axis_values, shift_inward) instead of
being guarded; reductions and GPU-bound stages keep their guards, and every address stays provably in bounds.
The peel of such a last tile (peel.py, which replaces it after lowering) is off here: tests/unit/test_peel.py."""

import ansorc
from ansorc import te
from ansorc.ir.program.expr import walk
from ansorc.ir.lowering.lower import LowerOptions
from ansorc.ir.lowering.lower import lower as lower_peeled
from ansorc.ir.schedule.state import State
from ansorc.ir.schedule.steps import Annotate, CacheWrite, ComputeAt, FollowSplit, Reorder, Split
from ansorc.ir.lowering.stmt import IfThenElse, Store, walk_stmt
from ansorc.ir.passes.verify import check_in_bounds


def lower(state, name: str = "kernel", passes: bool = True):
    return lower_peeled(state, name, passes, LowerOptions(peel=False))


def guards(func) -> list:
    return [s for s in walk_stmt(func.body) if isinstance(s, IfThenElse)]


def relu(n: int):
    a = te.placeholder((n,), "float32", "a")
    b = te.compute((n,), lambda i: te.max(a[i], 0.0), name="b")
    return State.initial(ansorc.ComputeDAG([a, b]))


def row_sums(n: int, m: int):
    a = te.placeholder((n, m), "float32", "a")
    k = te.reduce_axis((0, m), "k")
    s = te.compute((n,), lambda i: te.sum(a[i, k], axis=k), name="s")
    return State.initial(ansorc.ComputeDAG([a, s]))


def stores(func, name: str) -> list:
    return [s for s in walk_stmt(func.body) if isinstance(s, Store) and s.buffer == name]


def test_a_pure_stage_shifts_its_last_tile_inside_without_a_guard():
    f = lower(relu(100).apply(Split("b", "i", (16,))).apply(Annotate("b", "i.0", "parallel")))
    assert not guards(f)
    assert "min" in repr(stores(f, "b")[0].indices[0])
    check_in_bounds(f)


def test_dividing_splits_and_reductions_keep_their_form():
    assert "min" not in repr(stores(lower(relu(96).apply(Split("b", "i", (16,)))), "b")[0].indices)
    f = lower(row_sums(100, 8).apply(Split("s", "i", (16,))))
    assert guards(f) and "min" not in repr(stores(f, "s")[0].indices)
    check_in_bounds(f)


def test_a_tile_wider_than_the_axis_keeps_its_guard():
    # 20 split (4, 8): inner span 24 > 20, nothing to shift into
    f = lower(relu(20).apply(Split("b", "i", (4, 8))))
    assert guards(f)
    check_in_bounds(f)


def test_gpu_bound_stages_keep_their_guards():
    st = relu(100).apply(Split("b", "i", (32,))).apply(Annotate("b", "i.0", "blockIdx.x")) \
        .apply(Annotate("b", "i.1", "threadIdx.x"))
    assert guards(lower(st))


def tiled_matmul(rows: int, cols: int, vectorize: bool = False) -> tuple:
    """([a, w, c], state): c = a @ w (reduction 64) in 6 x 16 register tiles (a cache-write stage computed at the
    copy's column tile), the row tiles in parallel: TBG's shape of program, its rows not a multiple of 6."""
    a = te.placeholder((rows, 64), "float32", "a")
    w = te.placeholder((64, cols), "float32", "w")
    k = te.reduce_axis((0, 64), "k")
    c = te.compute((rows, cols), lambda i, j: te.sum(a[i, k] * w[k, j], axis=k), name="c")
    st = State.initial(ansorc.ComputeDAG([a, w, c]))
    vector = (Annotate("c.local", "j.1", "vectorize"), Annotate("c", "j.1", "vectorize")) if vectorize else ()
    for step in (CacheWrite("c", "local"), Split("c.local", "i", (6,)), Split("c.local", "j", (16,)),
                 Reorder("c.local", ("i.0", "j.0", "k", "i.1", "j.1")), FollowSplit("c", "i", 1, 1),
                 FollowSplit("c", "j", 2, 1), Reorder("c", ("i.0", "j.0", "i.1", "j.1")),
                 ComputeAt("c.local", "c", "j.0"), Annotate("c", "i.0", "parallel"), *vector):
        st = st.apply(step)
    return [a, w, c], st


def test_the_copy_out_of_a_register_tile_reads_it_at_fixed_offsets():
    """The accumulator tile's window is clamped inside the 128 rows; the copy out of it then runs over the same
    clamped rows, reading the tile from offset 0."""
    f = lower(tiled_matmul(128, 32)[1])
    copy = stores(f, "c")[0]
    assert not guards(f)
    local_reads = [r for r in walk(copy.value) if "local" in getattr(r, "name", "")]
    assert local_reads and all("min" not in repr(r.indices) for r in local_reads)
    check_in_bounds(f)
