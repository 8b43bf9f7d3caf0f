"""Each transform step: replay, JSON round trip, printed loop tree, and its errors."""
import json

import pytest

import ansorc
from ansorc import workloads
from ansorc.ir.schedule.state import ScheduleError
from ansorc.ir.schedule.steps import (Annotate, CacheRead, CacheWrite, ComputeAt, ComputeInline, ComputeRoot,
                                      FollowFusedSplit, FollowSplit, Fuse, Pragma, Reorder, Rfactor, Split,
                                      steps_from_json, steps_to_json)


def mm_dag(n=64, m=48, k=32):
    return ansorc.ComputeDAG(workloads.matmul_relu(n, m, k))


def roundtrip(dag, steps):
    state = ansorc.replay(dag, steps)
    text = json.dumps(steps_to_json(state.steps))
    again = ansorc.replay(dag, steps_from_json(json.loads(text)))
    assert again.steps == state.steps
    assert str(again) == str(state)
    assert json.dumps(steps_to_json(again.steps)) == text
    return state


def iters(state, stage):
    return [(it.name, it.extent) for it in state.stage(stage).iters]


def test_split_extents_and_names():
    s = roundtrip(mm_dag(), [Split("C", "i", (4, 2))])
    assert iters(s, "C")[:3] == [("i.0", 8), ("i.1", 4), ("i.2", 2)]
    s = roundtrip(mm_dag(100), [Split("C", "i", (64,))])  # non-dividing: outer covers the rest
    assert iters(s, "C")[:2] == [("i.0", 2), ("i.1", 64)]


def test_split_undecided_prints_question_mark():
    s = roundtrip(mm_dag(), [Split("C", "i", (None, None))])
    assert iters(s, "C")[:3] == [("i.0", None), ("i.1", None), ("i.2", None)]
    assert "for i.1 (0,?)" in str(s)
    assert not s.is_complete


def test_follow_split_uses_source_lengths():
    s = roundtrip(mm_dag(), [Split("C", "i", (2, 4, 2)), FollowSplit("relu", "i", 0, 2)])
    assert iters(s, "relu")[:3] == [("i.0", 4), ("i.1", 2), ("i.2", 8)]


def test_follow_fused_split_multiplies_one_level():
    steps = [Split("C", "i", (2, 4)), Split("C", "j", (3, 2)), FollowFusedSplit("relu", "i", (0, 1), 1, True)]
    s = roundtrip(mm_dag(), steps)
    assert iters(s, "relu")[:2] == [("i.0", 8), ("i.1", 8)]  # inner factor 4 * 2
    s = roundtrip(mm_dag(), steps[:2] + [FollowFusedSplit("relu", "i", (0, 1), 0, False)])
    assert iters(s, "relu")[:2] == [("i.0", 6), ("i.1", 11)]  # 6 parts of 64: ceil(64 / 6) = 11 each


def test_fuse_and_reorder():
    s = roundtrip(mm_dag(), [Fuse("relu", ("i", "j")), Split("C", "k", (8,)), Reorder("C", ("k.0", "i", "k.1", "j"))])
    assert iters(s, "relu") == [("i@j", 64 * 48)]
    assert [n for n, _ in iters(s, "C")] == ["k.0", "i", "k.1", "j"]
    with pytest.raises(ScheduleError, match="not adjacent"):
        ansorc.replay(mm_dag(), [Split("C", "k", (8,)), Fuse("C", ("i", "k.0"))])
    with pytest.raises(ScheduleError, match="spatial with reduce"):
        ansorc.replay(mm_dag(), [Fuse("C", ("j", "k"))])
    with pytest.raises(ScheduleError, match="not a permutation"):
        ansorc.replay(mm_dag(), [Reorder("C", ("i", "j"))])


def test_compute_locations():
    s = roundtrip(mm_dag(), [ComputeAt("C", "relu", "i")])
    assert s.stage("C").attach == ("relu", "i")
    text = str(s)
    assert text.index("for i (0,64)") < text.index("C = ...") < text.index("relu = ...")
    s = roundtrip(mm_dag(), [ComputeAt("C", "relu", "i"), ComputeRoot("C")])
    assert s.stage("C").compute_at == "root"
    dag = ansorc.ComputeDAG(workloads.c2d(1, 8, 8, 4, 4, 3, 1, 1))
    s = roundtrip(dag, [ComputeInline("pad")])
    assert "pad" not in str(s)
    with pytest.raises(ScheduleError, match="reduction cannot be inlined"):
        ansorc.replay(mm_dag(), [ComputeInline("C")])


def test_attachment_moves_with_split_and_fuse():
    s = ansorc.replay(mm_dag(), [ComputeAt("C", "relu", "j"), Split("relu", "j", (4,))])
    assert s.stage("C").attach == ("relu", "j.1")
    s = ansorc.replay(mm_dag(), [ComputeAt("C", "relu", "j"), Fuse("relu", ("i", "j"))])
    assert s.stage("C").attach == ("relu", "i@j")


def test_cache_write_and_cache_read():
    s = roundtrip(mm_dag(), [CacheWrite("C", "local")])
    assert [st.name for st in s.stages] == ["C.local", "C", "relu"]
    assert s.stage("C.local").op.combiner == "sum" and s.stage("C").op.combiner is None
    s = roundtrip(mm_dag(), [CacheRead("A", "shared", ("C",))])
    assert [st.name for st in s.stages] == ["A.shared", "C", "relu"]
    assert "A.shared" in repr(s.stage("C").op.body)
    with pytest.raises(ScheduleError, match="before it is split"):
        ansorc.replay(mm_dag(), [Split("C", "i", (2,)), CacheWrite("C", "local")])


def test_a_blocked_cache_read_moves_column_blocks_first():
    s = roundtrip(mm_dag(), [CacheRead("B", "local", ("C",), 16)])     # B is 32 x 48: 3 blocks of 16 columns
    copy = s.stage("B.local")
    assert copy.op.shape == (3, 32, 16)
    assert repr(copy.op.body) == "B[ax1, ((ax0 * 16) + ax2)]"
    assert "B.local[(j // 16), k, (j % 16)]" in repr(s.stage("C").op.body)
    assert steps_to_json([CacheRead("B", "local", ("C",), 16)]) == [["CHR", "B", "local", ["C"], 16]]
    assert steps_from_json([["CHR", "B", "local", ["C"]]]) == (CacheRead("B", "local", ("C",)),)  # older records
    with pytest.raises(ScheduleError, match="blocked by 20: its last extent 48 is not a multiple"):
        ansorc.replay(mm_dag(), [CacheRead("B", "local", ("C",), 20)])
    with pytest.raises(ScheduleError, match="wrong type"):
        steps_from_json([["CHR", "B", "local", ["C"], "16"]])


def test_rfactor_creates_stage():
    dag = ansorc.ComputeDAG(workloads.nrm(1, 64, 64))
    s = roundtrip(dag, [Fuse("sq_sum", ("i", "j")), Split("sq_sum", "i@j", (16,)), Rfactor("sq_sum", "i@j.1", 1)])
    rf = s.stage("sq_sum.rf")
    assert [(it.name, it.extent, it.kind) for it in rf.iters] == [("b", 1, "S"), ("i@j.1.v", 16, "S"),
                                                                  ("i@j.0", 256, "R")]
    assert [(it.name, it.extent, it.kind) for it in s.stage("sq_sum").iters] == [("b", 1, "S"),
                                                                                 ("i@j.1.v", 16, "R")]


def test_annotations_and_pragma():
    s = roundtrip(mm_dag(), [Annotate("relu", "i", "parallel"), Annotate("relu", "j", "vectorize"),
                             Pragma("C", "i", "auto_unroll_max_step", 16)])
    assert "parallel i (0,64)" in str(s) and "vectorize j (0,48)" in str(s) and "C auto_unroll: 16" in str(s)
    with pytest.raises(ScheduleError, match="cannot parallelize reduce"):
        ansorc.replay(mm_dag(), [Annotate("C", "k", "parallel")])
    with pytest.raises(ScheduleError, match="no iterator"):
        ansorc.replay(mm_dag(), [Annotate("C", "zz", "parallel")])
    with pytest.raises(ScheduleError, match="no stage"):
        ansorc.replay(mm_dag(), [Annotate("nope", "i", "parallel")])


def test_printed_loop_tree_golden():
    s = ansorc.replay(mm_dag(), [Split("relu", "i", (8,)), ComputeAt("C", "relu", "i.0"),
                                 Annotate("relu", "i.0", "parallel")])
    assert str(s) == "\n".join([
        "Placeholder: A, B",
        "parallel i.0 (0,8)",
        "  for i (0,64)",
        "    for j (0,48)",
        "      for k (0,32)",
        "        C = ...",
        "  for i.1 (0,8)",
        "    for j (0,48)",
        "      relu = ...",
    ])


def test_bad_json_step_is_a_clear_error():
    with pytest.raises(ScheduleError, match="not a step"):
        steps_from_json([["XX", "C"]])
    with pytest.raises(ScheduleError, match="malformed"):
        steps_from_json([["SP", "C"]])
