"""Tuning as steps: a TaskTuner holds one task's tuning state and measures programs in a cycle of three public
steps: propose(n) searches and renders a Batch, measure(batch) builds and runs it, commit(batch, builds,
results) records it and calls the callbacks (search/callbacks.py: log, model update, progress). step(n) is
the cycle once; an overlapped driver (search/overlap.py) runs measure on a cluster between the other two.

The cost model, the measurement backend and the record log are passed in, not owned, so that a scheduler can
interleave many tasks that share one of each: every batch tells the backend its task (MeasureTask), the model
keeps each task's DAG and hardware, and the log is keyed by workload and target.
"""
from __future__ import annotations

import math
import random
import time
import warnings
from dataclasses import dataclass, field, replace

from ..codegen.pipeline import render
from ..errors import AnsorcError
from ..targets import parse, plugin
from ..ir.program.evaluate import evaluate, random_inputs
from ..ir.schedule.state import ScheduleError, State, replay
from ..ir.schedule.canonical import rename_steps
from ..ir.schedule.steps import steps_from_json, steps_to_json
from ..measure.errors import MeasureErrorNo
from ..measure.memory import check_fits
from ..measure.record import RETIME_NOTE, Record, RecordLog, best, records_for, resources_of, steps_key
from ..measure.runner import MeasureResult, RunnerConfig
from ..measure.task import MeasureTask
from .annotate import sample, state_key
from .callbacks import default_callbacks
from .cost_model import CostModel, LGBModel, RandomModel
from .evolution import SearchParams, search_round
from .gcpolicy import fewer_collections
from .parallel import register, render_states_parallel, rendered
from .prior import FirstRoundRanking, PretrainedModel
from .plausible import ImplausibleRecordWarning, claim, cpu_target, plausible
from .seeding import structure_key
from .sketch import generate_sketches
from .task import SearchTask

KEEP_BEST = 256  # measured programs kept as seeds for the evolution (and resumed from the log)
TRANSFER_TOP = 8  # the same computation's best programs under its other key, measured first (see _transfer)


@dataclass(frozen=True)
class TuneOptions:
    """How to tune one task. search: "evolution" (model-guided) or "random" (plain sampling). model: "lgbm",
    "random" or a CostModel (tune() makes it; a scheduler passes one shared model to every TaskTuner).
    cost_model: the "lgbm" model's start: "pretrained" (the shipped model of the target's family when there is
    one and it matches the current features, else cold), "none" (cold) or a model file's path (search/prior.py).
    early_stopping: stop after this many trials without a better program. flags: compiler flags instead of the
    target's. retime_top / retime_rounds: the final side-by-side re-timing (see tune). seeding: a task's first
    round also measures up to seed_programs re-targeted best programs of the nearest already-tuned task of the
    same structure, in this run or the log (search/seeding.py); a task without such a donor gets none."""
    trials: int = 64
    per_round: int = 64
    seed: int = 0
    model: object = "lgbm"
    cost_model: str = "pretrained"
    search: str = "evolution"
    params: SearchParams = field(default_factory=SearchParams)
    early_stopping: int | None = None
    progress: bool = True
    flags: tuple | None = None
    runner: RunnerConfig = field(default_factory=RunnerConfig)
    retime_top: int = 4
    retime_rounds: int = 3
    seeding: bool = True
    seed_programs: int = 4


@dataclass
class TuneResult:
    task: SearchTask
    best_state: State | None
    best_seconds: float
    records: list = field(default_factory=list)   # this run's records and the resumed ones, in order
    curve: list = field(default_factory=list)     # (trials, best GFLOP/s) after each round
    overhead_seconds: float = 0.0                 # search time outside build and run
    build_seconds: float = 0.0
    run_seconds: float = 0.0
    model_seconds: float = 0.0                    # cost model updates (part of overhead_seconds)
    retimed: list = field(default_factory=list)   # (median seconds, state) of the top programs re-timed at the end
    retime_seconds: float = 0.0

    @property
    def trials(self) -> int:
        """Programs measured (the log's and this run's), not counting the final re-timings."""
        return sum(r.note != RETIME_NOTE for r in self.records)

    @property
    def best_gflops(self) -> float:
        return self.task.dag.flop_count / self.best_seconds / 1e9 if math.isfinite(self.best_seconds) else 0.0


@dataclass
class Batch:
    """One round of a task's programs between propose and commit: those that rendered (states and their
    sources, in order) and those that did not (state, error)."""
    states: list
    sources: list
    failed: list
    search_seconds: float = 0.0   # searching and rendering it

    def __len__(self) -> int:
        return len(self.states) + len(self.failed)


def tune_options(options: TuneOptions | None = None, runner_kwargs: dict | None = None, **fields) -> TuneOptions:
    """options with `fields` replaced (None values are left out) and runner_kwargs applied to its RunnerConfig."""
    opts = replace(options or TuneOptions(), **{k: v for k, v in fields.items() if v is not None})
    if opts.flags is not None:
        opts = replace(opts, flags=tuple(opts.flags))
    return replace(opts, runner=replace(opts.runner, **runner_kwargs)) if runner_kwargs else opts


class TargetUnavailableError(AnsorcError, ValueError):
    """The target's programs cannot be measured on this machine (another ISA or architecture, no GPU)."""


def local_backend(target: str, options: TuneOptions):
    """This machine's compiler and runner for `target` (its plug-in's); TargetUnavailableError when its kernels
    cannot run here."""
    return plugin(target).local_backend(parse(target), options)


def make_cost_model(options: TuneOptions) -> CostModel:
    model, prior = options.model, options.cost_model
    if model == "lgbm":
        return LGBModel(seed=options.seed) if prior in (None, "none") else PretrainedModel(prior, seed=options.seed)
    return RandomModel(options.seed) if model == "random" else model


def measure_task(task: SearchTask, seed: int) -> MeasureTask:
    """Seeded random inputs and the numpy evaluator's outputs for them."""
    check_fits(task.dag)  # one clear line, not a MemoryError from numpy
    # the outputs let random_inputs see which integer inputs are indices, and draw those in range
    inputs = random_inputs(list(task.dag.inputs) + list(task.dag.outputs), seed)
    reference = evaluate(list(task.dag.outputs), inputs)
    cold = task.cold_inputs
    return MeasureTask([inputs[t.name] for t in task.dag.inputs], [reference[t.name] for t in task.dag.outputs],
                       key=f"{task.workload_key}/{task.target}/{seed}" + ("/cold:" + ",".join(cold) if cold else ""),
                       cold=cold)


class TaskTuner:
    """One task's tuning state: the log's records (resumed), the measured set, the best programs, the curve.
    callbacks: called by commit after each batch (default: append to `log`, then update the cost model)."""

    def __init__(self, task: SearchTask, options: TuneOptions, cost_model: CostModel, backend,
                 log: RecordLog | None = None, callbacks=None, seeds=None):
        self.task, self.options, self.model, self.backend, self.log = task, options, cost_model, backend, log
        self.callbacks = tuple(default_callbacks(log) if callbacks is None else callbacks)
        register(task)   # known to the search's worker pool before it forks (tasks tuned together: one fork)
        self.rng = random.Random(options.seed)
        logged = log.load() if log else []
        history = _believable(task, records_for(logged, task.workload_key, task.target), log)
        self.measured = {_actual_key(task, r) for r in history}  # in this DAG's names, as state_key gives
        self.result = TuneResult(task, None, math.inf, list(history))
        # (seconds, state) of measured programs, best first
        self.best_states = [(r.median, st) for r, st in _replays(task, best(history, task.workload_key,
                                                                           task.target, k=KEEP_BEST))]
        if self.best_states:
            self.result.best_seconds, self.result.best_state = self.best_states[0]
        self.resumed = len(history)
        self.done = self.result.trials
        self.last_improved = self.done
        self.exhausted = False                 # the space gave no new program
        self.entry_names: dict = {}            # steps_json -> entry name it was built under (build cache hits)
        cost_model.add_task(task)
        cost_model.update(history)
        task.policy.measured_on(backend)   # e.g. a GPU policy reads the device's own limits
        self.sketches = generate_sketches(task)
        self.measure_task = measure_task(task, options.seed)
        self.default_state = default_state(task) if options.search == "evolution" else None
        self._default_offered = False          # the default program went into a round (or was measured before)
        self.transfer = [st for st in _transfer(task, logged) if state_key(st) not in self.measured]
        # a SeedPool (search/seeding.py) asked once, for a task with no history of its own
        self.seed_pool = seeds if options.seeding and not history else None
        self.seeded: list = []                 # the re-targeted programs its first round measures
        self.ranking = FirstRoundRanking()     # how well the prior ranked the first round (scheduler's warm-up)
        self.structure = structure_key(task.dag)   # kept in its records: log records serve as seeding donors

    @property
    def finished(self) -> bool:
        stop = self.options.early_stopping
        return self.exhausted or self.done >= self.options.trials or \
            (stop is not None and self.done - self.last_improved >= stop)

    def step(self, n: int) -> list[Record]:
        """Search for, build, run and record n new programs (fewer where the space has fewer): the cycle once."""
        batch = self.propose(n)
        return [] if batch is None else self.commit(batch, *self.measure(batch))

    def propose(self, n: int) -> Batch | None:
        """The next n programs to measure, searched and rendered; None (and `exhausted` set) when the space
        gives nothing new."""
        start = time.perf_counter()
        with fewer_collections():
            cands = self._candidates(n)
            if not cands:
                self.exhausted = True
                return None
            sources, states, failed = self._render(cands)
            if not self.done:
                self.ranking.score(self.model, self.task, states)
        return Batch(states, sources, failed, time.perf_counter() - start)

    @property
    def prior_tau(self) -> float | None:
        """Kendall tau of the prior's scores against the first round's measured times (None: no prior)."""
        return self.ranking.tau

    @property
    def best_seconds(self) -> float | None:
        """The best time so far, for the backend's early cut (None while nothing ran)."""
        best = self.result.best_seconds
        return best if math.isfinite(best) else None

    def measure(self, batch: Batch) -> tuple:
        """Build and run the batch on this tuner's backend: (builds, results), one of each per rendered program."""
        r, start = self.result, time.perf_counter()
        builds = self.backend.build(batch.sources)
        built = time.perf_counter()
        results = self.backend.run(builds, self.measure_task, best_seconds=self.best_seconds)
        r.build_seconds += built - start
        r.run_seconds += time.perf_counter() - built
        return builds, results

    def commit(self, batch: Batch, builds, results) -> list[Record]:
        """Record a measured batch (the measured set, the best programs, the counters, the curve) and call the
        callbacks with its records, which it returns."""
        start = time.perf_counter()
        recs = self._record(batch.states + [st for st, _ in batch.failed],
                            list(results) + [_failure(msg) for _, msg in batch.failed],
                            [resources_of(b) for b in builds])
        self.entry_names.update((steps_key(steps_to_json(st.steps)), src.entry)
                                for src, st in zip(batch.sources, batch.states))
        self.ranking.measured(batch.states, recs)
        for callback in self.callbacks:
            callback(self, recs)
        r = self.result
        r.overhead_seconds += batch.search_seconds + (time.perf_counter() - start)
        r.curve.append((self.done, r.best_gflops))
        return recs

    def _candidates(self, n: int) -> list:
        if self.options.search == "random":
            fresh = sample(self.task, n + len(self.measured), seed=self.rng.randrange(1 << 30),
                           sketches=self.sketches)
            return [s for s in fresh if state_key(s) not in self.measured][:n]
        first = self._default_program() if n > 0 else []
        moved = self._transferred(n - len(first))
        first += [st for st in moved if not first or state_key(st) != state_key(first[0])]
        first += self._seeded(n - len(first), first)
        if n <= len(first):
            return first[:max(n, 0)]
        seeds = [s for _, s in self.best_states] + moved + self.seeded   # other key's, re-targeted: seeds too
        found = search_round(self.task, self.model, self.sketches, self.measured, seeds, n - len(first),
                             self.options.params or SearchParams(), self.rng)
        taken = {state_key(st) for st in first}
        return first + [s for s in found if state_key(s) not in taken]

    def _default_program(self) -> list:
        """[the default schedule] while it is unmeasured: what an untuned build runs is a candidate like any
        other, so a tuned log never holds only programs slower than it (and it seeds the evolution)."""
        if self._default_offered or self.default_state is None:
            return []
        self._default_offered = True
        return [] if state_key(self.default_state) in self.measured else [self.default_state]

    def _seeded(self, room: int, first: list) -> list:
        """Re-targeted programs of similar tasks (seeding.py), once: at most half the room, so the round searches."""
        pool, self.seed_pool = self.seed_pool, None
        if pool is None or room < 2:
            return []
        taken = self.measured | {state_key(st) for st in first}
        self.seeded = pool.seeds(self.task, min(self.options.seed_programs, room // 2), taken)
        return list(self.seeded)

    def _transferred(self, n: int) -> list:
        """Up to n of the programs logged for this computation without its constants, not yet measured here."""
        out, self.transfer = self.transfer[:max(n, 0)], self.transfer[max(n, 0):]
        return out

    def _render(self, cands: list) -> tuple:
        """(sources, their states, [(state, error)] of those that fail to render)."""
        names = [f"cand_{self.done + k}" for k in range(len(cands))]
        task = self.task
        results = render_states_parallel(task, cands, names) or [rendered(task.dag, st, nm, task.target)
                                                                 for st, nm in zip(cands, names)]
        sources, states, failed = [], [], []
        for st, (src, err) in zip(cands, results):
            if src is None:
                failed.append((st, err))
            else:
                sources.append(src)
                states.append(st)
        return sources, states, failed

    def _record(self, states: list, results: list, resources: list = ()) -> list:
        """The batch's records; updates the measured set, the best programs and the counters. resources: each
        build's compiler report (GPU programs), kept in its record."""
        task, r = self.task, self.result
        recs = [Record.from_measure(task.workload_key, task.target, canonical_steps(task, st), res,
                                    task.dag.flop_count, signature=task.dag.signature, structure=self.structure)
                for st, res in zip(states, results)]
        reports = list(resources) + [()] * len(recs)
        recs = [replace(rec, resources=res) if res else rec for rec, res in zip(recs, reports)]
        for st, rec in zip(states, recs):
            self.measured.add(steps_key(steps_to_json(st.steps)))
            if rec.ok and not rec.lower_bound:
                self.best_states.append((rec.median, st))
                if rec.median < r.best_seconds:
                    r.best_seconds, r.best_state = rec.median, st
                    self.last_improved = self.done + len(recs)
        self.best_states.sort(key=lambda x: x[0])
        del self.best_states[KEEP_BEST:]
        r.records += recs
        self.done += len(recs)
        return recs

    def retime(self, top: int | None = None, rounds: int | None = None) -> list[Record]:
        """Time the `top` best programs again side by side, `rounds` times in turn, and make the best of those
        timings the winner (records with note "retime"). Skipped when this run measured nothing."""
        top = self.options.retime_top if top is None else top
        rounds = self.options.retime_rounds if rounds is None else rounds
        r = self.result
        if top <= 1 or len(self.best_states) <= 1 or len(r.records) <= self.resumed:
            return []
        t0 = time.perf_counter()
        out = retime(self.task, self.backend, self.measure_task, self._retime_set(top), rounds, self.entry_names)
        recs = [rec for _, _, rec in out]
        if self.log and recs:
            self.log.append(recs)
        r.records += recs
        r.retimed = sorted(((sec, st) for sec, st, _ in out), key=lambda x: x[0])
        if r.retimed:
            r.best_seconds, r.best_state = r.retimed[0]
        r.retime_seconds = time.perf_counter() - t0
        return recs

    def _retime_set(self, top: int) -> list:
        """The `top` best programs, the last of them replaced by the default program when it is measured but not
        among them: one timing taken under load can bury it, and side by side it competes on equal terms."""
        chosen = self.best_states[:top]
        default = self.default_state
        if default is None or state_key(default) not in self.measured:
            return chosen
        if all(state_key(st) != state_key(default) for _, st in chosen):
            chosen = chosen[:max(1, top - 1)] + [(math.inf, default)]  # it takes the last slot: `top` stays the cap
        return chosen


def retime(task: SearchTask, backend, mtask: MeasureTask, top: list, rounds: int, names: dict | None = None) -> list:
    """Time the `top` (seconds, state) programs again in turn, `rounds` times, in one worker: [(median of all
    their repeats, state, Record)] for those that ran cleanly every time."""
    names = names or {}
    steps = [steps_to_json(st.steps) for _, st in top]
    sources = [render(task.dag, st, names.get(steps_key(sj), f"top_{i}"), task.target)
               for i, ((_, st), sj) in enumerate(zip(top, steps))]
    builds = backend.build(sources)
    costs: list = [[] for _ in top]
    walls = [0.0 for _ in top]
    clean = [b.ok for b in builds]
    for _ in range(max(1, rounds)):
        for i, b in enumerate(builds):
            if clean[i]:
                res = backend.run([b], mtask, early_cut=False)[0]
                clean[i] = res.ok and not res.lower_bound
                costs[i] += res.costs
                walls[i] += res.all_cost - b.build_seconds
    out = []
    session = time.time()  # one timestamp for the whole session: best() ranks by the latest session
    for (_, st), sj, cs, wall, ok, b in zip(top, steps, costs, walls, clean, builds):
        if ok and cs:
            res = MeasureResult(tuple(cs), MeasureErrorNo.NO_ERROR, "", wall + b.build_seconds, session, False, 0)
            rec = Record.from_measure(task.workload_key, task.target, canonical_steps(task, st), res,
                                      task.dag.flop_count, note=RETIME_NOTE, signature=task.dag.signature,
                                      structure=structure_key(task.dag))
            out.append((rec.median, st, rec))
    return out


def default_state(task: SearchTask):
    """The task's untuned program by its target's plug-in (None where none applies)."""
    return plugin(task.target).default_state(task)


def canonical_steps(task: SearchTask, state) -> list:
    """The steps as a log stores them: in structural names, so that they replay after a rename (canonical.py)."""
    return rename_steps(task.dag, steps_to_json(state.steps), to_canonical=True)


def _actual_key(task: SearchTask, rec: Record) -> str:
    """steps_key of a logged schedule in this task's names (logs before canonical names are already so)."""
    return steps_key(rename_steps(task.dag, rec.steps, to_canonical=False))


def _believable(task: SearchTask, history: list, log) -> list:
    """The logged history less the records claiming more than this machine could do (search/plausible.py):
    resumed, such a forged best would stand as the session's best and cut every candidate early."""
    tgt = cpu_target(task.target)
    bad = {id(r) for r in history if tgt is not None and r.ok and not plausible(task.dag, tgt, r.median)}
    if bad:
        first = next(r for r in history if id(r) in bad)
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        warnings.warn(f"{claim(log.path, first, task.dag, tgt)}{more}: not believed, left out of the resumed "
                      "history (its program may be measured again)", ImplausibleRecordWarning, stacklevel=3)
    return [r for r in history if id(r) not in bad]


def _replays(task: SearchTask, records) -> list:
    """(record, its state) for each of `records` that replays on the task's DAG."""
    out = []
    for r in records:
        try:
            out.append((r, replay(task.dag, steps_from_json(r.steps))))
        except ScheduleError:
            continue
    return out


def best_logged(records, dag, target: str, k: int = 1) -> list:
    """The k best records of `dag` among `records`; for a DAG with constant inputs and no record of its own, those
    of the same DAG without them (tuned with every input per call): their programs are valid in both modes."""
    recs = best(records, dag.workload_key, target, k=k)
    if not recs and dag.constants:
        recs = best(records, dag.with_constants(()).workload_key, target, k=k)
    return recs


def _transfer(task: SearchTask, logged) -> list:
    """States of the best programs the log holds for this task's DAG without its constants (a user who tuned
    with weights passed per call, then declared them constant). Every such program is valid here too, only
    its cost differs (what it computes from constants is made once), so they are measured again, first."""
    if not task.dag.constants or not logged:
        return []
    plain = task.dag.with_constants(())
    return [st for _, st in _replays(task, best(logged, plain.workload_key, task.target, k=TRANSFER_TOP))]


def _failure(msg: str) -> MeasureResult:
    return MeasureResult((), MeasureErrorNo.INSTANTIATION_ERROR, msg, 0.0, time.time())


__all__ = ["TuneOptions", "TuneResult", "TaskTuner", "Batch", "make_cost_model", "measure_task", "retime",
           "default_state", "best_logged", "KEEP_BEST", "tune_options", "local_backend", "TargetUnavailableError"]
