"""The replay prefix cache: a cached replay equals a fresh one, for each DAG its own, bounded, and a failing step
leaves it usable."""
import pytest

from ansorc import workloads
from ansorc.ir.program.dag import ComputeDAG
from ansorc.ir.schedule import prefix_cache
from ansorc.ir.schedule.prefix_cache import cached_replay
from ansorc.ir.schedule.state import ScheduleError, State
from ansorc.ir.schedule.steps import Split
from ansorc.search.annotate import sample
from ansorc.search.task import HardwareParams, SearchTask

TASK = SearchTask(workloads.matmul(64, 64, 64), hw=HardwareParams(num_cores=2))


def _fresh(dag, steps):
    return State.initial(dag).apply_steps(steps)


def _same(a: State, b: State) -> bool:
    """Equal stages; ops made by a step (cache_write, rfactor) compare by identity, so by name and body here."""
    def view(st):
        return [(s.op.name, repr(s.op.body), s.iters, s.relations, s.compute_at, s.attach, s.pragmas, s.scope)
                for s in st.stages]
    return view(a) == view(b)


@pytest.fixture(autouse=True)
def _empty_cache():
    prefix_cache.clear()
    yield
    prefix_cache.clear()


def test_cached_replay_equals_a_fresh_one_and_keeps_the_callers_steps():
    states = sample(TASK, 12, seed=5)
    for st in states + states:   # the second pass replays from the cache
        steps = tuple(st.steps)
        got = cached_replay(TASK.dag, steps)
        assert _same(got, _fresh(TASK.dag, steps))
        assert got.steps is steps and got.dag is TASK.dag
    first = states[0].steps
    assert _same(cached_replay(TASK.dag, first[:3]), _fresh(TASK.dag, first[:3]))   # a prefix alone


def test_a_changed_step_replays_anew():
    st = sample(TASK, 1, seed=7)[0]
    i = next(k for k, s in enumerate(st.steps) if isinstance(s, Split))
    cached_replay(TASK.dag, st.steps)
    old = st.steps[i]
    changed = st.steps[:i] + (Split(old.stage, old.iter, tuple(1 for _ in old.lengths)),) + st.steps[i + 1:]
    got = cached_replay(TASK.dag, changed)
    assert _same(got, _fresh(TASK.dag, changed))
    assert not _same(got, cached_replay(TASK.dag, st.steps))


def test_each_dag_has_its_own_states():
    """Two DAGs with the same stage names and steps but other shapes must not share a prefix's state."""
    small, large = ComputeDAG(workloads.matmul(32, 32, 32)), ComputeDAG(workloads.matmul(96, 96, 96))
    steps = (Split(small.compute_ops[-1].name, small.compute_ops[-1].axes[0].name, (4,)),)
    a, b = cached_replay(small, steps), cached_replay(large, steps)
    assert _same(a, _fresh(small, steps)) and _same(b, _fresh(large, steps))
    assert not _same(a, b)


def test_a_failing_step_raises_and_leaves_the_cache_usable():
    st = sample(TASK, 1, seed=9)[0]
    bad = st.steps[:2] + (Split("no_such_stage", "i", (2,)),)
    with pytest.raises(ScheduleError):
        cached_replay(TASK.dag, bad)
    with pytest.raises(ScheduleError):   # not remembered as a state
        cached_replay(TASK.dag, bad)
    assert _same(cached_replay(TASK.dag, st.steps), _fresh(TASK.dag, st.steps))


def test_the_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(prefix_cache, "MAX_NODES", 10)
    for st in sample(TASK, 8, seed=11):
        assert _same(cached_replay(TASK.dag, st.steps), _fresh(TASK.dag, st.steps))
        assert prefix_cache._NODES[0] <= 10 + len(st.steps)
