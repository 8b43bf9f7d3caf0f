"""The search's worker pool (search/parallel.py): what it computes is what this process computes, in order."""
import multiprocessing
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from ansorc import workloads
from ansorc.ir.schedule.state import ScheduleError
from ansorc.search import parallel
from ansorc.search.annotate import sample
from ansorc.search.features import extract_states
from ansorc.search.sketch import generate_sketches
from ansorc.search.parallel import _render_one, rendered
from ansorc.search.task import SearchTask


@pytest.fixture
def two_workers(monkeypatch):
    monkeypatch.setenv("ANSORC_SEARCH_WORKERS", "2")
    monkeypatch.setattr(parallel, "MIN_STATES", 6)   # a few programs make the point
    yield
    parallel.close_pool()


@pytest.fixture(scope="module")
def programs():
    task = SearchTask(workloads.WORKLOADS["C2D"][0](1, 9, 9, 16, 16, 3, 1, 1))
    return task, sample(task, 9, seed=5, sketches=generate_sketches(task))


def _die(args):
    os._exit(3)


def test_sources_rendered_by_the_pool_are_the_ones_this_process_renders(two_workers, programs):
    task, states = programs
    names = [f"cand_{k}" for k in range(len(states))]
    pooled = parallel.render_states_parallel(task, states, names)
    assert pooled is not None and len(pooled) == len(states)
    for (src, err), st, nm in zip(pooled, states, names):
        assert err is None
        assert src.code == rendered(task.dag, st, nm, task.target)[0].code and src.entry == nm


def test_features_from_the_pool_are_the_same_rows_in_the_same_order(two_workers, programs):
    task, states = programs
    pooled = parallel.extract_states_parallel(task, states)
    here = extract_states(states, hw=task.hw)
    assert len(pooled) == len(here)
    assert all(a.shape == b.shape and np.array_equal(a, b) for a, b in zip(pooled, here))


def test_a_program_that_cannot_render_comes_back_as_its_error(two_workers, programs, monkeypatch):
    task, states = programs

    def refuse(*a, **k):
        raise ScheduleError("no such loop")
    monkeypatch.setattr(parallel, "render", refuse)   # the forked workers inherit the patch
    out = parallel.render_states_parallel(task, states[:parallel.MIN_RENDERS], ["a", "b", "c", "d"])
    assert out == [(None, "ScheduleError: no such loop")] * parallel.MIN_RENDERS


def test_small_machines_and_batches_stay_in_this_process(monkeypatch, programs):
    task, states = programs
    monkeypatch.setenv("ANSORC_SEARCH_WORKERS", "0")
    assert parallel.render_states_parallel(task, states, [str(k) for k in range(len(states))]) is None
    monkeypatch.setenv("ANSORC_SEARCH_WORKERS", "2")
    assert parallel.render_states_parallel(task, states[:parallel.MIN_RENDERS - 1], ["a", "b", "c"]) is None
    assert parallel.extract_states_parallel(task, states[:5]) is None   # under MIN_STATES (64)


def test_a_worker_that_dies_leaves_the_work_to_this_process(two_workers, programs, monkeypatch):
    task, states = programs
    monkeypatch.setattr(parallel, "_render_one", _die)
    assert parallel.render_states_parallel(task, states[:parallel.MIN_RENDERS], ["a", "b", "c", "d"]) is None
    monkeypatch.setattr(parallel, "_render_one", _render_one)
    out = parallel.render_states_parallel(task, states[:parallel.MIN_RENDERS], ["a", "b", "c", "d"])
    assert [src.entry for src, _ in out] == ["a", "b", "c", "d"]   # a new pool


def test_cuda_candidates_rendered_by_the_pool_are_the_ones_this_process_renders(two_workers):
    task = SearchTask(workloads.smallest("GMM"), target="cuda")   # rendering CUDA needs no GPU
    states = sample(task, 6, seed=2)
    names = [f"cand_{k}" for k in range(len(states))]
    pooled = parallel.render_states_parallel(task, states, names)
    here = [rendered(task.dag, st, nm, task.target) for st, nm in zip(states, names)]
    assert [(s.code, s.launches) if s else e for s, e in pooled] == [(s.code, s.launches) if s else e for s, e in here]
    assert any(s is not None for s, _ in pooled)


def test_the_worker_count_comes_from_the_environment_or_the_cores(monkeypatch):
    monkeypatch.setenv("ANSORC_SEARCH_WORKERS", "3")
    assert parallel.workers() == 3
    monkeypatch.setenv("ANSORC_SEARCH_WORKERS", "two")
    with pytest.warns(UserWarning, match="ANSORC_SEARCH_WORKERS='two'"):
        n = parallel.workers()
    cores = len(os.sched_getaffinity(0))
    assert n == (cores if cores >= parallel.MIN_CPUS else 0)


def _workers_in_a_daemon(queue):
    queue.put(parallel.workers())


def test_no_pool_inside_a_daemonic_process(monkeypatch):
    monkeypatch.setenv("ANSORC_SEARCH_WORKERS", "2")
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    p = ctx.Process(target=_workers_in_a_daemon, args=(queue,), daemon=True)
    p.start()
    assert queue.get(timeout=30) == 0
    p.join()


def test_tasks_registered_before_the_pool_starts_share_one_fork(two_workers, programs):
    task, states = programs
    other = SearchTask(workloads.matmul(16, 16, 16))
    parallel.register(task)
    parallel.register(other)
    parallel.render_states_parallel(task, states[:4], ["a", "b", "c", "d"])
    pool = parallel._POOL
    more = sample(other, 4, seed=1)
    assert [s.entry for s, _ in parallel.render_states_parallel(other, more, ["e", "f", "g", "h"])] == list("efgh")
    assert parallel._POOL is pool


def _named_matmul(a: str, b: str, c: str) -> list:
    from ansorc import te
    A, B = te.placeholder((16, 16), "float32", a), te.placeholder((16, 16), "float32", b)
    k = te.reduce_axis((0, 16), "k")
    return [A, B, te.compute((16, 16), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name=c)]


def test_one_workload_under_two_namings_renders_each_with_its_own_names(two_workers):
    # two models' equal stems: one workload key, stage names of their own (seen tuning ResNet-50 then DenseNet)
    first, second = SearchTask(_named_matmul("A", "B", "C")), SearchTask(_named_matmul("x", "w", "conv0"))
    assert first.workload_key == second.workload_key
    for task in (first, second):
        states = sample(task, 4, seed=2)
        out = parallel.render_states_parallel(task, states, ["p", "q", "r", "s"])
        assert out is not None and all(err is None for _, err in out), out
        assert [src.entry for src, _ in out] == list("pqrs")


def test_the_workers_end_when_the_tuner_is_killed():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    script = (f"import sys; sys.path.insert(0, {root!r})\n"
              "from ansorc import workloads\n"
              "from ansorc.search import parallel\n"
              "from ansorc.search.annotate import sample\n"
              "from ansorc.search.task import SearchTask\n"
              "task = SearchTask(workloads.matmul(16, 16, 16))\n"
              "parallel.render_states_parallel(task, sample(task, 4, seed=1), list('abcd'))\n"
              "print(' '.join(str(p) for p in parallel._POOL._processes), flush=True)\n"
              "import time; time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "ANSORC_SEARCH_WORKERS": "2"})
    pids = [int(p) for p in proc.stdout.readline().split()]
    assert len(pids) == 2
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.time() + 10 * parallel.PARENT_POLL_S + 5
    alive = pids
    while alive and time.time() < deadline:
        time.sleep(0.2)
        alive = [p for p in pids if _alive(p)]
    assert not alive, f"pool workers {alive} outlived their tuner"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_the_pool_forgets_old_tasks_past_its_limit(monkeypatch):
    monkeypatch.setattr(parallel, "MAX_TASKS", 2)
    monkeypatch.setattr(parallel, "_TASKS", {})
    tasks = [SearchTask(workloads.matmul(8, 8, n)) for n in (8, 16, 24)]
    keys = [parallel.register(t) for t in tasks]
    assert list(parallel._TASKS) == keys[2:]
