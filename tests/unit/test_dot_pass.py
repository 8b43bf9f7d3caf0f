"""Dot-product instructions as data (codegen/dot.py), the pass that finds their shape (ir/passes/dot.py), the
grouped operand copy (ir/schedule/grouped.py) and the sketch rule (search/dot_rule.py), without compiling."""
from __future__ import annotations

import pytest

from ansorc import workloads
from ansorc.codegen import dot
from ansorc.codegen.c import lower_for_target
from ansorc.codegen.target import Target
from ansorc.ir.passes.vector import VDot, walk_all, vwalk
from ansorc.ir.program.dag import ComputeDAG
from ansorc.ir.program.expr import Const, Read, Select
from ansorc.ir.lowering.lower import lower
from ansorc.ir.schedule.state import State
from ansorc.ir.schedule.steps import CacheRead, step_from_json
from ansorc.search.dot_rule import dot_default_schedule, dot_plan
from ansorc.search.sketch import generate_sketches
from ansorc.search.task import SearchTask, hardware_params


@pytest.mark.parametrize("target, lanes, name", [("avx2", 8, "avx2_u8s8"), ("avx512", 8, "avx2_u8s8"),
                                                 ("avx512-vnni", 16, "vnni512_u8s8"),
                                                 ("avx2-vnni", 8, "avxvnni_u8s8"), ("neon-dot", 4, "neondot_u8s8")])
def test_the_instruction_is_a_table_lookup_on_isa_and_features(target, lanes, name):
    t = Target.from_name(target)
    assert dot.shape(t, dot.U8S8) == (lanes, 4)
    assert dot.offers(t)[(*dot.U8S8, lanes, 4)] == name


def test_targets_without_an_instruction_offer_none():
    for name in ("neon", "generic"):
        assert dot.shape(Target.from_name(name), dot.U8S8) is None and not dot.offers(Target.from_name(name))
    assert dot.shape(Target.from_name("avx512-bf16"), dot.BF16) == (16, 2)
    assert dot.shape(Target.from_name("avx2"), dot.BF16) is None


def test_dot_plan_fires_only_for_narrow_products_with_an_instruction():
    u8 = ComputeDAG(workloads.matmul_u8s8(8, 16, 12))
    f32 = ComputeDAG(workloads.matmul(8, 16, 12))
    plan = dot_plan("avx2", u8.op_by_name["C"])
    assert (plan.weights, plan.j, plan.k, plan.lanes, plan.group) == ("B", "j", "k", 8, 4)
    assert dot_plan("avx2", f32.op_by_name["C"]) is None
    assert dot_plan("generic", u8.op_by_name["C"]) is None
    conv = ComputeDAG(workloads.conv2d_u8s8(1, 6, 6, 8, 16, 3, 1, 1))
    plan = dot_plan("avx2", conv.op_by_name["conv"])
    assert (plan.weights, plan.j, plan.k) == ("kernel", "co", "rc")


def test_grouped_copy_layout_is_zero_padded_and_round_trips_json():
    step = CacheRead("B", "local", ("C",), 8, 4)
    assert step.to_json() == ["CHR", "B", "local", ["C"], 8, 4]
    assert step_from_json(step.to_json()) == step
    assert step_from_json(["CHR", "B", "local", ["C"], 8]) == CacheRead("B", "local", ("C",), 8)
    dag = ComputeDAG(workloads.matmul_u8s8(5, 11, 7))
    state = State.initial(dag).apply(step)
    copy = state.stage("B.local").op
    assert tuple(copy.shape) == (2, 2, 8, 4)     # [ceil(11 / 8), ceil(7 / 4), 8, 4]
    assert isinstance(copy.body, Select) and copy.body.f == Const(0, "int8")   # zeros past K and N
    assert "B.local" in repr(state.stage("C").op.body)
    exact = State.initial(ComputeDAG(workloads.matmul_u8s8(5, 16, 8))).apply(step).stage("B.local").op
    assert isinstance(exact.body, Read)          # nothing to pad


def _dots(func) -> list:
    out = []
    for s in walk_all(func.body):
        for e in getattr(s, "__dict__", {}).values():
            if hasattr(e, "dtype"):
                out += [x for x in vwalk(e) if isinstance(x, VDot)]
    return out


def test_the_default_program_lowers_to_dot_instructions_per_target():
    dag = ComputeDAG(workloads.matmul_u8s8(16, 32, 24))
    for target, instr, lanes in (("avx2", "avx2_u8s8", 8), ("avx512-vnni", "vnni512_u8s8", 16),
                                 ("neon-dot", "neondot_u8s8", 4)):
        state = dot_default_schedule(State.initial(dag), "C", target, hardware_params(target))
        dots = _dots(lower_for_target(lower(state), target))
        assert dots and {(d.instr, d.lanes, d.b.lanes, d.a.lanes) for d in dots} == {(instr, lanes, 4 * lanes, 4)}


def test_float32_programs_get_no_dot_and_no_new_sketches():
    f32 = SearchTask(workloads.matmul(64, 64, 64), target="avx2")
    assert not any(isinstance(s, CacheRead) and s.group for sk in generate_sketches(f32) for s in sk.steps)
    u8 = SearchTask(workloads.matmul_u8s8(64, 64, 64), target="avx2")
    sketches = generate_sketches(u8)
    assert sketches and all(any(isinstance(s, CacheRead) and s.group == 4 and s.block == 8 for s in sk.steps)
                            for sk in sketches)
