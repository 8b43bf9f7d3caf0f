"""Evolutionary search guided by the cost model (Ansor section 5.1), and the pick of what to measure.

One round: initial population = fresh samples + the best measured programs; a few generations of
score-proportional selection, mutation (and optionally crossover); keep the best unmeasured programs seen;
the measured batch mixes them with a share (eps-greedy) of fresh random programs.
"""
from __future__ import annotations

import heapq
import random
from dataclasses import dataclass, replace

import numpy as np

from .annotate import sample, state_key
from .mutate import WEIGHTS, crossover, mutate


@dataclass(frozen=True)
class SearchParams:
    population: int = 256          # Ansor 2048, MetaSchedule 512: scoring runs in Python (docs/architecture.md)
    per_measured: int = 16         # a round measuring n programs evolves min(population, max(min_population, 16 n))
    min_population: int = 64
    generations: int = 4
    mutation_prob: float = 0.85
    crossover_prob: float = 0.0     # share of children made by crossover (the paper's; off by default)
    eps_greedy: float = 0.05
    init_measured_ratio: float = 0.2
    weights: tuple | None = None    # mutation weights; None: the task's policy's


def evolve(task, model, init: list, measured: set, n_out: int, params: SearchParams, rng: random.Random) -> list:
    """The n_out best-scored programs found during evolution that were never measured."""
    if n_out <= 0:
        return []
    pop = list(init)
    best: list = []          # min-heap of (score, tiebreak, key, state)
    in_best: set = set()
    weights = dict(params.weights or getattr(getattr(task, "policy", None), "weights", WEIGHTS))
    cache: dict = {}         # the model is fixed during a round: score each distinct program once
    for gen in range(params.generations + 1):
        if not pop:
            break
        keys = [state_key(st) for st in pop]
        todo = {k: st for k, st in zip(keys, pop) if k not in cache}
        if todo:
            for k, sc in zip(todo, np.asarray(model.predict(task, list(todo.values())), dtype=np.float64)):
                cache[k] = float(sc)
        scores = np.array([cache[k] for k in keys])
        for s, st, key in zip(scores, pop, keys):
            if key in measured or key in in_best:
                continue
            item = (float(s), rng.random(), key, st)
            if len(best) < n_out:
                heapq.heappush(best, item)
                in_best.add(key)
            elif item[0] > best[0][0]:
                in_best.discard(heapq.heapreplace(best, item)[2])
                in_best.add(key)
        if gen == params.generations:
            break
        pop = _next_generation(task, pop, scores, params, weights, rng)
    return [st for _, _, _, st in sorted(best, key=lambda x: -x[0])]


def _next_generation(task, pop, scores, params, weights, rng) -> list:
    w = np.maximum(scores, 0.0) + 1e-9
    cum = np.cumsum(w) / w.sum()
    out, tries = [], 0
    while len(out) < params.population and tries < params.population * 4:
        tries += 1
        parent = pop[int(np.searchsorted(cum, rng.random()))]
        if params.crossover_prob and rng.random() < params.crossover_prob:
            other = pop[int(np.searchsorted(cum, rng.random()))]
            child = crossover(task, parent, other, rng)
        elif rng.random() < params.mutation_prob:
            child = mutate(task, parent, rng, weights)
        else:
            child = parent
        if child is not None:
            out.append(child)
    return out


def round_population(params: SearchParams, n_measure: int) -> int:
    """The population of a round that measures n_measure programs: a small round (a network task's first, 8
    programs) scores fewer programs per one it measures."""
    if not params.per_measured:
        return params.population
    return min(params.population, max(params.min_population, params.per_measured * n_measure))


def search_round(task, model, sketches: list, measured: set, best_measured: list, n_measure: int,
                 params: SearchParams, rng: random.Random) -> list:
    """Programs to measure next: mostly the evolution's best, plus eps-greedy random ones."""
    n_random = max(1, int(round(params.eps_greedy * n_measure))) if n_measure > 1 else 0
    params = replace(params, population=round_population(params, n_measure))
    n_init = max(params.population - int(params.init_measured_ratio * params.population), 8)
    fresh = sample(task, n_init, seed=rng.randrange(1 << 30), sketches=sketches)
    seeds = best_measured[: int(params.init_measured_ratio * params.population)]
    evolved = evolve(task, model, fresh + seeds, measured, 2 * n_measure, params, rng)
    randoms = [s for s in fresh if state_key(s) not in measured]
    rng.shuffle(randoms)
    picked, keys = [], set()
    for pool, want in ((evolved, n_measure - n_random), (randoms, n_measure)):
        for st in pool:
            if len(picked) >= want or len(picked) >= n_measure:
                break
            k = state_key(st)
            if k not in keys and k not in measured:
                keys.add(k)
                picked.append(st)
    for st in evolved:  # fill up from the evolved list if random ones ran out
        if len(picked) >= n_measure:
            break
        k = state_key(st)
        if k not in keys and k not in measured:
            keys.add(k)
            picked.append(st)
    return picked
