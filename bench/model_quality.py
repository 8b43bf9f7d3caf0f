"""Cost-model quality on held-out records: train on 80% of a log's records, report pairwise ranking accuracy
and top-k recall on the other 20% (the paper reports 0.85 pairwise accuracy on ResNet-50 programs).

    python bench/model_quality.py LOG [LOG ...]          # logs from `ansorc tune` / bench/search_ablation.py
    python bench/model_quality.py --make 384             # tune GMM 512 and C2D for 384 trials first
"""
from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ansorc import workloads  # noqa: E402
from ansorc.ir.dag import ComputeDAG  # noqa: E402
from ansorc.measure.record import load  # noqa: E402
from ansorc.search.cost_model import LGBModel  # noqa: E402
from ansorc.search.task import SearchTask  # noqa: E402
from ansorc.search.tuner import tune  # noqa: E402

TASKS = {"GMM 512": lambda: workloads.gmm(1, 512, 512, 512),
         "GMM 1024": lambda: workloads.gmm(1, 1024, 1024, 1024),
         "C2D 56x56x64->64 3x3": lambda: workloads.c2d(1, 56, 56, 64, 64, 3, 1, 1)}


def pairwise_accuracy(pred: np.ndarray, true: np.ndarray) -> float:
    i, j = np.triu_indices(len(true), 1)
    keep = true[i] != true[j]
    return float(np.mean(np.sign(pred[i] - pred[j])[keep] == np.sign(true[i] - true[j])[keep]))


def recall_at_k(pred: np.ndarray, true: np.ndarray, k: int) -> float:
    k = min(k, len(true))
    return len(set(np.argsort(-pred)[:k]) & set(np.argsort(-true)[:k])) / k


def evaluate_log(path: str, dags: dict, seed: int = 0) -> None:
    # early-cut records are included: their cost is a lower bound, but all of them are far from the best
    recs = [r for r in load(path) if r.workload_key in dags and r.ok]
    by_wk: dict = {}
    for r in recs:
        by_wk.setdefault(r.workload_key, []).append(r)
    for wk, rs in by_wk.items():
        random.Random(seed).shuffle(rs)
        cut = int(0.8 * len(rs))
        train, test = rs[:cut], rs[cut:]
        model = LGBModel(warmup=1)
        model.dags[wk] = dags[wk]
        model.update(train)
        model.train()
        model.retrain_growth = float("inf")  # add the held-out features without retraining on them
        model.update(test)
        feats = [model.feats[(wk, r.steps_json)] for r in test]
        pred = model.predict_features(feats)
        true = np.array([1.0 / r.median for r in test])
        print(f"{path}: workload {wk[:12]}: train {len(train)}, test {len(test)}: pairwise accuracy "
              f"{pairwise_accuracy(pred, true):.3f}, recall@{max(1, len(test) // 10)} "
              f"{recall_at_k(pred, true, max(1, len(test) // 10)):.2f}, recall@20 {recall_at_k(pred, true, 20):.2f}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("logs", nargs="*")
    ap.add_argument("--make", type=int, default=0, help="tune the two tasks for this many trials first")
    args = ap.parse_args(argv)
    dags = {}
    logs = list(args.logs)
    for name, make in TASKS.items():
        dag = ComputeDAG(make())
        dags[dag.workload_key] = dag
        if args.make and name != "GMM 1024":
            path = f"bench/results/quality_{name.split()[0].lower()}.jsonl"
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            tune(SearchTask(dag), trials=args.make, log=path, progress=False)
            logs.append(path)
    # the model needs to train on the changed warm-up: predict uses features, not states
    for path in logs:
        evaluate_log(path, dags)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
