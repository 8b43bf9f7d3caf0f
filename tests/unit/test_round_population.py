"""A round's evolution scales with the programs it measures (search/evolution.py round_population): a network
task's first round, which measures two or three searched programs, no longer scores as many as a full round."""
import random

import numpy as np

from ansorc import workloads
from ansorc.search.evolution import SearchParams, round_population, search_round
from ansorc.search.sketch import generate_sketches
from ansorc.search.task import SearchTask


class CountingModel:
    """Scores programs by a fixed hash of their steps, counting how many it was asked for."""

    def __init__(self):
        self.scored = 0

    def predict(self, task, states):
        self.scored += len(states)
        return np.array([hash(repr(st.steps)) % 1000 / 1000 for st in states])


def test_population_follows_the_round_size_between_64_and_the_cap():
    p = SearchParams()
    assert [round_population(p, n) for n in (1, 2, 4, 8, 16, 64)] == [64, 64, 64, 128, 256, 256]
    assert round_population(SearchParams(population=32), 2) == 32          # never above the cap
    assert round_population(SearchParams(per_measured=0), 2) == 256       # 0: the fixed population


def _scored(n_measure: int, params: SearchParams) -> int:
    task = SearchTask(workloads.matmul(32, 32, 32))
    model = CountingModel()
    picked = search_round(task, model, generate_sketches(task), set(), [], n_measure, params, random.Random(0))
    assert len(picked) == n_measure
    return model.scored


def test_a_small_round_scores_a_fraction_of_what_a_full_population_does():
    small, fixed = _scored(2, SearchParams(generations=2)), _scored(2, SearchParams(generations=2, per_measured=0))
    assert small <= 64 * 3 < fixed
