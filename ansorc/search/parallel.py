"""Feature extraction across processes: lowering a program is pure Python (~10 ms), and one search round
scores about a thousand of them. On a machine with many cores (the GPU machines have 16) the programs are
lowered by a pool of forked workers, which inherit the tasks' DAGs at fork and receive only step histories.
Below MIN_STATES programs, or with fewer than MIN_CPUS cores, extraction stays in this process."""
from __future__ import annotations

import multiprocessing
import os

import numpy as np

from ..ir.state import replay
from ..ir.steps import steps_from_json, steps_to_json

MIN_CPUS = 6
MIN_STATES = 64
_TASKS: dict = {}      # workload key -> (dag, hw, valid): what the forked workers inherit
_POOL = None
_POOL_KEYS: frozenset = frozenset()


def workers() -> int:
    env = os.environ.get("ANSORC_SEARCH_WORKERS")
    if env is not None:
        return max(0, int(env))
    n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return n - 1 if n >= MIN_CPUS else 0


def _extract_chunk(args) -> list:
    from .features import N_FEATURES, extract_states
    key, chunk = args
    dag, hw, valid = _TASKS[key]
    states = []
    for steps in chunk:
        try:
            states.append(replay(dag, steps_from_json(steps)))
        except Exception:  # noqa: BLE001 - a history that no longer replays scores as "no program"
            states.append(None)
    feats = iter(extract_states([s for s in states if s is not None], hw=hw, valid=valid))
    return [next(feats) if s is not None else np.zeros((0, N_FEATURES), np.float32) for s in states]


def _pool(key):
    global _POOL, _POOL_KEYS
    if _POOL is None or key not in _POOL_KEYS:
        if _POOL is not None:
            _POOL.terminate()
        _POOL = multiprocessing.get_context("fork").Pool(workers())
        _POOL_KEYS = frozenset(_TASKS)
    return _POOL


def extract_states_parallel(task, states, valid=None) -> list | None:
    """Features of `states` computed by the worker pool, or None when this machine or batch is too small."""
    n = workers()
    if n < 2 or len(states) < MIN_STATES:
        return None
    key = task.workload_key + "/" + str(task.target)
    if key not in _TASKS:
        _TASKS[key] = (task.dag, task.hw, valid)
    size = -(-len(states) // (4 * n))
    chunks = [[steps_to_json(s.steps) for s in states[i:i + size]] for i in range(0, len(states), size)]
    out = []
    for part in _pool(key).map(_extract_chunk, [(key, c) for c in chunks]):
        out += part
    return out


__all__ = ["extract_states_parallel", "workers"]
