"""The cost model ranks programs it was not trained on: trained on two thirds of a golden tuning log (C2D,
320 measured programs), scored on the held-out third. No compiler or timing needed: the labels are the log's."""
from pathlib import Path

import numpy as np

from ansorc import workloads
from ansorc.ir.schedule.state import replay
from ansorc.ir.schedule.steps import steps_from_json
from ansorc.measure.record import RETIME_NOTE, load
from ansorc.search.cost_model import LGBModel
from ansorc.search.task import SearchTask

# A C2D 56x64 tuning log (its 320 measured programs, once in bench/results/c2d.jsonl.gz).
LOG = Path(__file__).resolve().parents[2] / "tests" / "golden" / "records" / "c2d_56x64.jsonl.gz"


def pairwise_accuracy(pred, true) -> float:
    i, j = np.triu_indices(len(true), 1)
    return float(np.mean(np.sign(pred[i] - pred[j]) == np.sign(true[i] - true[j])))


def test_lgb_model_ranks_held_out_programs():
    task = SearchTask(workloads.c2d(1, 56, 56, 64, 64, 3, 1, 1))
    recs = [r for r in load(LOG) if r.ok and r.note != RETIME_NOTE and r.workload_key == task.workload_key]
    assert len(recs) >= 300, "the committed log was not found or holds another workload"
    held, train = recs[::3], [r for k, r in enumerate(recs) if k % 3]
    model = LGBModel(warmup=1)
    model.add_task(task)
    model.update(train)
    assert not {(r.workload_key, r.steps_json) for r in held} & set(model.costs)  # truly held out
    pred = model.predict(task, [replay(task.dag, steps_from_json(r.steps)) for r in held])
    acc = pairwise_accuracy(pred, np.array([1 / r.median for r in held]))
    assert acc > 0.7, f"held-out pairwise ranking accuracy {acc:.3f}"  # 0.76 when written; chance is 0.5


def test_packsum_training_converges_on_programs_of_many_stores():
    """A program of many stores (a fused group's stages): the pack-sum fit stays finite and fits the labels.
    With a hessian of w alone, groups of more than 2 / learning_rate rows diverged to inf within 150 rounds."""
    import lightgbm as lgb

    from ansorc.search.cost_model import _packsum_objective, packsum_scores
    rng = np.random.default_rng(0)
    programs = [np.repeat(rng.random((1, 8)), 32, axis=0) + rng.random((32, 8)) * 1e-3 for _ in range(60)]
    labels = rng.random(60) * 0.9 + 0.1
    groups = np.concatenate([np.full(len(f), g) for g, f in enumerate(programs)])
    params = dict(LGBModel.PARAMS, objective=_packsum_objective(groups, labels, labels))
    booster = lgb.train(params, lgb.Dataset(np.concatenate(programs).astype(np.float32), label=np.zeros(len(groups))),
                        num_boost_round=LGBModel().num_rounds)
    scores = packsum_scores(booster, programs)
    top = np.abs(scores).max()
    assert np.all(np.isfinite(scores)) and top < 10, f"diverged: max |score| {top:.3g}"
    assert np.corrcoef(scores, labels)[0, 1] > 0.9
