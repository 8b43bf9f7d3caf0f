"""tune_tasks on real (small) tasks: the budget is spread, the log resumes, nothing is measured twice."""
from collections import Counter

import numpy as np

import ansorc
from ansorc import workloads
from ansorc.ir.program.evaluate import evaluate, random_inputs
from ansorc.measure.record import load
from ansorc.search.multi import tune_tasks
from ansorc.search.tuning import tune_options


def test_tune_tasks_spreads_the_budget_and_resumes_without_measuring_twice(tmp_path):
    log = str(tmp_path / "net.jsonl")
    tasks = [workloads.make("GMM", 0), workloads.make("NRM", 0)]
    kw = dict(per_round=4, model="random", retime_top=0, progress=False)
    first = tune_tasks(tasks, [2, 1], trials=16, log=log, options=tune_options(**kw))
    assert sum(r.trials for r in first.results) == 16
    assert all(r.trials >= 4 for r in first.results)            # the warm-up gave every task a round
    assert all(s < float("inf") for s in first.latencies)
    assert first.estimated_latency == 2 * first.latencies[0] + first.latencies[1]
    again = tune_tasks(tasks, [2, 1], trials=16, log=log,
                       options=tune_options(**kw))   # the same call again: all done, nothing measured
    assert sum(r.trials for r in again.results) == 16 and len(load(log)) == 16
    second = tune_tasks(tasks, [2, 1], trials=24, log=log, options=tune_options(**kw))
    assert sum(r.trials for r in second.results) == 24          # resumed 16, measured 8 more
    recs = load(log)
    assert len(recs) == 24
    dup = Counter((r.workload_key, str(r.steps)) for r in recs)
    assert max(dup.values()) == 1


def test_the_default_program_is_measured_once_in_the_first_round(tmp_path):
    """What an untuned build runs is a candidate, so the log's best is never slower than it (as measured)."""
    from ansorc.measure.record import steps_key
    from ansorc.search.default_schedule import default_cpu_schedule
    from ansorc.search.task import SearchTask
    from ansorc.search.tuning import canonical_steps
    log = str(tmp_path / "net.jsonl")
    task = SearchTask(workloads.make("GMM", 0))
    want = steps_key(canonical_steps(task, default_cpu_schedule(task.dag, task.target, task.hw)))
    kw = dict(per_round=4, model="random", retime_top=0, progress=False)
    tune_tasks([task], [1], trials=4, log=log, options=tune_options(**kw))
    first = [steps_key(r.steps) for r in load(log)]
    assert first[0] == want and len(first) == 4
    tune_tasks([task], [1], trials=4, log=log, options=tune_options(**kw))          # resumed: not measured again
    assert [steps_key(r.steps) for r in load(log)].count(want) == 1


def test_the_final_retiming_includes_the_default_program_even_when_buried(tmp_path):
    """A default program timed once under load can rank below the top; the side-by-side re-timing gets it back."""
    from ansorc.measure.record import RETIME_NOTE, RecordLog, steps_key
    from ansorc.search.task import SearchTask
    from ansorc.search.tuner import local_backend
    from ansorc.search.tuning import TaskTuner, TuneOptions, canonical_steps, make_cost_model
    task = SearchTask(workloads.make("GMM", 0))
    opts = TuneOptions(trials=6, per_round=6, model="random", progress=False)
    backend = local_backend(task.target, opts)
    tuner = TaskTuner(task, opts, make_cost_model(opts), backend, RecordLog(str(tmp_path / "l.jsonl")))
    tuner.step(6)
    default = tuner.default_state
    want = steps_key(canonical_steps(task, default))
    from ansorc.search.annotate import sample
    others = [st for st in sample(task, 4, seed=1) if st.steps != default.steps][:2]
    tuner.best_states = [(1e-6, st) for st in others]   # as if the default had been timed slow, under load
    recs = tuner.retime(top=2, rounds=1)
    assert all(r.note == RETIME_NOTE for r in recs) and len(recs) == 2
    assert want in [steps_key(r.steps) for r in recs]


def test_declaring_weights_constant_measures_the_per_call_best_programs_first(tmp_path):
    """Tuned with weights per call, then declared constant: the log's best programs for the same computation are
    measured first under the new key (valid there, only their cost differs), after the default program."""
    from ansorc.ir.program.dag import ComputeDAG
    from ansorc.measure.record import best, steps_key
    from ansorc.measure.runner import RunnerConfig
    from ansorc.search.task import SearchTask
    from ansorc.search.tuning import TRANSFER_TOP
    log = str(tmp_path / "c1d.jsonl")
    tensors = workloads.make("C1D", 0)
    plain = SearchTask(ComputeDAG(tensors))
    kept = SearchTask(ComputeDAG(tensors, constants=workloads.weights(tensors)))
    assert plain.workload_key != kept.workload_key
    full = RunnerConfig(early_cut_ratio=None, contender_ratio=None, min_repeat_ms=2.0)   # every program in full
    kw = dict(model="random", retime_top=0, progress=False, runner=full)
    tune_tasks([plain], [1], trials=12, log=log, options=tune_options(per_round=12, **kw))
    top = [steps_key(r.steps) for r in best(log, plain.workload_key, k=TRANSFER_TOP)]
    assert len(top) >= 4
    kern = ansorc.compile(tensors, trials=0, log=log, constants=workloads.weights(tensors))   # the per-call best
    assert kern.provenance["measured as"].startswith(f"workload {plain.workload_key}")
    values = random_inputs(tensors, seed=3)
    out = np.zeros(tensors[-1].shape, np.float32)
    kern(*[values[t.name] for t in kept.dag.inputs], out)
    np.testing.assert_allclose(out, evaluate(tensors[-1], values)[tensors[-1].name], rtol=1e-4, atol=1e-4)
    tune_tasks([kept], [1], trials=len(top) + 1, log=log, options=tune_options(per_round=len(top) + 1, **kw))
    moved = [steps_key(r.steps) for r in load(log) if r.workload_key == kept.workload_key]
    assert set(top) <= set(moved) and len(moved) == len(top) + 1
    assert all(r.ok for r in load(log) if r.workload_key == kept.workload_key)
    tune_tasks([kept], [1], trials=len(top) + 3, log=log,
               options=tune_options(per_round=2, **kw))   # resumed: none measured twice
    again = [steps_key(r.steps) for r in load(log) if r.workload_key == kept.workload_key]
    assert len(again) == len(set(again)) == len(top) + 3
