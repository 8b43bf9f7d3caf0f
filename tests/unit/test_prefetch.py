"""The prefetch pragma (ir/passes/prefetch.py): in a root stage's outermost loop, each vector load of a kernel input is
preceded by a prefetch of what it reads that many iterations later, clamped into the buffer; the search and the
row-chain default set it only where the inputs come from memory in long steps."""
from __future__ import annotations

import random

from ansorc import workloads
from ansorc.codegen.pipeline import render
from ansorc.ir.program import te
from ansorc.ir.program.dag import ComputeDAG
from ansorc.ir.lowering.lower import lower
from ansorc.ir.schedule.state import replay
from ansorc.ir.schedule.steps import Annotate, Pragma, Split
from ansorc.ir.passes.verify import verify
from ansorc.search.annotate import prefetch_large_inputs, prefetch_pays
from ansorc.search.default_schedule import default_cpu_schedule
from ansorc.search.mutate import mutate_unroll
from ansorc.search.task import SearchTask


def _scale(n: int = 64, m: int = 256):
    a = te.placeholder((n, m), name="A")
    b = te.placeholder((m,), name="S")
    return [a, b, te.compute((n, m), lambda i, j: a[i, j] * b[j], name="B")]


def _steps(distance: int | None):
    steps = [Split("B", "j", (8,)), Annotate("B", "i", "parallel"), Annotate("B", "j.1", "vectorize")]
    return steps + ([Pragma("B", "i", "prefetch", distance)] if distance is not None else [])


def _pragmas(state) -> dict:
    return {(s.stage, s.key): s.value for s in state.steps if isinstance(s, Pragma)}


def test_loads_moving_with_the_loop_prefetch_the_next_iteration_clamped_into_the_buffer():
    tensors = _scale()
    state = replay(ComputeDAG(tensors), _steps(1))
    assert lower(state, "k").prefetch == (("B_i", 1),)
    code = render(tensors, state, "k", "avx2").code
    # A's row moves with i: its loads prefetch row i + 1, never past A's last element; S does not move with i
    assert code.count("__builtin_prefetch(") == 1
    assert "__builtin_prefetch(A + ansorc_min_i32((((B_i + 1) * 256) + (B_j_0 * 8)), 16383), 0, 3);" in code
    plain = render(tensors, replay(ComputeDAG(tensors), _steps(None)), "k", "avx2").code
    assert "prefetch" not in plain


def test_distances_outside_the_loop_prefetch_nothing():
    tensors = _scale()
    for distance in (0, 64, 10 ** 9):
        state = replay(ComputeDAG(tensors), _steps(distance))
        assert lower(state, "k").prefetch == ()
        assert "prefetch" not in render(tensors, state, "k", "avx2").code


def test_prefetched_program_passes_the_bounds_checks():
    from ansorc.codegen.c import lower_for_target
    state = replay(ComputeDAG(_scale()), _steps(3))
    func = lower_for_target(lower(state, "k"), "avx512")
    verify(func)   # check_in_bounds covers the prefetch addresses too


def test_pays_only_without_reuse_for_large_inputs_in_long_steps():
    def pays(op, idx, stage=None):
        state = default_cpu_schedule(ComputeDAG(workloads.make(op, idx)))
        roots = [st.name for st in state.stages if st.compute_at == "root"]
        return prefetch_pays(state, stage or roots[-1])
    assert pays("SFM", 3)                       # 16 MB in rows of 8 KB
    assert not pays("SFM", 1)                   # 1 MB: warm in cache
    assert not pays("GMM", 3)                   # reuse: tiles come from cache
    nrm = default_cpu_schedule(ComputeDAG(workloads.make("NRM", 3)))
    assert not any(prefetch_pays(nrm, st.name) for st in nrm.stages if st.compute_at == "root")   # short steps


def test_row_chain_default_prefetches_and_streams_only_large_rows():
    big = _pragmas(default_cpu_schedule(ComputeDAG(workloads.make("SFM", 3))))
    assert big[("softmax", "prefetch")] == 1 and big[("softmax", "store_stream")] == 1
    small = _pragmas(default_cpu_schedule(ComputeDAG(workloads.make("SFM", 2))))
    assert ("softmax", "prefetch") not in small and ("softmax", "store_stream") not in small


def test_sampled_at_random_where_it_pays_and_not_drawn_elsewhere():
    def sampled(op, idx) -> tuple:
        task = SearchTask(ComputeDAG(workloads.make(op, idx)), "avx2")
        state = default_cpu_schedule(task.dag)
        state = replay(task.dag, [s for s in state.steps if not (isinstance(s, Pragma) and s.key == "prefetch")])
        rng = random.Random(0)
        hits = sum(any(k == "prefetch" for _, k in _pragmas(prefetch_large_inputs(task, state, rng)))
                   for _ in range(20))
        return hits, rng.random()
    hits, _ = sampled("SFM", 3)
    assert 0 < hits < 20
    hits, next_draw = sampled("SFM", 1)
    assert hits == 0 and next_draw == random.Random(0).random()


def test_unroll_mutation_leaves_other_pragmas_alone():
    tensors = _scale()
    task = SearchTask(ComputeDAG(tensors), "avx2")
    state = replay(task.dag, _steps(1) + [Pragma("B", "i", "auto_unroll_max_step", 16)])
    rng = random.Random(1)
    for _ in range(20):
        child = mutate_unroll(task, state, rng)
        assert child is not None and _pragmas(child)[("B", "prefetch")] == 1
        assert _pragmas(child)[("B", "auto_unroll_max_step")] != 16


def test_a_padded_read_prefetches_inside_the_buffer_from_below_too():
    a = te.placeholder((64, 256), name="A")
    shifted = te.compute((64, 256), lambda i, j: te.if_then_else(i >= 2, a[i - 2, j], 0.0), name="B")
    state = replay(ComputeDAG([a, shifted]), _steps(1))
    code = render([a, shifted], state, "k", "avx2").code
    assert code.count("__builtin_prefetch(") == 1
    # row i - 2 + 1 of A: below row 0 at i = 0, where the load itself is not made
    assert "__builtin_prefetch(A + ansorc_max_i32(((((B_i + 1) * 256) + (B_j_0 * 8)) - 512), 0), 0, 3);" in code


def test_sampled_programs_with_prefetch_everywhere_pass_the_bounds_checks():
    """Every root stage of sampled programs prefetching 1-3 iterations ahead: the addresses stay in their buffers
    (check_in_bounds after the codegen passes) for padded, strided and reducing operators alike."""
    from ansorc.codegen.c import lower_for_target
    from ansorc.ir.passes.vector import VPrefetch, walk_all
    from ansorc.search.annotate import sample
    rng = random.Random(0)
    hints = 0
    for op in ("SFM", "NRM", "DEP", "T2D", "C1D"):
        task = SearchTask(ComputeDAG(workloads.make(op, 0)), "avx2")
        for state in sample(task, 3, seed=1):
            roots = [st for st in state.stages if st.compute_at == "root" and st.iters]
            steps = [Pragma(st.name, st.iters[0].name, "prefetch", rng.randint(1, 3)) for st in roots]
            func = lower_for_target(lower(replay(task.dag, [*state.steps, *steps]), "k"), "avx2")
            verify(func)
            hints += sum(isinstance(s, VPrefetch) for s in walk_all(func.body))
    assert hints > 0
