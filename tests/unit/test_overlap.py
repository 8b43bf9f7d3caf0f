"""Overlapped rounds (TaskScheduler.run_overlapped, search.overlap.Pipeline, tune_tasks(in_flight=...)) with fake
asynchronous backends: no compiler, no cluster. Batches complete out of order; every candidate is logged once,
the budget is exact, a task never has two rounds in flight, and a resumed run picks up exactly."""
import math
import time
import zlib
from collections import Counter

import pytest

from ansorc import workloads
from ansorc.measure.backend import BatchBackend, LocalBackend, SyncBatches, batches_of
from ansorc.measure.builder import BuildResult
from ansorc.measure.errors import MeasureErrorNo
from ansorc.measure.record import load
from ansorc.measure.runner import MeasureResult
from ansorc.search.multi import tune_tasks
from ansorc.search.objectives import make_objective
from ansorc.search.scheduler import SchedulerOptions, TaskScheduler
from ansorc.search.tuning import tune_options

from .test_scheduler import CurveTuner


class FakeBatches:
    """An asynchronous backend: a batch completes only once `lag` later batches were submitted (or when
    nothing else is left), so batches are always in flight together and complete newest-first at times."""

    def __init__(self, slots=2, lag=1, fail_every=0):
        self.n_slots, self.lag, self.fail_every = slots, lag, fail_every
        self.pending: dict = {}      # handle -> (sources, submit order)
        self.done: dict = {}
        self.submitted = 0
        self.peak = 0                # most batches outstanding at once
        self.tasks_seen: list = []

    def slots(self):
        return self.n_slots

    def submit(self, sources, task=None, *, best_seconds=None, early_cut=True):
        h = self.submitted
        self.submitted += 1
        self.pending[h] = sources
        self.tasks_seen.append(task.key)
        self.peak = max(self.peak, len(self.pending))
        return h

    def _complete(self, h):
        sources = self.pending.pop(h)
        builds = [BuildResult(s, f"/fake/{s.entry}.so", MeasureErrorNo.NO_ERROR, "", 0.0) for s in sources]
        results = []
        for k, s in enumerate(sources):
            if self.fail_every and k % self.fail_every == 0:
                results.append(MeasureResult((), MeasureErrorNo.RUNTIME_DEVICE, "fake crash", 0.0, time.time()))
            else:   # a deterministic "timing" from the program text
                sec = 1e-4 * (1 + zlib.crc32(s.code.encode()) % 1000 / 1000)
                results.append(MeasureResult((sec,), MeasureErrorNo.NO_ERROR, "", 0.0, time.time()))
        self.done[h] = (builds, results)

    def wait(self, handles, timeout=None):
        ready = [h for h in handles if h in self.done]
        if not ready:
            newest_first = sorted((h for h in handles if h in self.pending), reverse=True)
            # the newest completes first once enough later work exists: out of submission order
            h = newest_first[0] if len(self.pending) > self.lag else newest_first[-1]
            self._complete(h)
            ready = [h]
        return ready

    def collect(self, handle):
        return self.done.pop(handle)

    def build(self, sources):   # MeasureBackend's surface, unused by the overlapped loop
        raise AssertionError("the overlapped loop must not call build()")

    def run(self, builds, task=None, **kw):
        raise AssertionError("the overlapped loop must not call run()")

    def close(self):
        pass


def test_fake_and_local_backends_satisfy_the_batch_protocol():
    assert isinstance(FakeBatches(), BatchBackend)
    assert issubclass(LocalBackend, SyncBatches)
    plain = object()
    assert isinstance(batches_of(plain), SyncBatches) and batches_of(plain).slots() == 1


class CurvePipeline:
    """Rounds of CurveTuners, completed in an order the test picks (newest first)."""

    def __init__(self, tuners):
        self.tuners, self.flights, self.next, self.peak = tuners, {}, 0, 0
        self.busy_violations = 0

    def begin(self, i, n):
        if i in self.flights.values():
            self.busy_violations += 1
        self.flights[self.next] = i
        self.next += 1
        self.peak = max(self.peak, len(self.flights))
        return self.next - 1

    def wait(self, tokens):
        return [max(tokens)]

    def finish(self, token):
        i = self.flights.pop(token)
        return self.tuners[i].step(8)


def test_run_overlapped_keeps_rounds_of_different_tasks_in_flight_and_spends_the_budget_exactly():
    tuners = [CurveTuner(1.0, 0.9, 50), CurveTuner(20.0, 2.0, 100), CurveTuner(1.0, 0.95, 50)]
    s = TaskScheduler(tuners, make_objective("f1", [1, 1, 1]), SchedulerOptions(per_round=8, epsilon=0.0), [1e9] * 3)
    pipe = CurvePipeline(tuners)
    s.run_overlapped(400, pipe, in_flight=2)
    assert s.total_trials == 400 == sum(t.done for t in tuners)
    assert pipe.peak == 2 and pipe.busy_violations == 0
    counts = [s.rounds.count(i) for i in range(3)]
    assert counts[1] > counts[0] + counts[2], counts    # the bottleneck still gets most rounds


def test_one_round_in_flight_gives_the_synchronous_order_of_rounds():
    def fresh():
        return [CurveTuner(8.0, 1.0, 150), CurveTuner(1.0, 0.9, 30), CurveTuner(0.5, 0.45, 30)]
    opts = SchedulerOptions(per_round=8, epsilon=0.05, seed=1)
    sync = TaskScheduler(fresh(), make_objective("f1", [1, 1, 1]), opts, [1e9] * 3)
    sync.run(240)
    tuners = fresh()
    over = TaskScheduler(tuners, make_objective("f1", [1, 1, 1]), opts, [1e9] * 3)
    over.run_overlapped(240, CurvePipeline(tuners), in_flight=1)
    assert over.rounds == sync.rounds and over.curve == sync.curve


def test_driver_times_add_up_and_find_the_overlap():
    from ansorc.search.overlap import DriverTimes
    t = DriverTimes(search=1.0, wait=2.0, model=0.5, start=0.0)
    t.batches = [[0, 4, 10.0, 12.0], [1, 4, 11.0, 13.0], [0, 4, 12.5, 14.0], [2, 4, 14.0, 15.0]]
    assert t.peak_overlap() == 2           # 10-12 and 11-13 overlap; 12.5-14 overlaps only 11-13
    summary = t.summary()
    assert summary["candidates"] == 16 and summary["search_ms_per_candidate"] == 62.5


def test_run_overlapped_stops_when_every_task_is_exhausted():
    tuners = [CurveTuner(1.0, 0.5, 50, space=16), CurveTuner(1.0, 0.5, 50, space=8)]
    s = TaskScheduler(tuners, make_objective("f1", [1, 1]), SchedulerOptions(per_round=8), [1e9] * 2)

    class Exhausting(CurvePipeline):
        def begin(self, i, n):
            if tuners[i].done >= tuners[i].space:
                tuners[i].exhausted = True
                return None
            return super().begin(i, n)

    s.run_overlapped(1000, Exhausting(tuners), in_flight=2)
    assert s.total_trials == 24 and all(p.dead for p in s.tasks)


def _tasks():
    return [workloads.matmul(16, 16, 16), workloads.matmul_relu(16, 24, 16), workloads.make("NRM", 0)]


@pytest.mark.parametrize("fail_every", [0, 3])
def test_tune_tasks_with_batches_in_flight_logs_each_candidate_once_and_resumes(tmp_path, fail_every):
    log = str(tmp_path / "net.jsonl")
    kw = dict(per_round=4, model="random", retime_top=0, progress=False)
    fake = FakeBatches(slots=2, fail_every=fail_every)
    out = tune_tasks(_tasks(), trials=24, log=log, backend=fake, options=tune_options(**kw))
    assert fake.peak == 2                                  # two batches were out at once
    assert len(set(fake.tasks_seen[:3])) == 3              # the warm-up submitted every task before any landed
    assert out.driver is not None and out.driver.peak_overlap() >= 2
    recs = load(log)
    assert len(recs) == 24 == sum(r.trials for r in out.results)
    assert max(Counter((r.workload_key, str(r.steps)) for r in recs).values()) == 1
    assert all(math.isfinite(s) for s in out.latencies) or fail_every
    summary = out.driver.summary()
    assert summary["candidates"] == 24 and summary["batches"] == 6
    # resumed with batches in flight again: 12 more, none measured twice
    more = tune_tasks(_tasks(), trials=36, log=log, backend=FakeBatches(slots=3), options=tune_options(**kw))
    recs = load(log)
    assert len(recs) == 36 == sum(r.trials for r in more.results)
    assert max(Counter((r.workload_key, str(r.steps)) for r in recs).values()) == 1


def test_a_local_style_backend_keeps_the_synchronous_loop(tmp_path):
    kw = dict(per_round=4, model="random", retime_top=0, progress=False)
    out = tune_tasks(_tasks()[:2], trials=8, backend=FakeSync(), options=tune_options(**kw))
    assert out.driver is None                              # no submit(): run() as before
    assert sum(r.trials for r in out.results) == 8
    with pytest.raises(ValueError, match="in_flight"):
        tune_tasks(_tasks()[:2], trials=8, backend=FakeBatches(), in_flight=0, options=tune_options(**kw))


class FakeSync:
    """A synchronous MeasureBackend (build + run only)."""

    def build(self, sources):
        return [BuildResult(s, "/fake.so", MeasureErrorNo.NO_ERROR, "", 0.0) for s in sources]

    def run(self, builds, task=None, **kw):
        return [MeasureResult((1e-4,), MeasureErrorNo.NO_ERROR, "", 0.0, time.time()) for _ in builds]

    def close(self):
        pass
