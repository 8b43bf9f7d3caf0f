"""The dot-product feature columns (dot_insts, dot_products_per_lane, dot_word_load): what the dot pass
(ir/passes/dot.py) will make of a store, read from the loop tree before the passes run."""
import random

import numpy as np
import pytest

from ansorc import workloads
from ansorc.codegen.c import lower_for_target
from ansorc.ir.lowering.lower import lower
from ansorc.ir.passes.vector import VDot, top_exprs, vwalk, walk_all
from ansorc.ir.program import te
from ansorc.ir.program.dag import ComputeDAG
from ansorc.ir.schedule.state import State
from ansorc.search.annotate import annotate
from ansorc.search.dot_rule import dot_default_schedule, dot_plan, dot_tile
from ansorc.search.features import FEATURE_NAMES, extract
from ansorc.search.sketch import generate_sketches
from ansorc.search.task import SearchTask, hardware_params

DOT = [FEATURE_NAMES.index(n) for n in ("dot_insts", "dot_products_per_lane", "dot_word_load")]


def _dot_columns(state, target) -> np.ndarray:
    """[stores, 3] raw dot columns of state's program for the target's hardware."""
    return extract(lower(state, passes=False), raw=True, hw=hardware_params(target))[:, DOT]


def _default(tensors, target):
    return dot_default_schedule(State.initial(ComputeDAG(tensors)), "C", target, hardware_params(target))


def _the_dot_row(cols) -> list:
    rows = cols[cols[:, 0] > 0]
    assert len(rows) == 1, cols          # the reduction's update, and no other store
    return rows[0].tolist()


@pytest.mark.parametrize("target, lanes", [("avx512-vnni", 16), ("avx2", 8), ("neon-dot", 4)])
def test_int8_gemm_after_the_dot_rule_counts_its_instructions(target, lanes):
    M, N, K = 16, 32, 24
    cols = _dot_columns(_default(workloads.matmul_u8s8(M, N, K), target), target)
    # one instruction per 4 products of each lane: M * N * K multiply-adds in lanes x 4 per instruction
    assert _the_dot_row(cols) == [M * N * K / (lanes * 4), 4.0, 1.0]


def test_bf16_gemm_gets_two_products_per_lane():
    M, N, K = 16, 32, 24
    cols = _dot_columns(_default(workloads.matmul_bf16(M, N, K), "avx512-bf16"), "avx512-bf16")
    assert _the_dot_row(cols) == [M * N * K / (16 * 2), 2.0, 1.0]


def test_a_broadcast_operand_across_rows_is_packed_element_by_element():
    A = te.placeholder((24, 16), "uint8", "A")       # A[k, i]: a group's 4 elements are a column, not a word
    B = te.placeholder((24, 32), "int8", "B")
    k = te.reduce_axis((0, 24), "k")
    C = te.compute((16, 32), lambda i, j: te.sum(A[k, i].astype("int32") * B[k, j].astype("int32"), axis=k),
                   name="C")
    cols = _dot_columns(_default([A, B, C], "avx2"), "avx2")
    assert _the_dot_row(cols)[1:] == [4.0, 0.0]


def test_the_same_tiling_without_the_grouped_copy_or_in_float32_gets_zeros():
    dag = ComputeDAG(workloads.matmul_u8s8(16, 32, 24))
    plan = dot_plan("avx2", dag.op_by_name["C"])
    # k split by 4 and written out around the vectorized j, but B read in its own layout: no instruction
    tiled, _ = dot_tile(State.initial(dag), "C", plan, {"i": (1, 1, 4), "j": (1, 1, 2), "k": (6,)})
    assert not _dot_columns(tiled, "avx2").any()
    f32 = SearchTask(workloads.matmul(32, 32, 32), target="avx512-vnni")
    rng = random.Random(0)
    for sketch in generate_sketches(f32):
        assert not _dot_columns(annotate(f32, sketch, rng), "avx512-vnni").any()


def test_a_machine_whose_vectors_are_too_narrow_sees_no_instruction():
    state = _default(workloads.matmul_u8s8(16, 32, 24), "avx512-vnni")   # 16 lanes of int32: 64-byte vectors
    assert _dot_columns(state, "avx512-vnni").any() and not _dot_columns(state, "avx2").any()


def _has_dot(func) -> bool:
    return any(isinstance(e, VDot) for s in walk_all(func.body) for t in top_exprs(s) for e in vwalk(t))


@pytest.mark.parametrize("target, tensors", [("avx512-vnni", workloads.matmul_u8s8(64, 64, 64)),
                                             ("avx2", workloads.conv2d_u8s8(1, 6, 6, 8, 16, 3, 1, 1)),
                                             ("avx512-bf16", workloads.matmul_bf16(32, 48, 32))])
def test_the_features_agree_with_the_pass_on_sampled_programs(target, tensors):
    task = SearchTask(tensors, target=target)
    sketches, rng = generate_sketches(task), random.Random(1)
    for _ in range(8):
        state = annotate(task, rng.choice(sketches), rng)
        assert bool(_dot_columns(state, target)[:, 0].any()) == _has_dot(lower_for_target(lower(state), target))
