"""The final re-timing under a time budget (search/multi.py _retime): the tasks that weigh most go first, and
the re-timing stops when the mean re-timing so far would not fit before the deadline."""
import math
from dataclasses import dataclass, field

import ansorc.search.multi as multi


@dataclass
class Result:
    best_seconds: float
    retimed: list = field(default_factory=list)
    best_gflops: float = 0.0


class FakeTuner:
    def __init__(self, clock, log, name, best, seconds=10.0, measured=True):
        self.clock, self.log, self.name, self.seconds, self.measured = clock, log, name, seconds, measured
        self.result = Result(best)

    def retime(self):
        if not self.measured:   # this run measured nothing: TaskTuner.retime skips at once
            return []
        self.clock[0] += self.seconds
        self.log.append(self.name)
        self.result.retimed = [(self.result.best_seconds, None)]
        return ["record"]


class Bar:
    def show(self, *a):
        pass


def tuners(clock, log, bests, **kw):
    return [FakeTuner(clock, log, f"t{k}", b, **kw) for k, b in enumerate(bests)]


def patched_clock(monkeypatch, start=0.0):
    clock = [start]
    monkeypatch.setattr(multi.time, "monotonic", lambda: clock[0])
    return clock


def test_without_a_deadline_every_task_is_retimed_in_order(monkeypatch):
    clock, log = patched_clock(monkeypatch), []
    multi._retime(tuners(clock, log, [1.0, 5.0, 3.0]), (1, 1, 1), math.inf, Bar())
    assert log == ["t0", "t1", "t2"]


def test_under_a_deadline_the_heaviest_tasks_go_first_and_the_rest_are_skipped(monkeypatch):
    clock, log = patched_clock(monkeypatch), []
    ts = tuners(clock, log, [1.0, 5.0, 3.0, 2.0])
    multi._retime(ts, (1, 1, 1, 4), 25.0, Bar())
    # weighted latencies 1, 5, 3, 8: t3 (0..10 s), t1 (10..20 s); t2 would end at 30 s, after the deadline
    assert log == ["t3", "t1"] and clock[0] == 20.0
    assert ts[2].result.retimed == [] and ts[0].result.retimed == []


def test_tasks_without_a_program_or_a_measurement_do_not_count(monkeypatch):
    clock, log = patched_clock(monkeypatch), []
    ts = tuners(clock, log, [math.inf, 2.0]) + [FakeTuner(clock, log, "idle", 9.0, measured=False)]
    multi._retime(ts, (1, 1, 1), 100.0, Bar())
    assert log == ["t1", "t0"] and clock[0] == 20.0   # the idle task's instant skip changes no estimate


def test_past_the_deadline_nothing_is_retimed(monkeypatch):
    clock, log = patched_clock(monkeypatch, start=50.0), []
    multi._retime(tuners(clock, log, [1.0, 2.0]), (1, 1), 40.0, Bar())
    assert log == []
