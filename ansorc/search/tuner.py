"""The tuning loop: search -> build -> run -> record -> model update, resumable from the log."""
from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field

from ..codegen.pipeline import render as generate_source
from ..ir.evaluate import evaluate, random_inputs
from ..ir.state import ScheduleError, State, replay
from ..ir.steps import steps_from_json, steps_to_json
from ..measure.backend import LocalBackend
from ..measure.errors import MeasureErrorNo
from ..measure.record import RETIME_NOTE, Record, RecordLog, best, load, records_for, steps_key
from ..measure.runner import MeasureResult, Runner
from .annotate import state_key
from .cost_model import LGBModel, RandomModel
from .evolution import SearchParams, search_round
from .sketch import generate_sketches
from .task import SearchTask


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
    retimed: list = field(default_factory=list)   # (median seconds, state) of the top programs re-timed at the end
    retime_seconds: float = 0.0

    @property
    def trials(self) -> int:
        """Programs measured (the log's and this run's), not counting the final re-timings."""
        return sum(r.note != RETIME_NOTE for r in self.records)

    @property
    def best_gflops(self) -> float:
        return self.task.dag.flop_count / self.best_seconds / 1e9 if math.isfinite(self.best_seconds) else 0.0


def tune(tensors, trials: int = 64, log: str | None = None, target: str = "native", seed: int = 0,
         model: str | object = "lgbm", per_round: int = 64, early_stopping: int | None = None,
         params: SearchParams | None = None, progress: bool = True, search: str = "evolution",
         flags=None, runner_kwargs: dict | None = None, retime_top: int = 4, retime_rounds: int = 3) -> TuneResult:
    """Tune `tensors` (inputs then outputs) for `trials` measured programs; returns the best program.

    search: "evolution" (model-guided) or "random" (plain sampling). model: "lgbm", "random" or a CostModel.
    A log that already holds records of this workload is resumed: nothing is measured twice.
    At the end, the `retime_top` best programs are timed again side by side, `retime_rounds` times in turn, and
    the winner is the best of those timings (logged with note "retime"): single timings on a shared machine vary
    by up to 30%, and the fastest single timing is often a lucky one. retime_top=0 skips it."""
    task = tensors if isinstance(tensors, SearchTask) else SearchTask(tensors, target)
    params = params or SearchParams()
    rng = random.Random(seed)
    cost_model = LGBModel(seed=seed) if model == "lgbm" else RandomModel(seed) if model == "random" else model
    if hasattr(cost_model, "add_task"):
        cost_model.add_task(task)
    wk, tgt = task.workload_key, task.target
    history = records_for(load(log), wk, tgt) if log else []
    measured = {r.steps_json for r in history}
    cost_model.update(history)
    result = TuneResult(task, None, math.inf, list(history))
    best_states: list = []  # (seconds, state) of measured programs, best first
    for r in best(history, wk, tgt, k=256):
        try:
            best_states.append((r.median, replay(task.dag, steps_from_json(r.steps))))
        except ScheduleError:
            continue
    if best_states:
        result.best_seconds, result.best_state = best_states[0]
    sketches = generate_sketches(task)
    inputs = random_inputs(task.dag.inputs, seed)
    reference = evaluate(list(task.dag.outputs), inputs)
    runner = Runner([inputs[t.name] for t in task.dag.inputs], [reference[t.name] for t in task.dag.outputs],
                    **(runner_kwargs or {}))
    from ..codegen.target import Target
    tgt_obj = Target.from_name(task.target)
    if not tgt_obj.runs_here():
        raise ValueError(f"target {task.target!r} cannot be measured on this machine ({tgt_obj.arch}, "
                         f"{tgt_obj.isa}); tune on the target machine")
    backend = LocalBackend(runner, target_flags=flags or tgt_obj.flags, cc=tgt_obj.cc)
    record_log = RecordLog(log) if log else None
    done = sum(r.note != RETIME_NOTE for r in history)
    bar = _progress(progress, trials, done)
    entry_names: dict = {}  # steps_json -> the entry name it was built under, so re-timing hits the build cache
    last_improved = done
    try:
        while done < trials:
            t0 = time.perf_counter()
            n = min(per_round, trials - done)
            seeds = [s for _, s in best_states]
            if search == "random":
                from .annotate import sample
                cands = [s for s in sample(task, n + len(measured), seed=rng.randrange(1 << 30),
                                           sketches=sketches) if state_key(s) not in measured][:n]
            else:
                cands = search_round(task, cost_model, sketches, measured, seeds, n, params, rng)
            if not cands:
                break
            sources, states, failed = [], [], []
            for k, st in enumerate(cands):
                try:
                    sources.append(generate_source(task.dag, st, f"cand_{done + k}", task.target))
                    states.append(st)
                except (ScheduleError, ValueError, KeyError, NotImplementedError) as e:
                    failed.append((st, f"{type(e).__name__}: {e}"))
            t1 = time.perf_counter()
            builds = backend.build(sources)
            t2 = time.perf_counter()
            results = backend.run(builds, result.best_seconds if math.isfinite(result.best_seconds) else None)
            t3 = time.perf_counter()
            recs = [Record.from_measure(wk, tgt, steps_to_json(st.steps), res, task.dag.flop_count)
                    for st, res in zip(states, results)]
            recs += [Record.from_measure(wk, tgt, steps_to_json(st.steps),
                                         MeasureResult((), MeasureErrorNo.INSTANTIATION_ERROR, msg, 0.0, time.time()),
                                         task.dag.flop_count) for st, msg in failed]
            if record_log:
                record_log.append(recs)
            entry_names.update((rec.steps_json, src.entry) for src, rec in zip(sources, recs))
            for st, rec in zip(states + [s for s, _ in failed], recs):
                measured.add(rec.steps_json)
                if rec.ok and not rec.lower_bound:
                    best_states.append((rec.median, st))
                    if rec.median < result.best_seconds:
                        result.best_seconds, result.best_state = rec.median, st
                        last_improved = done + len(recs)
            best_states.sort(key=lambda x: x[0])
            del best_states[256:]
            result.records += recs
            done += len(recs)
            t4 = time.perf_counter()
            cost_model.update(recs)
            t5 = time.perf_counter()
            result.overhead_seconds += (t1 - t0) + (t5 - t4)
            result.build_seconds += t2 - t1
            result.run_seconds += t3 - t2
            result.curve.append((done, result.best_gflops))
            bar.update(len(recs), result.best_gflops)
            if early_stopping is not None and done - last_improved >= early_stopping:
                break
        if retime_top > 1 and len(best_states) > 1 and len(result.records) > len(history):
            t0 = time.perf_counter()
            recs = _retime(task, backend, best_states[:retime_top], retime_rounds, entry_names)
            if record_log and recs:
                record_log.append([rec for _, _, rec in recs])
            result.records += [rec for _, _, rec in recs]
            result.retimed = sorted(((sec, st) for sec, st, _ in recs), key=lambda x: x[0])
            if result.retimed:
                result.best_seconds, result.best_state = result.retimed[0]
            result.retime_seconds = time.perf_counter() - t0
            bar.update(0, result.best_gflops, f", re-timed top {len(result.retimed)}")
    finally:
        bar.close()
        backend.close()
    return result


def _retime(task: SearchTask, backend: LocalBackend, top: list, rounds: int, names: dict | None = None) -> list:
    """Time the `top` (seconds, state) programs again in turn, `rounds` times, in one worker: [(median of all
    their repeats, state, Record)] for those that ran cleanly every time."""
    names = names or {}
    steps = [steps_to_json(st.steps) for _, st in top]
    sources = [generate_source(task.dag, st, names.get(steps_key(sj), f"top_{i}"), task.target)
               for i, ((_, st), sj) in enumerate(zip(top, steps))]
    builds = backend.build(sources)
    costs: list = [[] for _ in top]
    walls = [0.0 for _ in top]
    clean = [b.ok for b in builds]
    for _ in range(max(1, rounds)):
        for i, b in enumerate(builds):
            if clean[i]:
                res = backend.run([b], early_cut=False)[0]
                clean[i] = res.ok and not res.lower_bound
                costs[i] += res.costs
                walls[i] += res.all_cost - b.build_seconds
    out = []
    session = time.time()  # one timestamp for the whole session: best() ranks by the latest session
    for (_, st), sj, cs, wall, ok, b in zip(top, steps, costs, walls, clean, builds):
        if ok and cs:
            res = MeasureResult(tuple(cs), MeasureErrorNo.NO_ERROR, "", wall + b.build_seconds, session, False, 0)
            rec = Record.from_measure(task.workload_key, task.target, sj, res, task.dag.flop_count,
                                      note=RETIME_NOTE)
            out.append((rec.median, st, rec))
    return out


class _progress:
    """A tqdm bar showing trials and the best GFLOP/s so far (silent when disabled)."""

    def __init__(self, enabled: bool, total: int, initial: int):
        self.bar = None
        if enabled:
            from tqdm import tqdm
            self.bar = tqdm(total=total, initial=initial, unit="trial", desc="tuning", dynamic_ncols=True)

    def update(self, n: int, gflops: float, note: str = "") -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(f"best {gflops:.1f} GFLOP/s{note}")
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


__all__ = ["tune", "TuneResult", "steps_key"]
