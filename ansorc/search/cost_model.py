"""Cost models: `update(records)` learns from measurements, `predict(task, states)` scores candidates.

The LightGBM model is Ansor's: features per store statement, a program's score is the sum of its statements'
predictions (pack-sum), trained on normalized throughput (best cost / cost, per workload) with the squared
error weighted by that throughput, retrained from scratch as data arrive.
"""
from __future__ import annotations

import json
import random

import numpy as np

from ..ir.schedule.state import replay
from ..ir.schedule.steps import steps_from_json


class CostModel:
    """The interface the tuner calls: add_task once per task, then update and predict. Models keep the DAGs of
    the tasks they have seen to replay records."""

    def add_task(self, task) -> None:
        """A task whose records and candidates will come (its DAG and hardware); nothing by default."""

    def update(self, records) -> None:
        raise NotImplementedError

    def predict(self, task, states) -> np.ndarray:
        raise NotImplementedError


class RandomModel(CostModel):
    def __init__(self, seed: int = 0):
        self.rng = random.Random(seed)

    def update(self, records) -> None:
        pass

    def predict(self, task, states) -> np.ndarray:
        return np.array([self.rng.random() for _ in states], dtype=np.float64)


def _packsum_objective(groups: np.ndarray, labels: np.ndarray, weights: np.ndarray):
    """Gradient and hessian of sum_g w_g (sum_{rows in g} f(row) - y_g)^2 / 2 with respect to each row.

    The hessian is the diagonal's w_g times the rows of g: a leaf holding all n rows of a program moves its sum
    n times as far as one row's Newton step would, so with w_g alone a program of more than 2 / learning_rate
    stores (a fused group's stages, cut loops) overshoots every round and the model diverges to inf (ConvNeXt's
    head, LayerNorm and pooling in 16 stores, did). With it a program's sum moves at most by the learning rate."""
    rows = np.bincount(groups, minlength=len(labels)).astype(np.float64)

    def objective(preds, _dataset):
        sums = np.bincount(groups, weights=preds, minlength=len(labels))
        resid = sums[groups] - labels[groups]
        w = weights[groups]
        return resid * w, w * rows[groups]
    return objective


def packsum_scores(booster, feats: list) -> np.ndarray:
    """Each program's score: the sum of its stores' predictions (-1e9 for a program without features)."""
    sizes = [len(f) for f in feats]
    out = np.full(len(feats), -1e9)
    ok = [f for f in feats if len(f)]
    if not ok:
        return out
    raw = booster.predict(np.concatenate(ok).astype(np.float32), raw_score=True)
    sums = np.add.reduceat(raw, np.cumsum([0] + [len(f) for f in ok])[:-1])
    out[[i for i, n in enumerate(sizes) if n]] = sums
    return out


class LGBModel(CostModel):
    """LightGBM with the pack-sum objective; retrained on all data when it has grown enough."""

    PARAMS = {"max_depth": 10, "num_leaves": 64, "learning_rate": 0.2, "min_data_in_leaf": 2,
              "min_sum_hessian_in_leaf": 1e-6, "lambda_l2": 1e-3, "verbosity": -1, "seed": 43,
              "num_threads": 1, "feature_pre_filter": False}

    def __init__(self, num_rounds: int = 150, warmup: int = 32, retrain_growth: float = 0.2, seed: int = 0):
        self.num_rounds, self.warmup, self.retrain_growth = num_rounds, warmup, retrain_growth
        self.rng = random.Random(seed)
        self.dags: dict = {}
        self.hws: dict = {}       # (workload_key, target) -> the task's HardwareParams, which the features read
        self.feats: dict = {}     # (workload_key, steps_json) -> per-store feature matrix
        self.costs: dict = {}     # (workload_key, steps_json) -> median seconds (inf if failed)
        self.booster = None
        self.init_model = None    # a booster the training continues from (a pretrained prior), else from scratch
        self._trained_on = 0

    # ------------------------------------------------------------------ data
    def add_task(self, task) -> None:
        self.dags[task.workload_key] = task.dag
        self.hws[(task.workload_key, str(task.target))] = task.hw

    def update(self, records) -> None:
        new = [r for r in records if (r.workload_key, r.steps_json) not in self.costs]
        by_key: dict = {}
        for r in new:
            if r.workload_key not in self.dags:
                continue
            by_key.setdefault((r.workload_key, r.target), []).append(r)
        for (wk, target), recs in by_key.items():
            states = []
            for r in recs:
                try:
                    states.append(replay(self.dags[wk], steps_from_json(r.steps)))
                except Exception:  # a record that no longer replays teaches nothing
                    states.append(None)
            from .features import extract_states
            feats = extract_states([s for s in states if s is not None], hw=self.hws.get((wk, target)))
            it = iter(feats)
            for r, s in zip(recs, states):
                if s is None:
                    continue
                key = (wk, r.steps_json)
                self.feats[key] = next(it)
                self.costs[key] = r.median if r.ok and not r.lower_bound else \
                    (r.median * 1.5 if r.ok else float("inf"))
        if len(self.costs) >= self.warmup and \
                len(self.costs) >= self._trained_on * (1 + self.retrain_growth):
            self.train()

    def train(self) -> None:
        import lightgbm as lgb
        keys = [k for k in self.costs if len(self.feats[k])]
        if not keys:
            return
        best = {}
        for (wk, _), c in ((k, self.costs[k]) for k in keys):
            best[wk] = min(best.get(wk, float("inf")), c)
        labels = np.array([best[k[0]] / self.costs[k] if np.isfinite(self.costs[k]) else 0.0 for k in keys])
        rows = [self.feats[k] for k in keys]
        groups = np.concatenate([np.full(len(f), g, dtype=np.int64) for g, f in enumerate(rows)])
        x = np.concatenate(rows).astype(np.float32)
        weights = np.maximum(labels, 1e-3)
        params = dict(self.PARAMS, objective=_packsum_objective(groups, labels, weights))
        data = lgb.Dataset(x, label=np.zeros(len(x)), free_raw_data=False)
        self.booster = lgb.train(params, data, num_boost_round=self.num_rounds, init_model=self.init_model)
        self._trained_on = len(keys)

    # ------------------------------------------------------------------ scoring
    def predict(self, task, states) -> np.ndarray:
        self.add_task(task)
        valid = getattr(getattr(task, "policy", None), "valid", None)
        if self.booster is None:
            scores = np.array([self.rng.random() for _ in states])
            if valid is not None:   # still drop what the device cannot run (GPU: shared memory, threads)
                feats = self._features(task, states, valid)
                scores[[i for i, f in enumerate(feats) if not len(f)]] = -1e9
            return scores
        return self.predict_features(self._features(task, states, valid))

    @staticmethod
    def _features(task, states, valid) -> list:
        from .features import extract_states
        from .parallel import extract_states_parallel
        feats = extract_states_parallel(task, states)
        return feats if feats is not None else extract_states(states, hw=task.hw, valid=valid)

    def predict_features(self, feats: list) -> np.ndarray:
        return packsum_scores(self.booster, feats)

    # ------------------------------------------------------------------ persistence
    def save(self, path) -> None:
        """An .npz of plain arrays and text (no pickle: loading a model file never runs code)."""
        keys = list(self.costs)
        feats = [self.feats[k] for k in keys]
        np.savez_compressed(
            path, booster=np.array("" if self.booster is None else self.booster.model_to_string()),
            keys=np.array(json.dumps(keys)), costs=np.array([self.costs[k] for k in keys], dtype=np.float64),
            sizes=np.array([len(f) for f in feats], dtype=np.int64),
            feats=np.concatenate(feats).astype(np.float32) if feats else np.zeros((0, 0), np.float32))

    def load(self, path) -> None:
        import lightgbm as lgb
        with np.load(path, allow_pickle=False) as data:
            keys = [tuple(k) for k in json.loads(str(data["keys"]))]
            costs, sizes, feats = data["costs"], data["sizes"], data["feats"]
            booster = str(data["booster"])
        offsets = np.concatenate([[0], np.cumsum(sizes)])
        self.costs = {k: float(c) for k, c in zip(keys, costs)}
        self.feats = {k: feats[offsets[i]:offsets[i + 1]] for i, k in enumerate(keys)}
        self.booster = lgb.Booster(model_str=booster) if booster else None
        self._trained_on = len(self.costs)
