"""PretrainedModel: the online LGBModel started from a pretrained booster (search/pretrain.py) as its prior.

Until the online model has trained (LGBModel.warmup records), candidates are ranked by the prior alone: the
first rounds are guided instead of random. From then on the online model continues boosting on top of the prior
(LightGBM init_model: the prior's trees stay, new ones fit what the measurements say it got wrong), retrained as
LGBModel is: the prior's weight fades as the online trees grow. Averaging the prior's and a cold online model's
scores ("blend", kept as mode="blend") measured within noise of it on the held-out groups with the shipped priors
and clearly worse with less regularized ones (docs/perf-notes.md). With no prior for the task's family it is
exactly LGBModel.

The options' cost_model: "none" (cold), "pretrained" (the shipped model of the target family, if there is one
and it matches the current features; else cold) or the path of a model file (`ansorc train-cost-model`).
"""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from .annotate import state_key
from .cost_model import LGBModel, packsum_scores
from .pretrain import (PretrainedFallbackWarning, PretrainedModelMismatch, family_of, load, read_header,
                       shipped_path)

MODES = ("init", "blend")
BLEND = 0.5   # blend mode: the online model's share of the score


def resolve(source, family: str):
    """(header, booster) of the prior `source` gives for `family`'s programs, or (None, None): start cold.
    A missing or unreadable explicit path raises PretrainedModelError; a model of other features warns
    (PretrainedFallbackWarning) and gives cold."""
    if source in (None, "none"):
        return None, None
    path = shipped_path(family) if source == "pretrained" else Path(source)
    if source == "pretrained" and not path.exists():
        return None, None
    try:
        head, booster = load(path)
    except PretrainedModelMismatch as e:
        warnings.warn(f"{e}; tuning starts with a cold cost model", PretrainedFallbackWarning, stacklevel=3)
        return None, None
    if head.get("family") != family:
        warnings.warn(f"{path}: a {head.get('family')} cost model used as the prior for {family} programs",
                      PretrainedFallbackWarning, stacklevel=3)
    return head, booster


def check_source(source) -> None:
    """Raise PretrainedModelError now for an explicit model path that cannot be read (not at the first task)."""
    if source not in (None, "none", "pretrained"):
        read_header(source)


class PretrainedModel(LGBModel):
    """LGBModel with a prior; one prior per model, that of the first task's target family (a model shared by
    tasks of several families gives the others the same prior, features computed for their own hardware)."""

    def __init__(self, source="pretrained", mode: str = "init", seed: int = 0, **kwargs):
        super().__init__(seed=seed, **kwargs)
        if mode not in MODES:
            raise ValueError(f"prior mode {mode!r}: expected one of {', '.join(MODES)}")
        check_source(source)
        self.source, self.mode = source, mode
        self.prior = self.prior_header = None
        self._resolved = False

    def add_task(self, task) -> None:
        super().add_task(task)
        if not self._resolved:
            self._resolved = True
            self.prior_header, self.prior = resolve(self.source, family_of(task.target))
            if self.mode == "init":
                self.init_model = self.prior

    def predict(self, task, states) -> np.ndarray:
        self.add_task(task)
        if self.prior is None or (self.booster is not None and self.mode == "init"):
            return super().predict(task, states)
        feats = self._features(task, states, getattr(getattr(task, "policy", None), "valid", None))
        prior = packsum_scores(self.prior, feats)
        if self.booster is None:
            return prior
        return np.where(prior <= -1e9, -1e9, BLEND * self.predict_features(feats) + (1 - BLEND) * prior)



def ranking_tau(pairs) -> float | None:
    """Kendall's tau-a of (predicted score, measured speed) pairs: +1 the prediction orders them exactly as
    measured, 0 no better than chance. None for fewer than two pairs. Ties count as neither (n is small)."""
    pairs = list(pairs)
    n = len(pairs)
    if n < 2:
        return None
    net = sum(np.sign(pairs[i][0] - pairs[j][0]) * np.sign(pairs[i][1] - pairs[j][1])
              for i in range(n) for j in range(i + 1, n))
    return float(net) / (n * (n - 1) / 2)


class FirstRoundRanking:
    """How well a task's prior ranked its first round: the prior's scores of the round's programs taken before
    they are measured, and once measured the Kendall tau of those scores against the measured speeds. The task
    scheduler ends a task's warm-up early where it is high (scheduler.py). Taken for a model with a prior, with or
    without online trees (shared by a run's tasks, trained on those tuned before, continuing from the prior): the
    question is whether the model that will guide the task's later rounds ranks its programs already."""

    def __init__(self):
        self.scores: dict | None = None
        self.tau: float | None = None

    def score(self, model, task, states) -> None:
        if self.tau is not None or self.scores is not None or not states or getattr(model, "prior", None) is None:
            return
        self.scores = {state_key(st): float(x) for st, x in zip(states, model.predict(task, states))}

    def measured(self, states, recs) -> None:
        scores, self.scores = self.scores, None
        if scores:
            keys = [state_key(st) for st in states]
            self.tau = ranking_tau((scores[k], -rec.median) for k, rec in zip(keys, recs)
                                   if rec.ok and not rec.lower_bound and k in scores)


__all__ = ["PretrainedModel", "resolve", "check_source", "MODES", "ranking_tau", "FirstRoundRanking"]
