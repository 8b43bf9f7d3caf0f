"""The tuning loop end to end on small workloads: records, resume without re-measuring, compile()."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import ansorc
from ansorc import workloads
from ansorc.measure.backend import MeasureBackend
from ansorc.measure.errors import MeasureErrorNo
from ansorc.measure.record import RETIME_NOTE, RecordLog, best, load
from ansorc.measure.runner import RunnerConfig
from ansorc.search.cost_model import LGBModel
from ansorc.search.default_schedule import default_cpu_schedule
from ansorc.search.evolution import SearchParams
from ansorc.search.task import SearchTask
from ansorc.search.multi import tune_tasks
from ansorc.search.tuner import local_backend, tune, tune_options
from ansorc.search.tuning import TaskTuner, TuneOptions, make_cost_model

FAST = dict(runner_kwargs={"min_repeat_ms": 1, "repeat": 1}, progress=False,
            params=SearchParams(population=64, generations=2))
ROOT = Path(__file__).resolve().parents[2]


def test_tune_records_and_resume(tmp_path):
    log = tmp_path / "log.jsonl"
    tensors = workloads.matmul(64, 64, 64)
    r1 = tune(tensors, trials=12, log=str(log), options=tune_options(per_round=6, **FAST))
    assert r1.trials == 12 and r1.best_state is not None and r1.best_gflops > 0
    r2 = tune(tensors, trials=24, log=str(log), options=tune_options(per_round=6, seed=1, **FAST))
    everything = load(log)
    recs = [r for r in everything if r.note != RETIME_NOTE]
    keys = [r.steps_json for r in recs]
    assert len(recs) == 24 and len(set(keys)) == 24  # nothing measured twice
    assert r2.trials == 24
    assert all(r.flop == ansorc.ComputeDAG(tensors).flop_count for r in everything)


def test_top_programs_are_retimed_side_by_side(tmp_path, monkeypatch):
    monkeypatch.setenv("ANSORC_CACHE_DIR", str(tmp_path / "cache"))
    log = tmp_path / "log.jsonl"
    tensors = workloads.matmul(64, 64, 64)
    res = tune(tensors, trials=12, log=str(log),
               options=tune_options(per_round=6, retime_top=3, retime_rounds=2, **FAST))
    # Re-timing reuses the candidates' builds: at most one library per measured program (two schedules can
    # render the same C), none added for the re-timing.
    assert len(list((tmp_path / "cache" / "builds").glob("*.so"))) <= 12
    retimes = [r for r in load(log) if r.note == RETIME_NOTE]
    measured = {r.steps_json for r in load(log) if r.note != RETIME_NOTE}
    # Up to 3 distinct measured programs, each re-timed in 2 rounds of 1 repeat, all error-free.
    assert 2 <= len(retimes) <= 3 and len({r.steps_json for r in retimes}) == len(retimes)
    assert all(r.steps_json in measured and r.ok and not r.lower_bound and len(r.costs) == 2 for r in retimes)
    assert [sec for sec, _ in res.retimed] == sorted(r.median for r in retimes)
    # The tuner's winner is the re-timed best, and the log agrees (apply_best and `ansorc show` read it so).
    top = best(log, res.task.workload_key, res.task.target)[0]
    assert top.note == RETIME_NOTE and top.median == res.best_seconds
    assert res.best_state is not None and res.retime_seconds > 0


def test_compile_returns_the_best_kernel(tmp_path):
    tensors = workloads.matmul_relu(48, 40, 32)
    kern = ansorc.compile(tensors, trials=8, log=str(tmp_path / "l.jsonl"), options=tune_options(per_round=4, **FAST))
    a = np.random.rand(48, 32).astype(np.float32)
    b = np.random.rand(32, 40).astype(np.float32)
    np.testing.assert_allclose(kern(a, b), np.maximum(a @ b, 0), rtol=1e-4, atol=1e-4)
    again = ansorc.compile(tensors, trials=0, log=str(tmp_path / "l.jsonl"))  # rebuild from the log
    np.testing.assert_allclose(again(a, b), np.maximum(a @ b, 0), rtol=1e-4, atol=1e-4)


def test_compile_without_trials_or_log_builds_the_default_program():
    tensors = workloads.matmul_relu(96, 80, 64)
    kern = ansorc.compile(tensors, trials=0)
    assert "ansorc_parallel_for(" in kern.source    # not the naive serial loop nest
    assert kern.source == ansorc.build(tensors, default_cpu_schedule(ansorc.ComputeDAG(tensors))).source
    a = np.random.rand(96, 64).astype(np.float32)
    b = np.random.rand(64, 80).astype(np.float32)
    np.testing.assert_allclose(kern(a, b), np.maximum(a @ b, 0), rtol=1e-4, atol=1e-4)


def test_kill_then_resume_measures_nothing_twice(tmp_path):
    log = tmp_path / "k.jsonl"
    code = ("import sys; sys.path.insert(0, %r)\n"
            "from ansorc import workloads\nfrom ansorc.search.tuner import tune, tune_options\n"
            "from ansorc.search.evolution import SearchParams\n"
            "tune(workloads.matmul(64, 64, 64), trials=400, log=%r, options=tune_options(per_round=4, progress=False,"
            " runner_kwargs={'min_repeat_ms': 1, 'repeat': 1}, params=SearchParams(population=32, generations=1)))\n"
            % (str(ROOT), str(log)))
    proc = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.time() + 120
    while time.time() < deadline and (not log.exists() or len(log.read_text().splitlines()) < 8):
        time.sleep(0.2)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = load(log)
    assert len(before) >= 8
    tune(workloads.matmul(64, 64, 64), trials=len(before) + 8, log=str(log),
         options=tune_options(per_round=4, seed=3, **FAST))
    before = [r for r in before if r.note != RETIME_NOTE]
    after = [r for r in load(log) if r.note != RETIME_NOTE]
    assert len(after) == len(before) + 8
    assert len({r.steps_json for r in after}) == len(after)


def test_lgb_model_fits_its_training_data_and_saves(tmp_path):
    log = tmp_path / "m.jsonl"
    tensors = workloads.matmul(128, 128, 128)
    tune(tensors, trials=40, log=str(log), options=tune_options(per_round=20, model="random", search="random", **FAST))
    task = SearchTask(tensors)
    model = LGBModel(warmup=1)
    model.add_task(task)
    recs = load(log)
    model.update(recs)
    assert model.booster is not None
    feats = [model.feats[(r.workload_key, r.steps_json)] for r in recs if r.ok]
    pred = model.predict_features(feats)
    true = np.array([1 / r.median for r in recs if r.ok])
    i, j = np.triu_indices(len(true), 1)
    acc = np.mean(np.sign(pred[i] - pred[j]) == np.sign(true[i] - true[j]))
    assert acc > 0.7  # its own training data; held-out ranking: tests/unit/test_cost_model.py
    model.save(tmp_path / "model.npz")
    other = LGBModel()
    other.load(tmp_path / "model.npz")
    np.testing.assert_allclose(other.predict_features(feats), pred)


def test_tune_keywords_map_into_tune_options():
    opts = tune_options(TuneOptions(seed=3), trials=5, per_round=2, runner_kwargs={"repeat": 1}, flags=["-O2"])
    assert opts == TuneOptions(trials=5, per_round=2, seed=3, flags=("-O2",), runner=RunnerConfig(repeat=1))
    assert tune_options(None, early_stopping=None, params=None) == TuneOptions()  # None keeps the default
    with pytest.raises(TypeError):
        tune_options(None, no_such_option=1)


def test_tasks_interleave_on_one_model_backend_and_log(tmp_path):
    """Two tasks with different inputs, stepped in turn through one backend: every program is checked against
    its own task's inputs and outputs (a backend stuck on the first task would fail the second's programs)."""
    log = tmp_path / "two.jsonl"
    tasks = [SearchTask(workloads.matmul(32, 48, 16)), SearchTask(workloads.matmul_relu(24, 16, 32))]
    results = tune_tasks(tasks, log=str(log), trials=16, strategy="round-robin",
                         options=tune_options(per_round=4, model="random", retime_top=0,
                                              **{k: v for k, v in FAST.items() if k != "progress"})).results
    records = load(log)
    for task, res in zip(tasks, results):
        mine = [r for r in records if r.workload_key == task.workload_key]
        assert len(mine) == 8 and res.trials == 8 and res.task is task
        assert all(r.error_code != MeasureErrorNo.WRONG_ANSWER for r in mine)
        assert sum(r.ok for r in mine) >= 6 and res.best_state is not None
    # rounds alternate between the tasks in the log
    order = [r.workload_key for r in records]
    assert order[:4] == [tasks[0].workload_key] * 4 and order[4:8] == [tasks[1].workload_key] * 4


def test_task_tuner_step_returns_its_records(tmp_path):
    task = SearchTask(workloads.matmul(32, 32, 32))
    opts = tune_options(None, trials=6, per_round=3, model="random", **{k: v for k, v in FAST.items()
                                                                         if k != "progress"})
    backend = local_backend(task.target, opts)
    try:
        tuner = TaskTuner(task, opts, make_cost_model(opts), backend, RecordLog(tmp_path / "s.jsonl"))
        first = tuner.step(3)
        second = tuner.step(3)
    finally:
        backend.close()
    assert len(first) == len(second) == 3 and tuner.done == 6 and tuner.finished
    assert [r.steps_json for r in load(tmp_path / "s.jsonl")] == [r.steps_json for r in first + second]
    assert len({r.steps_json for r in first + second}) == 6


def test_a_one_program_first_round_measures_the_default_alone(tmp_path):
    """A round of one program whose slot the default program takes: no search for zero more (CI once hit
    an IndexError in evolve with n_out == 0 here), and the next round searches as usual."""
    task = SearchTask(workloads.matmul(32, 32, 32))
    opts = tune_options(None, trials=3, per_round=1, **{k: v for k, v in FAST.items() if k != "progress"})
    backend = local_backend(task.target, opts)
    try:
        tuner = TaskTuner(task, opts, make_cost_model(opts), backend, RecordLog(tmp_path / "one.jsonl"))
        first, second = tuner.step(1), tuner.step(1)
    finally:
        backend.close()
    assert len(first) == len(second) == 1 and first[0].steps_json != second[0].steps_json
    assert tuner.default_state is not None and tuner.done == 2


def test_tune_measures_through_a_given_backend_with_each_batch_task(tmp_path):
    class Recording:
        """A MeasureBackend that forwards to a local one and notes the task each batch names."""

        def __init__(self, inner):
            self.inner, self.tasks, self.closed = inner, [], False

        def build(self, sources):
            return self.inner.build(sources)

        def run(self, builds, task=None, *, best_seconds=None, early_cut=True):
            self.tasks.append(task)
            return self.inner.run(builds, task, best_seconds=best_seconds, early_cut=early_cut)

        def close(self):
            self.closed = True

    opts = tune_options(None, model="random", **{k: v for k, v in FAST.items() if k != "progress"})
    inner = local_backend("native", opts)
    backend = Recording(inner)
    assert isinstance(backend, MeasureBackend)
    try:
        res = tune(workloads.matmul(32, 32, 32), trials=6, backend=backend,
                   options=tune_options(opts, per_round=3, retime_top=2, retime_rounds=1, progress=False))
    finally:
        inner.close()
    assert res.trials == 6 and not backend.closed  # the caller's backend is the caller's to close
    # two rounds of 3, then the re-timing, which is skipped where early cuts left fewer than two clean timings
    assert len(backend.tasks) >= 2 + len(res.retimed)
    assert all(t is backend.tasks[0] for t in backend.tasks)
    assert backend.tasks[0].key.startswith(res.task.workload_key)
