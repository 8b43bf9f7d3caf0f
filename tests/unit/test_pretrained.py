"""Pretrained cost models (search/pretrain.py, search/prior.py, `ansorc train-cost-model`, --cost-model).

The fixture tests/golden/records/pretrained_heldout.jsonl.gz holds corpus records of held-out groups the shipped
models never saw (ansorc/cost_model_data.py): GMM 1024 and C2D 56x56x64 1x1 on both machines, T2D 8x8x256 (an
operator left out whole) on the Zen 3. A feature change that invalidates the shipped models fails here: retrain
them (docs/cost-model.md) rather than ship models of other columns."""
import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from ansorc import workloads as W
from ansorc.cli import main
from ansorc.ir.program.dag import ComputeDAG
from ansorc.measure.record import load
from ansorc.search import pretrain as P
from ansorc.search.cost_model import LGBModel
from ansorc.search.features_table import N_FEATURES, feature_hash
from ansorc.search.prior import PretrainedModel, resolve
from ansorc.search.task import SearchTask
from ansorc.search.tuning import TuneOptions, make_cost_model

HELD_OUT = Path(__file__).resolve().parents[1] / "golden" / "records" / "pretrained_heldout.jsonl.gz"
SHIPPED = ("avx2", "avx512")
# measured with the shipped models: mean tau 0.15 (avx2: GMM 0.31, C2D -0.06, T2D 0.20) and 0.55 (avx512);
# random scores give 0 (about +-0.06 for a mean of three groups of 30-48)
TAU_BAR = 0.08


def _dags() -> dict:
    out = {}
    for op, i in (("GMM", 3), ("C2D", 1), ("T2D", 1)):
        dag = ComputeDAG(W.make(op, i))
        out[dag.workload_key] = (f"{op}/{i}", dag)
    return out


@pytest.fixture(scope="module")
def held_out() -> dict:
    records = load(HELD_OUT)
    return {fam: P.build_dataset(records, _dags(), fam) for fam in SHIPPED}


def _tau(a, b) -> float:
    s = np.sign(a[:, None] - a[None, :]) * np.sign(b[:, None] - b[None, :])
    return float(s[np.triu_indices(len(a), 1)].mean())


@pytest.mark.parametrize("family", SHIPPED)
def test_the_shipped_model_is_text_and_matches_the_current_features(family):
    path = P.shipped_path(family)
    with gzip.open(path, "rt") as f:   # a JSON line, then LightGBM's text format: nothing to unpickle
        head = json.loads(f.readline())
        assert f.readline().startswith("tree")
    assert head["feature_hash"] == feature_hash(), \
        f"{path} was trained on other features than these: retrain it (docs/cost-model.md)"
    assert head["family"] == family and head["n_features"] == N_FEATURES
    assert head["held_out"]["networks"] == ["mobilenet_v2"]
    _, booster = P.load(path)
    assert booster.num_feature() == N_FEATURES
    assert path.stat().st_size < 4 << 20


@pytest.mark.parametrize("family", SHIPPED)
def test_the_shipped_model_ranks_held_out_programs_better_than_random(family, held_out):
    ds = held_out[family]
    _, booster = P.load(P.shipped_path(family))
    scores, labels = P.predict(booster, ds.feats), ds.labels()
    assert np.isfinite(scores).all()
    groups = np.array(ds.groups)
    taus = [_tau(scores[groups == g], labels[groups == g]) for g in range(len(ds.names))]
    assert len(taus) >= 2 and np.mean(taus) > TAU_BAR, dict(zip(ds.names, taus))


def test_a_model_of_other_features_falls_back_to_cold_with_a_warning(tmp_path):
    _, booster = P.load(P.shipped_path("avx2"))
    path = tmp_path / "old.txt.gz"
    P.save(path, booster, dict(P.header("avx2", "test"), feature_hash="0" * 16))
    with pytest.raises(P.PretrainedModelMismatch, match="retrain"):
        P.load(path)
    with pytest.warns(P.PretrainedFallbackWarning, match="cold"):
        assert resolve(str(path), "avx2") == (None, None)
    model = PretrainedModel(str(path))
    with pytest.warns(P.PretrainedFallbackWarning):
        model.add_task(SearchTask(W.matmul(16, 16, 16), "avx2"))
    assert model.prior is None and model.init_model is None


def test_cost_model_option_picks_the_model():
    assert type(make_cost_model(TuneOptions(cost_model="none"))) is LGBModel
    m = make_cost_model(TuneOptions())   # default: pretrained
    assert isinstance(m, PretrainedModel)
    m.add_task(SearchTask(W.matmul(16, 16, 16), "avx512"))
    assert m.prior_header["family"] == "avx512" and m.init_model is m.prior
    path = str(P.shipped_path("avx2"))
    m = make_cost_model(TuneOptions(cost_model=path))
    m.add_task(SearchTask(W.matmul(16, 16, 16), "avx2"))
    assert m.prior_header["family"] == "avx2"
    with pytest.raises(P.PretrainedModelError, match="no such cost model file"):
        make_cost_model(TuneOptions(cost_model="/nonexistent/model.txt.gz"))


def test_the_prior_ranks_before_training_and_the_online_model_continues_from_it(held_out):
    ds = held_out["avx2"]
    records = [r for r in load(HELD_OUT) if r.isa == "avx2" and r.workload_key == ComputeDAG(W.make("GMM", 3))
               .workload_key]
    task = SearchTask(ComputeDAG(W.make("GMM", 3)), "avx2")
    model = PretrainedModel("pretrained")
    model.add_task(task)
    from ansorc.ir.schedule.state import replay
    from ansorc.ir.schedule.steps import steps_from_json
    states = [replay(task.dag, steps_from_json(r.steps)) for r in records[:8]]
    before = model.predict(task, states)
    np.testing.assert_allclose(before, P.predict(model.prior, P.build_dataset(records[:8], _dags(), "avx2").feats))
    model.warmup = 8
    model.update(records)
    assert model.booster is not None and model.booster.num_trees() > model.prior.num_trees()
    assert np.isfinite(model.predict(task, states)).all() and len(ds.feats)


def _te(tmp_path) -> str:
    p = tmp_path / "mm.te"
    p.write_text("input X: float32[8, 8]\ninput Y: float32[8, 8]\noutput Z[i, j] = sum(X[i, k] * Y[k, j])\n")
    return str(p)


@pytest.mark.parametrize("value", ["none", "pretrained", "MODEL"])
def test_cli_cost_model_reaches_the_tuner(value, tmp_path, monkeypatch):
    from ansorc.search import tuner
    seen = {}

    class Res:
        best_state, trials, best_seconds, best_gflops = object(), 1, 1e-3, 1.0

    def fake_tune(task, trials=None, log=None, options=None, backend=None):
        seen["cost_model"] = options.cost_model
        return Res()
    monkeypatch.setattr(tuner, "tune", fake_tune)
    value = str(P.shipped_path("avx2")) if value == "MODEL" else value
    rc = main(["tune", _te(tmp_path), "--log", str(tmp_path / "l.jsonl"), "--trials", "1", "--cost-model", value])
    assert rc == 0 and seen["cost_model"] == value


@pytest.mark.parametrize("content", [None, b"not a model\n"])
def test_cli_bad_cost_model_path_is_one_line_and_exit_2(content, tmp_path, capsys):
    path = tmp_path / "m.txt.gz"
    if content is not None:
        path.write_bytes(content)
    rc = main(["tune", _te(tmp_path), "--log", str(tmp_path / "l.jsonl"), "--cost-model", str(path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and str(path) in err[0] and "cost model" in err[0]


def test_train_cost_model_writes_a_loadable_model(tmp_path, monkeypatch, capsys):
    from ansorc import cost_model_data
    monkeypatch.setattr(cost_model_data, "catalogue", lambda networks=True: _dags())
    out = tmp_path / "m.txt.gz"
    rc = main(["train-cost-model", str(HELD_OUT), "-o", str(out), "--target-family", "avx512", "--rounds", "5",
               "--json"])
    assert rc == 0, capsys.readouterr().err
    head = json.loads(capsys.readouterr().out)
    assert head["family"] == "avx512" and head["programs"] > 40 and head["feature_hash"] == feature_hash()
    loaded, booster = P.load(out)
    assert loaded["rounds"] == 5 and booster.num_trees() == 5
    assert main(["train-cost-model", str(HELD_OUT), "-o", str(out), "--target-family", "cuda"]) == 2
