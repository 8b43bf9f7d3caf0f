"""Feature extraction and rendering across processes. Lowering a program is pure Python and one search round
scores about a thousand of them; rendering a candidate's C (lowering with every pass, then codegen) takes several
times longer, and a round renders every program it measures. On a machine with several cores both run in a pool of
forked workers, which inherit the tasks' DAGs at fork and receive only step histories; each result is what this
process would have computed (the same feature rows, the same source), while this process waits. Below MIN_CPUS
cores, or for fewer programs than MIN_STATES (features) or MIN_RENDERS (sources), the work stays in this process.
On a 2-core VM it shortens a C2D run's search (docs/perf-notes.md, "Search and measurement").
ANSORC_SEARCH_WORKERS sets the number of workers (0: none)."""
from __future__ import annotations

import multiprocessing
import hashlib
import os
import signal
import threading
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import numpy as np

from ..codegen.pipeline import render
from ..ir.schedule.state import ScheduleError, replay
from ..ir.schedule.steps import steps_from_json, steps_to_json
from .gcpolicy import use_search_thresholds

MIN_CPUS = 2
MIN_STATES = 64
MIN_RENDERS = 4
MAX_TASKS = 256        # tasks the pool knows at once
PARENT_POLL_S = 1.0    # how often a worker checks that the tuner is still there
# what makes a candidate fail to render (recorded as its error); anything else is a bug and propagates
RENDER_ERRORS = (ScheduleError, ValueError, KeyError, NotImplementedError)
_TASKS: dict = {}      # task key -> (dag, hw, valid, target): what the forked workers inherit
_POOL = None
_POOL_KEYS: frozenset = frozenset()


def workers() -> int:
    """How many worker processes: ANSORC_SEARCH_WORKERS, else one per core from MIN_CPUS cores; none inside a
    daemonic process (a multiprocessing.Pool's worker may not start processes of its own)."""
    if multiprocessing.current_process().daemon:
        return 0
    env = os.environ.get("ANSORC_SEARCH_WORKERS", "").strip()
    if env:
        if env.isdigit():
            return int(env)
        warnings.warn(f"ANSORC_SEARCH_WORKERS={env!r} is not a whole number of worker processes; using the "
                      "default (one per core)", stacklevel=2)
    n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return n if n >= MIN_CPUS else 0


def _worker_start(tuner_pid: int) -> None:
    """A worker searches with fewer garbage collections, leaves Ctrl-C to the tuner (which stops the pool) instead
    of printing a traceback of its own, and ends when the tuner is gone (killed, crashed): its copies of the
    pool's pipes would keep it waiting forever."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    use_search_thresholds()   # a worker only searches: fewer collections for its whole life (gcpolicy.py)

    def watch():
        while os.getppid() == tuner_pid:
            time.sleep(PARENT_POLL_S)
        os._exit(0)
    threading.Thread(target=watch, name="ansorc-pool-watch", daemon=True).start()


def _replayed(dag, steps):
    try:
        return replay(dag, steps_from_json(steps))
    except Exception:  # noqa: BLE001 - a history that no longer replays scores as "no program"
        return None


def _extract_chunk(args) -> list:
    from .features import N_FEATURES, extract_states
    key, chunk = args
    dag, hw, valid, _ = _TASKS[key]
    states = [_replayed(dag, steps) for steps in chunk]
    feats = iter(extract_states([s for s in states if s is not None], hw=hw, valid=valid))
    return [next(feats) if s is not None else np.zeros((0, N_FEATURES), np.float32) for s in states]


def rendered(dag, state, name: str, target) -> tuple:
    """(the state's Source, None), or (None, the error that kept it from rendering): in a worker or, where the
    pool is not used, in the tuner."""
    try:
        return render(dag, state, name, target), None
    except RENDER_ERRORS as e:
        return None, f"{type(e).__name__}: {e}"


def _render_one(args) -> tuple:
    key, steps, name = args
    dag, _, _, target = _TASKS[key]
    return rendered(dag, replay(dag, steps_from_json(steps)), name, target)


def register(task) -> str:
    """The task's key in the pool, registered with what its workers need (a pool forked before a task is
    registered is started again when that task first uses it)."""
    # the workload key ignores stage names, and steps name stages: two models' equal stems share a key but not
    # the names their steps use, so the names are part of the pool's key
    names = hashlib.sha1("\0".join(op.name for op in task.dag.ops).encode()).hexdigest()[:12]
    key = f"{task.workload_key}/{task.target}/{names}"
    if key not in _TASKS:
        if len(_TASKS) >= MAX_TASKS:   # a long-lived process tuning many computations keeps the recent ones
            close_pool()
            _TASKS.clear()
        valid = getattr(getattr(task, "policy", None), "valid", None)
        _TASKS[key] = (task.dag, task.hw, valid, task.target)
    return key


def _pool(key) -> ProcessPoolExecutor:
    global _POOL, _POOL_KEYS
    if _POOL is None or key not in _POOL_KEYS:
        close_pool()
        _POOL = ProcessPoolExecutor(workers(), mp_context=multiprocessing.get_context("fork"),
                                    initializer=_worker_start, initargs=(os.getpid(),))
        _POOL_KEYS = frozenset(_TASKS)
    return _POOL


def _mapped(key, fn, jobs: list, chunksize: int = 1) -> list | None:
    """[fn(job)] by the pool, or None if a worker died (killed, out of memory) or none could start (a process
    limit): the caller then works here."""
    try:
        return list(_pool(key).map(fn, jobs, chunksize=chunksize))
    except (BrokenProcessPool, OSError):
        close_pool()
        return None


def extract_states_parallel(task, states) -> list | None:
    """Features of `states` computed by the worker pool, or None (then computed here) when this machine or batch
    is too small or a worker died."""
    n = workers()
    if n < 2 or len(states) < MIN_STATES:
        return None
    key = register(task)
    size = -(-len(states) // (4 * n))
    chunks = [[steps_to_json(s.steps) for s in states[i:i + size]] for i in range(0, len(states), size)]
    parts = _mapped(key, _extract_chunk, [(key, c) for c in chunks])
    return None if parts is None else [f for part in parts for f in part]


def render_states_parallel(task, states, names) -> list | None:
    """[(Source, None) or (None, the error that kept it from rendering)] per state, in order, rendered by the
    worker pool (one program a job: their costs vary tenfold); None (then rendered here) when this machine or
    batch is too small or a worker died."""
    if workers() < 2 or len(states) < MIN_RENDERS:
        return None
    key = register(task)
    return _mapped(key, _render_one, [(key, steps_to_json(s.steps), nm) for s, nm in zip(states, names)])


def close_pool() -> None:
    """Stop the worker pool (a later call starts a new one)."""
    global _POOL, _POOL_KEYS
    if _POOL is not None:
        _POOL.shutdown(wait=True, cancel_futures=True)
    _POOL, _POOL_KEYS = None, frozenset()


__all__ = ["extract_states_parallel", "render_states_parallel", "close_pool", "register", "rendered", "workers",
           "RENDER_ERRORS"]
