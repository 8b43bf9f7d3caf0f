"""The workloads a pretrained cost model can learn from, and the split its shipped models are evaluated on.

A record names its workload only by key (a hash of the DAG), and replaying it into features needs the DAG, so
training looks the key up in this catalogue: every shape of the paper's table (ansorc.workloads, with and
without constant weights) and the tasks of the offline zoo's networks (ansorc.net.zoo: ResNet-18/50,
MobileNetV2, BERT-tiny, each channels-last and NCHW, with and without constant weights). Records of other
workloads are skipped (counted in the training report).

Held-out split (HOLDOUT; the shipped models never saw these, bench/pretrained_eval.py evaluates on them):
- a whole operator: T2D (transposed conv2d, all four shapes);
- single shapes of ops otherwise trained on: C2D #1 (56x56x64 -> 64, 1x1), GMM #3 (1024^3), SFM #2 (1024^2);
- a whole network: every task of MobileNetV2 (depthwise and pointwise convs, ReLU6, the head).
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

HOLDOUT_OPS = ("T2D",)
HOLDOUT_SHAPES = (("C2D", 1), ("GMM", 3), ("SFM", 2))
HOLDOUT_NETS = ("mobilenet_v2",)
NETWORKS = ("resnet18", "resnet50", "mobilenet_v2", "bert_tiny")


def is_held_out(name: str) -> bool:
    """name: a catalogue name, "C2D/1", "C2D/1+const" or "net:mobilenet_v2/t3_..."."""
    if name.startswith("net:"):
        return name[4:].split("/", 1)[0] in HOLDOUT_NETS
    op, idx = name.split("+", 1)[0].split("/")
    return op in HOLDOUT_OPS or (op, int(idx)) in HOLDOUT_SHAPES


@lru_cache(maxsize=2)
def catalogue(networks: bool = True) -> dict:
    """workload key -> (name, ComputeDAG). A key two entries share (a network task that is also a table shape)
    keeps the first name, the table's."""
    from .ir.program.dag import ComputeDAG
    from . import workloads as W
    out: dict = {}
    for op, (_, shapes) in W.WORKLOADS.items():
        for i in range(len(shapes)):
            tensors = W.make(op, i)
            dag = ComputeDAG(tensors)
            out.setdefault(dag.workload_key, (f"{op}/{i}", dag))
            if W.weights(tensors):
                dag = ComputeDAG(tensors, W.weights(tensors))
                out.setdefault(dag.workload_key, (f"{op}/{i}+const", dag))
    if networks:
        for net_name in NETWORKS:
            for key, item in _network_tasks(net_name).items():
                out.setdefault(key, item)
    return out


def _network_tasks(net_name: str) -> dict:
    from .net import zoo
    from .net.importer import import_model
    from .net.tasks import plan_network
    out: dict = {}
    model = getattr(zoo, net_name)()
    for layout in ("nhwc", "nchw"):
        net = import_model(model, layout=layout)
        for constants in (True, False):
            for t in plan_network(net, constants).tasks:
                out.setdefault(t.dag.workload_key, (f"net:{net_name}/{t.name}", t.dag))
    return out


def train_cost_model(logs, out, family: str | None = None, hold_out: bool = False, rounds: int | None = None,
                     progress=None) -> dict:
    """Train a cost model on the records of `logs` (of `family`, default the most common one there) whose
    workloads the catalogue knows, and write it to `out`; hold_out: leave the HOLDOUT workloads out (as the
    shipped models do). Returns the header written. PretrainedModelError when nothing is left to learn from."""
    from collections import Counter

    from .measure.record import load
    from .search import pretrain as P
    records = [r for path in logs for r in load(path)]
    if family is None:
        fams = Counter(P.family_of(r.target, r.isa) for r in records if r.ok)
        if not fams:
            raise P.PretrainedModelError("the logs hold no measured program")
        family = fams.most_common(1)[0][0]
    ds = P.build_dataset(records, catalogue(), family, progress)
    if hold_out:
        ds = ds.subset(lambda name: not is_held_out(name.split("@")[0]))
    if not ds.feats:
        raise P.PretrainedModelError(f"no record of the logs is a {family} program of a known workload "
                                     f"({ds.skipped} skipped)")
    rounds = rounds or P.TRAIN_ROUNDS
    params = P.prior_params(ds)
    booster = P.train(ds, rounds=rounds, params=params)
    desc = (f"{len(ds.feats)} programs of {len(ds.names)} workload groups from "
            f"{', '.join(Path(p).name for p in logs)}" + (" less the held-out split" if hold_out else ""))
    head = P.header(family, desc, rounds=rounds, params=params, groups=len(ds.names), programs=len(ds.feats),
                    held_out={"ops": HOLDOUT_OPS, "shapes": HOLDOUT_SHAPES, "networks": HOLDOUT_NETS}
                    if hold_out else None)
    P.save(out, booster, head)
    return head


__all__ = ["train_cost_model", "catalogue", "is_held_out", "HOLDOUT_OPS", "HOLDOUT_SHAPES", "HOLDOUT_NETS", "NETWORKS"]
