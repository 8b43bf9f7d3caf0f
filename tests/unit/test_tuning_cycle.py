"""TaskTuner's public cycle (propose -> measure -> commit) and its callbacks: the cycle by hand measures what
step() measures, callbacks see every batch after the log and the model, and tune() is tune_tasks' one-task case
with one meaning of `trials` (the log's included)."""
import hashlib
import time

from ansorc import workloads
from ansorc.measure.builder import BuildResult
from ansorc.measure.errors import MeasureErrorNo
from ansorc.measure.record import RecordLog, load
from ansorc.measure.runner import MeasureResult
from ansorc.search.callbacks import AppendToLog, UpdateModel, default_callbacks
from ansorc.search.cost_model import CostModel
from ansorc.search.multi import tune_tasks
from ansorc.search.task import SearchTask
from ansorc.search.tuner import tune
from ansorc.search.tuning import Batch, TaskTuner, TuneOptions, make_cost_model

OPTS = TuneOptions(seed=5, model="random", progress=False, retime_top=0, per_round=4)


class HashTimed:
    """Times a program by a hash of its C text: deterministic, no compiler."""

    def build(self, sources):
        return [BuildResult(s, f"/fake/{s.key}.so", MeasureErrorNo.NO_ERROR, "", 0.0) for s in sources]

    def run(self, builds, task=None, **kw):
        return [MeasureResult((1e-4 * (1 + int(hashlib.sha256(b.source.code.encode()).hexdigest()[:8], 16) / 2 ** 32),),
                              MeasureErrorNo.NO_ERROR, "", 0.0, time.time()) for b in builds]

    def close(self):
        pass


def task():
    return SearchTask(workloads.matmul(32, 32, 32), "avx2")


def test_the_cycle_by_hand_measures_what_step_measures():
    by_step = TaskTuner(task(), OPTS, make_cost_model(OPTS), HashTimed())
    by_hand = TaskTuner(task(), OPTS, make_cost_model(OPTS), HashTimed())
    for _ in range(3):
        stepped = by_step.step(4)
        batch = by_hand.propose(4)
        assert isinstance(batch, Batch) and len(batch) == 4
        committed = by_hand.commit(batch, *by_hand.measure(batch))
        assert [r.steps_json for r in committed] == [r.steps_json for r in stepped]
    assert by_hand.done == by_step.done == 12 and by_hand.result.best_seconds == by_step.result.best_seconds


def test_callbacks_run_after_the_log_and_the_model(tmp_path):
    seen = []

    class Counting(CostModel):
        def __init__(self):
            self.updates = 0

        def update(self, records):
            self.updates += 1

        def predict(self, task, states):
            import numpy as np
            return np.zeros(len(states))

    log = RecordLog(str(tmp_path / "l.jsonl"))
    model = Counting()
    watch = lambda tuner, recs: seen.append((len(recs), len(load(log.path)), model.updates))  # noqa: E731
    tuner = TaskTuner(task(), OPTS, model, HashTimed(), log, default_callbacks(log, (watch,)))
    assert [type(c) for c in tuner.callbacks[:2]] == [AppendToLog, UpdateModel]
    tuner.step(4)
    tuner.step(4)
    # resumed history (none) is one update at construction; then one per batch, each seen after it happened
    assert seen == [(4, 4, 2), (4, 8, 3)]
    assert tuner.result.model_seconds >= 0.0


def test_tune_is_the_one_task_case_and_trials_count_the_log(tmp_path, monkeypatch):
    from ansorc.search import multi
    monkeypatch.setattr(multi, "local_backend", lambda target, options: HashTimed())
    log = str(tmp_path / "t.jsonl")
    one = tune(task(), trials=8, log=log, options=OPTS)
    assert one.trials == 8 and len(load(log)) == 8
    again = tune(task(), trials=8, log=log, options=OPTS)          # the same call again: nothing to do
    assert again.trials == 8 and len(load(log)) == 8
    more = tune_tasks([task()], trials=12, log=log, options=OPTS)  # the driver itself: 4 more to reach 12
    assert more.results[0].trials == 12 and len(load(log)) == 12
