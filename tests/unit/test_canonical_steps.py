"""Issue 12 row 4: logged steps are stored in canonical (structural) names and replay on a renamed program."""
import json

import pytest

from ansorc import workloads as W
from ansorc.ir.program import te
from ansorc.ir.schedule.canonical import rename_steps
from ansorc.ir.program.dag import ComputeDAG
from ansorc.ir.lowering.lower import lower
from ansorc.ir.schedule.state import replay
from ansorc.ir.schedule.steps import steps_from_json, steps_to_json
from ansorc.search.annotate import sample
from ansorc.search.task import HardwareParams, SearchTask


def _named(a, b, c, d, i, j, k):
    """The same program with other tensor and axis names (te takes axis names from the lambda's parameters)."""
    A = te.placeholder((24, 20), name=a)
    B = te.placeholder((20, 28), name=b)
    src = f"lambda {i}, {j}: te.sum(A[{i}, r] * B[r, {j}], axis=r)"
    r = te.reduce_axis((0, 20), k)
    C2 = te.compute((24, 28), eval(src, {"te": te, "A": A, "B": B, "r": r}), name=c)  # noqa: S307
    D2 = te.compute((24, 28), eval(f"lambda {i}, {j}: te.max(C2[{i}, {j}], 0.0)", {"te": te, "C2": C2}), name=d)
    return [A, B, D2]


def _shape(state):
    return [(s.name, s.iters, s.compute_at, s.attach, s.pragmas) for s in state.stages]


ORIGINAL = ("A", "B", "C", "relu", "i", "j", "k")
RENAMED = ("X", "Y", "Z", "act", "row", "col", "red")


@pytest.mark.parametrize("name", ["GMM", "NRM", "SFM", "C2D", "T2D", "CBR"])
def test_canonical_round_trip_and_no_user_names(name):
    task = SearchTask(W.smallest(name), hw=HardwareParams(num_cores=2))
    for st in sample(task, 20, seed=3):
        steps = steps_to_json(st.steps)
        canon = rename_steps(task.dag, steps, to_canonical=True)
        assert rename_steps(task.dag, canon, to_canonical=False) == steps
        assert _shape(replay(task.dag, steps_from_json(canon))) == _shape(st)
        for step in canon:
            assert step[1].startswith("#"), step


def test_steps_logged_for_one_naming_replay_on_the_renamed_program():
    first, second = ComputeDAG(_named(*ORIGINAL)), ComputeDAG(_named(*RENAMED))
    assert first.workload_key == second.workload_key
    task = SearchTask(first, hw=HardwareParams(num_cores=2))
    states = sample(task, 20, seed=5)
    assert any(any(isinstance(x, str) and "@" in x for s in steps_to_json(st.steps) for x in s) for st in states)
    for st in states:
        canon = json.loads(json.dumps(rename_steps(first, steps_to_json(st.steps), to_canonical=True)))
        again = replay(second, steps_from_json(canon))
        assert [s.name for s in again.stages] == [s.name.replace("C", "Z").replace("relu", "act")
                                                 for s in st.stages]
        lower(again)  # a complete, lowerable program
        with pytest.raises(Exception):
            replay(second, st.steps)  # the old names do not exist any more: why logs must not store them


@pytest.mark.parametrize("name", ["GMM", "C2D", "SFM"])
def test_gpu_schedules_with_cache_stages_and_fused_iterators_round_trip(name):
    task = SearchTask(W.smallest(name), target="cuda")  # sampling needs no GPU
    for st in sample(task, 10, seed=1):
        steps = steps_to_json(st.steps)
        canon = rename_steps(task.dag, steps, to_canonical=True)
        assert rename_steps(task.dag, canon, to_canonical=False) == steps
        assert _shape(replay(task.dag, steps_from_json(canon))) == _shape(st)
