"""The task scheduler on synthetic latency curves: no compiler, no measurement."""
import math
from dataclasses import dataclass, field

import pytest

from ansorc.search.objectives import NO_PROGRAM, make_objective
from ansorc.search.scheduler import SchedulerOptions, TaskScheduler, round_size


@dataclass
class Rec:
    median: float
    ok: bool = True
    note: str = ""
    lower_bound: bool = False


@dataclass
class Result:
    best_seconds: float = math.inf
    records: list = field(default_factory=list)


class CurveTuner:
    """A task whose best latency after t trials is floor + (start - floor) * exp(-t / tau)."""

    def __init__(self, start, floor, tau, valid=True, space=None, history=0):
        self.start, self.floor, self.tau, self.valid, self.space = start, floor, tau, valid, space
        self.result, self.done, self.exhausted = Result(), 0, False
        if history:
            self.step(history)

    def latency(self, t):
        return self.floor + (self.start - self.floor) * math.exp(-t / self.tau)

    def step(self, n):
        if self.space is not None:
            n = min(n, self.space - self.done)
        if n <= 0:
            self.exhausted = True
            return []
        recs = [Rec(self.latency(self.done + k + 1), ok=self.valid) for k in range(n)]
        self.done += n
        self.result.records += recs
        if self.valid:
            self.result.best_seconds = min(self.result.best_seconds, min(r.median for r in recs))
        return recs


def scheduler(tuners, weights, strategy="gradient", objective="f1", **kw):
    opts = SchedulerOptions(strategy=strategy, per_round=kw.pop("per_round", 8), seed=kw.pop("seed", 0),
                            epsilon=kw.pop("epsilon", 0.0), **kw.pop("opts", {}))
    obj = make_objective(objective, weights, **kw)
    return TaskScheduler(tuners, obj, opts, flops=[1e9] * len(tuners))


def test_bottleneck_task_gets_most_rounds():
    tuners = [CurveTuner(1.0, 0.9, 50), CurveTuner(20.0, 2.0, 100), CurveTuner(1.0, 0.95, 50)]
    s = scheduler(tuners, [1, 1, 1])
    s.run(400)
    counts = [s.rounds.count(i) for i in range(3)]
    assert counts[1] > counts[0] + counts[2], counts
    assert s.total_trials == 400


def test_weight_makes_a_task_the_bottleneck():
    tuners = [CurveTuner(1.0, 0.2, 100), CurveTuner(1.0, 0.2, 100)]
    s = scheduler(tuners, [10, 1])
    s.run(320)
    assert s.rounds.count(0) > 2 * s.rounds.count(1)


def test_dead_tasks_are_never_chosen_again():
    tuners = [CurveTuner(5.0, 1.0, 50, valid=False), CurveTuner(1.0, 0.5, 50, space=8), CurveTuner(1.0, 0.5, 50)]
    s = scheduler(tuners, [1, 1, 1])
    s.run(200)
    assert s.tasks[0].dead and s.tasks[1].dead and not s.tasks[2].dead
    assert s.rounds.count(0) <= 2          # invalid: killed after two rounds without a program
    assert tuners[1].done == 8             # exhausted space: nothing more was asked of it
    last_dead = max(k for k, i in enumerate(s.rounds) if i in (0, 1))
    assert all(i == 2 for i in s.rounds[last_dead + 1:])


def test_every_task_dead_ends_the_run():
    s = scheduler([CurveTuner(1.0, 0.5, 50, space=4), CurveTuner(1.0, 0.5, 50, space=4)], [1, 1])
    s.run(1000)
    assert s.total_trials == 8 and s.next_task() is None


def test_resume_restores_counts_and_curve():
    tuners = [CurveTuner(1.0, 0.5, 50, history=24), CurveTuner(1.0, 0.5, 50)]
    s = scheduler(tuners, [1, 1])
    assert s.tasks[0].trials == 24 and len(s.tasks[0].history) == 3
    assert s.tasks[0].best == pytest.approx(tuners[0].latency(24))
    assert s.next_task() == 1              # warm-up only for the task without history
    s.run(8)
    assert tuners[0].done == 24 and tuners[1].done == 8


def test_f2_stops_tuning_a_network_that_meets_its_requirement():
    # network 0 (task 0) already meets a loose requirement; network 1 (task 1) does not
    tuners = [CurveTuner(1.0, 0.1, 50), CurveTuner(1.0, 0.1, 50)]
    s = scheduler(tuners, [1, 1], objective="f2", networks=[[0], [1]], requirements=[2.0, 0.01])
    s.run(240)
    assert s.rounds.count(1) > 3 * s.rounds.count(0)


def test_f3_favours_the_network_furthest_from_its_reference():
    tuners = [CurveTuner(1.0, 0.1, 80), CurveTuner(1.0, 0.1, 80)]
    s = scheduler(tuners, [1, 1], objective="f3", networks=[[0], [1]], references=[10.0, 0.5])
    g0, g1 = s.gradient(0), s.gradient(1)
    assert g0 < 0 and g1 < 0
    s.run(16)
    assert s.gradient(1) < s.gradient(0)   # the slow network's task gains the geometric mean most


def test_f4_per_task_early_stopping_kills_a_task_that_stopped_improving():
    flat = CurveTuner(1.0, 1.0, 1)         # never improves after its first trial
    s = scheduler([flat, CurveTuner(1.0, 0.1, 200)], [1, 1], objective="f4", opts={"per_task_early_stopping": 16})
    s.run(400)
    assert s.tasks[0].dead and flat.done <= 32


def test_global_early_stopping_ends_the_run():
    s = scheduler([CurveTuner(1.0, 1.0, 1), CurveTuner(1.0, 1.0, 1)], [1, 1], opts={"early_stopping": 32})
    s.run(1000)
    assert s.total_trials < 100


class SlowTuner(CurveTuner):
    """A CurveTuner whose rounds take wall time, on a clock the test moves."""

    def __init__(self, clock, seconds_per_round, *a):
        super().__init__(*a)
        self.clock, self.seconds = clock, seconds_per_round

    def step(self, n):
        self.clock[0] += self.seconds
        return super().step(n)


def test_a_time_budget_starts_no_round_after_it(monkeypatch):
    import ansorc.search.scheduler as sched
    clock = [1000.0]
    monkeypatch.setattr(sched.time, "monotonic", lambda: clock[0])
    tuners = [SlowTuner(clock, 7.0, 1.0, 0.1, 200), SlowTuner(clock, 7.0, 2.0, 0.1, 200)]
    s = scheduler(tuners, [1, 1], opts={"time_budget": 60.0})
    s.run(10_000)
    assert len(s.rounds) == 8   # rounds start at 0, 7, ..., 49 s: one starting at 56 s would end after 60 s
    assert clock[0] == 1000.0 + 56.0 and s.total_trials == 8 * 8
    s.run(16)                   # the budget is per run() call: a resumed run gets its own
    assert len(s.rounds) == 10


def test_a_task_whose_rounds_are_slow_is_not_started_near_the_end(monkeypatch):
    import ansorc.search.scheduler as sched
    clock = [0.0]
    monkeypatch.setattr(sched.time, "monotonic", lambda: clock[0])
    slow = SlowTuner(clock, 40.0, 5.0, 0.1, 200)      # the bottleneck: chosen whenever it can be
    s = scheduler([slow, SlowTuner(clock, 1.0, 1.0, 0.9, 200)], [1, 1], opts={"time_budget": 100.0})
    s.run(10_000)
    assert clock[0] <= 100.0 and slow.done == 16      # its third round (80..120 s) would overrun


def test_gradient_reaches_round_robins_final_latency_sooner():
    def tuners():
        return [CurveTuner(8.0, 1.0, 150), CurveTuner(1.0, 0.9, 30), CurveTuner(1.0, 0.9, 30),
                CurveTuner(0.5, 0.45, 30)]
    rr = scheduler(tuners(), [1, 1, 1, 1], strategy="round-robin")
    rr.run(640)
    gr = scheduler(tuners(), [1, 1, 1, 1])
    gr.run(640)
    target = rr.curve[-1][1]
    reached = next(t for t, v in gr.curve if v <= target)
    assert reached <= 0.6 * rr.curve[-1][0]


def test_epsilon_greedy_sometimes_picks_another_task():
    tuners = [CurveTuner(20.0, 1.0, 400), CurveTuner(1.0, 0.5, 400)]
    s = scheduler(tuners, [1, 1], epsilon=0.5, seed=3)
    s.run(800)
    assert s.rounds.count(1) > 5


def test_unknown_strategy_and_objective_are_refused():
    with pytest.raises(ValueError, match="strategy"):
        TaskScheduler([], make_objective("f1", []), SchedulerOptions(strategy="greedy"), [])
    with pytest.raises(ValueError, match="objective"):
        make_objective("f9", [1])
    with pytest.raises(ValueError, match="requirement"):
        make_objective("f2", [1], networks=[[0]])
    assert make_objective("f1", [2, 3])([1.0, NO_PROGRAM]) == 2 + 3 * NO_PROGRAM


@pytest.mark.parametrize("tasks,budget,per_round,expected", [
    (18, 1000, 64, 13),   # ResNet-18: the warm-up takes 234 of 1000 trials, not 990 (TVM's trials // tasks)
    (18, 2000, 64, 27),
    (3, 20000, 64, 64),   # a large budget: per_round caps it
    (18, 300, 64, 8),     # at least MIN_ROUND while the budget gives every task that much
    (18, 60, 64, 3),      # else every task still gets its warm-up round
    (18, 10, 64, 1),
])
def test_round_size_keeps_the_warm_up_to_a_quarter_of_the_budget(tasks, budget, per_round, expected):
    s = scheduler([CurveTuner(1.0, 0.5, 10) for _ in range(tasks)], [1] * tasks, per_round=per_round)
    assert s.round_size(budget) == expected


@pytest.mark.parametrize("budget,expected", [(64, 16), (300, 64), (1000, 64), (20, 8), (5, 5)])
def test_one_task_gets_model_guided_rounds_within_64_trials(budget, expected):
    """tune() sizes its rounds the same way: 64 trials were one random round, now 16 random and 48 guided."""
    assert round_size(64, budget) == expected


def test_gradient_after_the_warm_up_leaves_most_of_a_1000_trial_budget_to_choose():
    """18 tasks, one bottleneck, the default per_round: the warm-up gives each task 13 trials (234), and the
    bottleneck then draws many times what any other task does (each of those still gets the rounds its forward
    guess, -latency/rounds, asks for)."""
    tuners = [CurveTuner(20.0, 2.0, 200)] + [CurveTuner(1.0, 0.9, 50) for _ in range(17)]
    s = scheduler(tuners, [1] * 18, per_round=64)
    s.run(1000)
    assert sorted(s.rounds[:18]) == list(range(18)) and s.total_trials == 1000
    assert tuners[0].done > 5 * max(t.done for t in tuners[1:]), [t.done for t in tuners]
