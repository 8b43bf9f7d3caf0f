"""Pretrained cost models: train LightGBM offline on measured records, ship it, start tuning from it.

Training replays each record into the features the online LGBModel uses (features.py, with the hardware of the
record's target family) and fits the same pack-sum objective, labels normalized per group (workload, target,
ISA): best time / time, since absolute times of different machines do not compare.

A model file is gzipped text: one JSON header line (format, feature version and hash, target family, what it
was trained on), then LightGBM's own text format (Booster.model_to_string). Loading never unpickles. A model
whose feature hash differs from the current features' describes other columns: PretrainedModelMismatch, and the
tuner falls back to the cold model with a warning (see resolve).
"""
from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import AnsorcError
from .cost_model import LGBModel, _packsum_objective
from .features_table import FEATURE_VERSION, N_FEATURES, feature_hash

FORMAT = "ansorc-cost-model"
FAMILIES = ("avx2", "avx512", "neon", "cuda")
DATA_DIR = Path(__file__).resolve().parents[1] / "data"
TRAIN_ROUNDS = 200
# Shallower, slower-learning trees with bigger leaves than the online model's (LGBModel.PARAMS): thousands of
# programs of many workloads, and a prior must carry over to workloads it never saw. Picked among 4 settings by
# held-out tau (figures: docs/perf-notes.md, "Pretrained cost models, offline"; docs/cost-model.md, "Training").
PRETRAIN_PARAMS = {"learning_rate": 0.1, "max_depth": 6, "num_leaves": 31, "min_data_in_leaf": 100,
                   "lambda_l2": 1.0}


def prior_params(ds: "Dataset") -> dict:
    """PRETRAIN_PARAMS for ds: leaves of 100 stores from 5,000 stores up (the corpus's families have 8,000 and
    more), fewer below, so that a small log still gives trees that split."""
    rows = sum(len(f) for f in ds.feats)
    return dict(PRETRAIN_PARAMS, min_data_in_leaf=min(PRETRAIN_PARAMS["min_data_in_leaf"], max(2, rows // 50)))


class PretrainedModelError(AnsorcError, ValueError):
    """A cost model file that cannot be read (missing, not a model file)."""


class PretrainedModelMismatch(PretrainedModelError):
    """A model trained on other features than this ansorc computes."""


class PretrainedFallbackWarning(UserWarning):
    """A pretrained model was asked for but cannot be used; the tuner starts cold."""


def shipped_path(family: str) -> Path:
    return DATA_DIR / f"cost_model_{family}.txt.gz"


def family_of(target: str, isa: str = "") -> str:
    """The family of a target's programs: "cuda" or its CPU ISA (a "native" record names the ISA it ran on)."""
    from ..targets import parse
    if str(target).split(":")[0] == "cuda":
        return "cuda"
    if str(target) == "native" and isa:
        return isa
    return parse(target).isa


def family_hw(family: str):
    """The hardware the features of a family's programs are computed for (its target's HardwareParams)."""
    from .task import hardware_params
    return hardware_params(family)


# ----------------------------------------------------------------------------- training data

@dataclass
class Dataset:
    """Programs with their per-store features: feats[i] is [stores, N_FEATURES], costs[i] seconds, groups[i]
    the index of its (workload, target, ISA) group in names."""
    feats: list = field(default_factory=list)
    costs: list = field(default_factory=list)
    groups: list = field(default_factory=list)
    names: list = field(default_factory=list)
    skipped: int = 0   # records of unknown workloads, failed or not replaying

    def labels(self) -> np.ndarray:
        """best / cost per group (1 for a group's best program)."""
        costs, groups = np.array(self.costs), np.array(self.groups)
        best = np.full(len(self.names), np.inf)
        np.minimum.at(best, groups, costs)
        return best[groups] / costs

    def subset(self, keep) -> "Dataset":
        """The groups whose name keep(name) accepts."""
        out = Dataset(skipped=self.skipped)
        remap = {}
        for g, name in enumerate(self.names):
            if keep(name):
                remap[g] = len(out.names)
                out.names.append(name)
        for f, c, g in zip(self.feats, self.costs, self.groups):
            if g in remap:
                out.feats.append(f)
                out.costs.append(c)
                out.groups.append(remap[g])
        return out


def build_dataset(records, dags: dict, family: str, progress=None) -> Dataset:
    """Replay `records` of `family` whose workload key `dags` knows (key -> (name, DAG)) into features.
    Records that failed, are lower bounds or re-timings teach nothing here and are skipped."""
    from ..ir.schedule.state import replay
    from ..ir.schedule.steps import steps_from_json
    from .features import extract_states
    hw = family_hw(family)
    by_group: dict = {}
    ds = Dataset()
    for r in records:
        if not r.ok or r.lower_bound or r.note == "retime" or family_of(r.target, r.isa) != family \
                or r.workload_key not in dags:
            ds.skipped += 1
            continue
        by_group.setdefault((r.workload_key, r.target, r.isa), {}).setdefault(r.steps_json, r)
    for n, ((wk, target, _), recs) in enumerate(sorted(by_group.items())):
        name, dag = dags[wk]
        states, costs = [], []
        for r in recs.values():
            try:
                states.append(replay(dag, steps_from_json(r.steps)))
                costs.append(r.median)
            except Exception:  # noqa: BLE001 - a schedule this ansorc no longer replays teaches nothing
                ds.skipped += 1
        feats = extract_states(states, hw=hw)
        g = len(ds.names)
        ds.names.append(f"{name}@{target}")
        for f, c in zip(feats, costs):
            if len(f):
                ds.feats.append(f)
                ds.costs.append(c)
                ds.groups.append(g)
            else:
                ds.skipped += 1
        if progress:
            progress(n + 1, len(by_group), name)
    return ds


def train(ds: Dataset, rounds: int = TRAIN_ROUNDS, params: dict | None = None, init_model=None):
    """A LightGBM booster fit to ds with the pack-sum objective (cost_model.py), throughput-weighted; params
    over LGBModel.PARAMS (pass PRETRAIN_PARAMS for a prior)."""
    import lightgbm as lgb
    labels = ds.labels()
    groups = np.concatenate([np.full(len(f), i, dtype=np.int64) for i, f in enumerate(ds.feats)])
    x = np.concatenate(ds.feats).astype(np.float32)
    p = dict(LGBModel.PARAMS, **(params or {}))
    p["objective"] = _packsum_objective(groups, labels, np.maximum(labels, 1e-3))
    return lgb.train(p, lgb.Dataset(x, label=np.zeros(len(x)), free_raw_data=False), num_boost_round=rounds,
                     init_model=init_model)


def predict(booster, feats: list) -> np.ndarray:
    """Pack-sum scores (higher: faster) of programs given as per-store feature matrices."""
    m = LGBModel.__new__(LGBModel)
    m.booster = booster
    return m.predict_features(feats)


# ----------------------------------------------------------------------------- files

def header(family: str, description: str, **extra) -> dict:
    return {"format": FORMAT, "feature_version": FEATURE_VERSION, "feature_hash": feature_hash(),
            "n_features": N_FEATURES, "family": family, "trained_on": description, **extra}


def save(path, booster, head: dict) -> None:
    text = json.dumps(head, sort_keys=True) + "\n" + booster.model_to_string()
    Path(path).write_bytes(gzip.compress(text.encode(), mtime=0))


def read_header(path) -> dict:
    try:
        with gzip.open(path, "rt") as f:
            head = json.loads(f.readline())
    except FileNotFoundError:
        raise PretrainedModelError(f"{path}: no such cost model file") from None
    except (OSError, ValueError, EOFError) as e:
        raise PretrainedModelError(f"{path}: not a cost model file ({e})") from None
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        raise PretrainedModelError(f"{path}: not a cost model file (no {FORMAT} header)")
    return head


def load(path, check: bool = True):
    """(header, Booster) of a model file; check: raise PretrainedModelMismatch unless its features are ours."""
    import lightgbm as lgb
    head = read_header(path)
    if check and head.get("feature_hash") != feature_hash():
        raise PretrainedModelMismatch(
            f"{path}: trained on features {head.get('feature_hash')} (version {head.get('feature_version')}), "
            f"this ansorc computes {feature_hash()} (version {FEATURE_VERSION}); retrain it with "
            "`ansorc train-cost-model`")
    with gzip.open(path, "rt") as f:
        f.readline()
        text = f.read()
    try:
        return head, lgb.Booster(model_str=text)
    except Exception as e:  # noqa: BLE001 - LightGBM's parse errors, one line
        raise PretrainedModelError(f"{path}: the LightGBM model does not parse ({e})") from None


__all__ = ["Dataset", "build_dataset", "train", "predict", "save", "load", "read_header", "header", "family_of",
           "shipped_path", "FAMILIES", "PretrainedModelError", "PretrainedModelMismatch",
           "PretrainedFallbackWarning"]
