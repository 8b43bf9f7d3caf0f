"""The task scheduler: spend one tuning budget across many tasks where it lowers the objective most.

Ansor's gradient strategy (paper section 6; TVM's task_scheduler.py): one warm-up round over every task, then
each round goes to the task with the most negative estimated d(objective)/d(time),

    chain_i * (alpha * backward_i + (1 - alpha) * forward_i)

chain_i = d(objective)/d(latency_i) by finite differences; backward_i = the task's improvement per round over
the last `backward_window` rounds; forward_i = min(g_i - g_i / t_i, beta * flops_i / best FLOP/s among similar
tasks) - g_i (an optimistic guess: the next round may improve as much as the average round so far, or reach the
speed of a similar task). With probability epsilon a random live task is chosen instead (the paper has it, TVM's
code does not). The warm-up can be longer (warmup_rounds: the first round of a task has no online model, and
one round says little of where its curve goes), and a task leaves it after its first round where the pretrained
prior ranked that round's programs well (Kendall tau of its scores against the measured times at least trust_tau,
tuner.prior_tau): the model that will guide its later rounds already knows its space, so the gradient can take
over. A task whose round measured nothing new (space exhausted) or that has no valid program after its
rounds is dead; per-task early stopping (objective f4) kills a task that has not improved for N trials.

The scheduler drives anything with TaskTuner's surface: `step(n) -> records`, `result.best_seconds`, `done`,
`exhausted`; unit tests drive it with synthetic latency curves.

run_overlapped keeps several rounds of different tasks in flight on a backend that measures batches
concurrently (a Ray cluster): while they are measured, the driver chooses and searches the next task's round.
The choice then uses the results that have arrived, not those of the rounds still in flight, and a task with a
round in flight is not chosen again until it lands: the order of rounds differs from the strict gradient order
of run() (with one batch in flight it is the same).
"""
from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field

from .objectives import NO_PROGRAM

GOLDEN = 1.618  # TVM groups similar tasks by tag and int(log_1.618(flops + 1))
WARMUP_SHARE = 4  # the warm-up round over every task takes at most 1/WARMUP_SHARE of the budget
MIN_ROUND = 8     # smaller rounds cost more in search than in measurement


def round_size(per_round: int, budget: int, tasks: int = 1) -> int:
    """Programs per round: per_round, but small enough that the first round over every task (measured before the
    cost model has seen anything, so a random sample) takes at most 1/WARMUP_SHARE of the budget, and never below
    MIN_ROUND unless the budget cannot give every task that. TVM's min(64, trials // tasks) makes that warm-up the
    whole budget below 64 trials per task: 1000 trials on ResNet-18's 18 tasks gave 55 each (round-robin by another
    name), and a single task tuned for 64 trials was one random round with no model-guided search at all."""
    tasks = max(1, tasks)
    n = min(per_round, max(MIN_ROUND, budget // (WARMUP_SHARE * tasks)))
    return max(1, min(n, budget // tasks))


@dataclass(frozen=True)
class SchedulerOptions:
    strategy: str = "gradient"                  # "gradient" | "round-robin"
    per_round: int = 64                         # most programs per round (see TaskScheduler.round_size)
    alpha: float = 0.2
    beta: float = 2.0
    backward_window: int = 3
    epsilon: float = 0.05
    early_stopping: int | None = None           # stop after this many trials without a better objective
    per_task_early_stopping: int | None = None  # a task stops after this many of its trials without improving
    seed: int = 0
    time_budget: float | None = None            # seconds of wall time per run() call: no round starts that
                                                # would end after it
    warmup_rounds: int = 1                      # rounds each task gets before the gradient allocates
    trust_tau: float = 0.5                      # a task whose prior ranked its first round this well warms up once


@dataclass
class TaskProgress:
    """What the scheduler knows of one task: best latency after each of its rounds."""
    flops: float
    group: str = ""                              # similar tasks share a non-empty group
    history: list = field(default_factory=list)  # best latency after each round
    trials: int = 0
    best_trial: int = 0                          # the task's trial count when its best was found
    dead: bool = False

    @property
    def best(self) -> float:
        return self.history[-1] if self.history else NO_PROGRAM


def similarity_group(tag: str, flops: float) -> str:
    return f"{tag}/{int(math.log(flops + 1, GOLDEN))}" if tag else ""


class TaskScheduler:
    def __init__(self, tuners, objective, options: SchedulerOptions, flops, tags=None):
        if options.strategy not in ("gradient", "round-robin"):
            raise ValueError(f"unknown strategy {options.strategy!r}; expected 'gradient' or 'round-robin'")
        self.tuners, self.objective, self.options = list(tuners), objective, options
        tags = tags or [""] * len(self.tuners)
        self.tasks = [TaskProgress(float(f), similarity_group(t, f)) for f, t in zip(flops, tags)]
        self.rng = random.Random(options.seed)
        self.curve: list = []          # (total trials, objective) after each round
        self.rounds: list = []         # task index of each round, in order
        self._rr = 0
        self._deadline = math.inf
        self._round_seconds: dict = {}   # task -> seconds its last round took (run())
        for prog, tuner in zip(self.tasks, self.tuners):
            _restore(prog, tuner, options.per_round)
        self.best_objective = self.value()
        self.best_objective_trial = self.total_trials

    @property
    def total_trials(self) -> int:
        return sum(p.trials for p in self.tasks)

    def latencies(self) -> list:
        return [p.best for p in self.tasks]

    def value(self) -> float:
        return self.objective(self.latencies())

    def alive(self) -> list:
        return [i for i, p in enumerate(self.tasks) if not p.dead]

    # ------------------------------------------------------------------ choosing
    def next_task(self, busy=()) -> int | None:
        """The task for the next round; tasks in `busy` (a round in flight) are not chosen."""
        alive = [i for i in self.alive() if i not in busy]
        if not alive:
            return None
        fresh = [i for i in alive if self.warming(i)]
        if fresh:                      # warm-up: every task round by round (resumed tasks already have history)
            return min(fresh, key=lambda i: len(self.tasks[i].history))
        if self.options.strategy == "round-robin":
            later = [i for i in alive if i >= self._rr] or alive
            self._rr = later[0] + 1
            return later[0]
        if self.rng.random() < self.options.epsilon:
            return self.rng.choice(alive)
        grads = {i: self.gradient(i) for i in alive}
        low = min(grads.values())
        return self.rng.choice([i for i, g in grads.items() if g == low])

    def warming(self, i: int) -> bool:
        """Task i is still in its warm-up: fewer than warmup_rounds rounds, and not one the prior ranked well."""
        rounds = len(self.tasks[i].history)
        if rounds == 0:
            return True
        tau = getattr(self.tuners[i], "prior_tau", None)
        return rounds < self.options.warmup_rounds and (tau is None or tau < self.options.trust_tau)

    def gradient(self, i: int) -> float:
        """The estimated d(objective)/d(rounds) of task i (more negative = more worth a round)."""
        o, p = self.options, self.tasks[i]
        g, rounds = p.best, len(p.history)
        lat = self.latencies()
        delta = max(g * 1e-4, 1e-12)
        lat[i] = g + delta
        chain = (self.objective(lat) - self.value()) / delta
        w = o.backward_window
        backward = (p.history[-1] - p.history[-1 - w]) / w if rounds > w else 0.0
        forward = min(g - g / max(rounds, 1), self._similar_bound(i)) - g
        return chain * (o.alpha * backward + (1 - o.alpha) * forward)

    def _similar_bound(self, i: int) -> float:
        """beta * flops_i / (best FLOP/s among the task's similar tasks), or infinity when it has none."""
        p = self.tasks[i]
        peers = [q for q in self.tasks if p.group and q.group == p.group and q.best < NO_PROGRAM]
        if len([q for q in self.tasks if p.group and q.group == p.group]) <= 1 or not peers:
            return math.inf
        speed = max(q.flops / q.best for q in peers)
        return self.options.beta * p.flops / speed if speed > 0 else math.inf

    # ------------------------------------------------------------------ running
    def round_size(self, budget: int) -> int:
        return round_size(self.options.per_round, budget, len(self.tasks))

    def run_round(self, i: int, n: int) -> int:
        """Give task i one round of n programs; returns how many were measured."""
        return self.account(i, self.tuners[i].step(n))

    def account(self, i: int, recs: list) -> int:
        """Task i's round came back with `recs`: its history, death, the curve."""
        p, tuner = self.tasks[i], self.tuners[i]
        before = p.best
        p.trials += len(recs)
        best = tuner.result.best_seconds
        best = best if math.isfinite(best) else NO_PROGRAM
        p.history.append(min(best, before))
        if p.history[-1] < before:
            p.best_trial = p.trials
        self.rounds.append(i)
        self._maybe_kill(p, tuner, len(recs))
        value = self.value()
        self.curve.append((self.total_trials, value))
        if value < self.best_objective:
            self.best_objective, self.best_objective_trial = value, self.total_trials
        return len(recs)

    def _maybe_kill(self, p: TaskProgress, tuner, measured: int) -> None:
        es = self.options.per_task_early_stopping
        if measured == 0 or getattr(tuner, "exhausted", False) or getattr(tuner, "finished", False):
            p.dead = True                          # nothing new to measure
        elif p.best >= NO_PROGRAM and len(p.history) >= 2:
            p.dead = True                          # no valid program in two rounds
        elif es is not None and p.trials - p.best_trial > es:
            p.dead = True

    def run(self, trials: int, on_round=None) -> None:
        """Measure up to `trials` more programs across the tasks (fewer when every task is dead or the global
        early stopping triggers). on_round(scheduler, task index) is called after each round."""
        limit, n = self.total_trials + trials, self.round_size(trials)
        self._start_clock()
        while self.total_trials < limit:
            if self._stop_early():
                break
            i = self.next_task()
            if i is None or self._would_overrun(i):
                break
            started = time.monotonic()
            self.run_round(i, min(n, limit - self.total_trials))
            self._round_seconds[i] = time.monotonic() - started
            if on_round is not None:
                on_round(self, i)

    def run_overlapped(self, trials: int, pipeline, in_flight: int, on_round=None) -> None:
        """run() with up to `in_flight` rounds of different tasks measured at once: pipeline.begin(i, n) searches
        and submits task i's round (a token, or None when its space is exhausted), pipeline.wait(tokens) blocks
        until some are complete, pipeline.finish(token) records one and returns its records."""
        limit, n = self.total_trials + trials, self.round_size(trials)
        self._start_clock()
        flying: dict = {}   # token -> (task, programs asked for)
        while True:
            while len(flying) < max(1, in_flight) and not self._stop_early():
                left = limit - self.total_trials - sum(k for _, k in flying.values())
                i = self.next_task(busy={t for t, _ in flying.values()}) if left > 0 else None
                if i is None:
                    break
                token = pipeline.begin(i, min(n, left))
                if token is None:
                    self.account(i, [])   # nothing new in its space: dead
                    if on_round is not None:
                        on_round(self, i)
                else:
                    flying[token] = (i, min(n, left))
            if not flying:
                break
            for token in pipeline.wait(list(flying)):
                i, _ = flying.pop(token)
                self.account(i, pipeline.finish(token))
                if on_round is not None:
                    on_round(self, i)

    def _start_clock(self) -> None:
        budget = self.options.time_budget
        self._deadline = time.monotonic() + budget if budget is not None else math.inf

    def _would_overrun(self, i: int) -> bool:
        """Task i's round would end after the time budget, judged by its last round (else the median round):
        one task's first round can take minutes (a large group's renders), and the budget is the user's."""
        if self._deadline == math.inf:
            return False
        took = sorted(self._round_seconds.values())
        guess = self._round_seconds.get(i, took[len(took) // 2] if took else 0.0)
        return time.monotonic() + guess > self._deadline

    def _stop_early(self) -> bool:
        if time.monotonic() >= self._deadline:   # rounds in flight still land; the final re-timing follows
            return True
        es = self.options.early_stopping
        return es is not None and all(p.best < NO_PROGRAM for p in self.tasks) and \
            self.total_trials - self.best_objective_trial >= es


def _restore(p: TaskProgress, tuner, per_round: int) -> None:
    """A resumed tuner's counts and curve, rebuilt from its records in chunks of per_round."""
    recs = [r for r in getattr(tuner.result, "records", []) if getattr(r, "note", "") != "retime"]
    best = NO_PROGRAM
    for k, r in enumerate(recs, 1):
        if r.ok and not getattr(r, "lower_bound", False):
            if r.median < best:
                best, p.best_trial = r.median, k
        if k % per_round == 0 or k == len(recs):
            p.history.append(best)
    p.trials = len(recs)


__all__ = ["SchedulerOptions", "TaskProgress", "TaskScheduler", "similarity_group"]
