"""The scheduler's warm-up (warmup_rounds) ends after one round for a task whose first round the prior ranked
well (prior_tau >= trust_tau), and the tau itself (search/prior.py): synthetic curves, a fake prior."""
from types import SimpleNamespace

import numpy as np
import pytest

from ansorc.search.prior import FirstRoundRanking, ranking_tau
from tests.unit.test_scheduler import CurveTuner, scheduler


class Trusted(CurveTuner):
    def __init__(self, tau, *args):
        super().__init__(*args)
        self.prior_tau = tau


def test_a_well_ranked_task_leaves_the_warm_up_after_one_round():
    tuners = [Trusted(0.8, 1.0, 0.5, 50), Trusted(0.1, 1.0, 0.5, 50), Trusted(None, 1.0, 0.5, 50)]
    s = scheduler(tuners, [1, 1, 1], opts={"warmup_rounds": 2, "trust_tau": 0.5})
    s.run(8 * 5)
    # round by round: every task once, then the second warm-up round only for the two the prior did not earn
    assert s.rounds == [0, 1, 2, 1, 2]
    assert [s.warming(i) for i in range(3)] == [False, False, False]


def test_one_warm_up_round_is_the_default():
    tuners = [Trusted(None, 1.0, 0.5, 50), Trusted(None, 1.0, 0.5, 50)]
    s = scheduler(tuners, [1, 1])
    s.run(16)
    assert s.rounds == [0, 1] and not s.warming(0)


def test_kendall_tau_of_scores_against_speeds():
    assert ranking_tau([(3, -1.0), (2, -2.0), (1, -3.0)]) == 1.0
    assert ranking_tau([(1, -1.0), (2, -2.0), (3, -3.0)]) == -1.0
    assert ranking_tau([(1, -1.0)]) is None
    assert ranking_tau([(1, -1.0), (2, -2.0), (3, -1.5), (4, -0.5)]) == pytest.approx(1 / 3)  # 4 of 6 pairs right


class FakePrior:
    """Scores a state by its number (a prior that ranks by a fixed table), with no online model yet."""
    prior, booster = object(), None

    def predict(self, task, states):
        return np.array([float(s.n) for s in states])


def state(n):
    return SimpleNamespace(n=n, steps=(), key=n)


def test_the_first_rounds_ranking_is_taken_before_measuring(monkeypatch):
    monkeypatch.setattr("ansorc.search.prior.state_key", lambda st: str(st.n))
    states = [state(1), state(2), state(3)]
    r = FirstRoundRanking()
    r.score(FakePrior(), None, states)
    recs = [SimpleNamespace(ok=True, lower_bound=False, median=m) for m in (3.0, 2.0, 1.0)]
    r.measured(states, recs)               # the highest score ran fastest: ranked right
    assert r.tau == 1.0
    r.score(FakePrior(), None, states)     # only the first round counts
    assert r.scores is None
    cold = FirstRoundRanking()
    cold.score(SimpleNamespace(prior=None), None, states)
    cold.measured(states, recs)
    assert cold.tau is None
