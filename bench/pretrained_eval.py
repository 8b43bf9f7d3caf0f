"""Offline evaluation of the pretrained cost models on the held-out groups (ansorc/cost_model_data.py says which):
noise-free, it replays recorded programs and compares predictions with the recorded times.

    python bench/pretrained_eval.py --out bench/results/pretrained.md      # avx2, avx512, cuda; ~2 min
    python bench/pretrained_eval.py --live --trials 64 --op GMM --shape 3   # a held-out task cold, then pretrained

Per held-out group (workload, machine) of data/records/corpus.jsonl.gz:
- tau: Kendall's tau of the model's scores against measured throughput (cold model, untrained: 0 expected);
- best@N: the best measured throughput among the model's first N picks, over the group's best (1.0: found it);
  random: the mean over 200 random orders, what a cold tuner's first round of random programs gets.
Online (--online K): the tuner after K measured programs of the group (drawn at random): the cold model trained
on them, the prior alone, the prior continued on them (init_model) and the two averaged (blend), scored on the
group's other programs. Averages over groups; `--seeds` draws.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ansorc.cost_model_data import catalogue, is_held_out  # noqa: E402
from ansorc.measure.record import load  # noqa: E402
from ansorc.search import pretrain as P  # noqa: E402

CORPUS = Path(__file__).resolve().parents[1] / "data" / "records" / "corpus.jsonl.gz"
PICKS = (1, 8)


def kendall_tau(a, b) -> float:
    a, b = np.asarray(a), np.asarray(b)
    s = np.sign(a[:, None] - a[None, :]) * np.sign(b[:, None] - b[None, :])
    n = len(a)
    return float(s[np.triu_indices(n, 1)].mean()) if n > 1 else 0.0


def best_at(scores, labels, n: int) -> float:
    return float(labels[np.argsort(-scores, kind="stable")[:n]].max() / labels.max())


def random_best_at(labels, n: int, rng, draws: int = 200) -> float:
    return float(np.mean([labels[rng.permutation(len(labels))[:n]].max() for _ in range(draws)]) / labels.max())


def held_out(family: str, records) -> P.Dataset:
    ds = P.build_dataset(records, catalogue(), family)
    return ds.subset(lambda name: is_held_out(name.split("@")[0]))


def groups_of(ds: P.Dataset) -> list:
    g = np.array(ds.groups)
    return [(ds.names[k], np.where(g == k)[0]) for k in range(len(ds.names)) if (g == k).sum() >= 8]


def prior_rows(ds: P.Dataset, booster, rng) -> list:
    scores, labels = P.predict(booster, ds.feats), ds.labels()
    rows = []
    for name, idx in groups_of(ds):
        s, y = scores[idx], labels[idx]
        rows.append([kendall_tau(s, y)] + [best_at(s, y, n) for n in PICKS]
                    + [random_best_at(y, n, rng) for n in PICKS])
    return rows


def online_rows(ds: P.Dataset, booster, k: int, seed: int, blend: float = 0.5) -> dict:
    """tau and best@8 on the group's unseen programs after k measured ones, per mode."""
    rng = np.random.default_rng(seed)
    out: dict = {m: [] for m in ("cold", "prior", "init", "blend")}
    for name, idx in groups_of(ds):
        if len(idx) < k + 8:
            continue
        perm = rng.permutation(idx)
        seen, rest = perm[:k], perm[k:]
        train = P.Dataset([ds.feats[i] for i in seen], [ds.costs[i] for i in seen], [0] * k, [name])
        feats, y = [ds.feats[i] for i in rest], ds.labels()[rest]
        cold = P.train(train, rounds=150, params={"seed": seed})
        cont = P.train(train, rounds=150, params={"seed": seed}, init_model=booster)
        s_cold, s_prior = P.predict(cold, feats), P.predict(booster, feats)
        scores = {"cold": s_cold, "prior": s_prior, "init": P.predict(cont, feats),
                  "blend": blend * s_cold + (1 - blend) * s_prior}
        for m, s in scores.items():
            out[m].append([kendall_tau(s, y), best_at(s, y, 8)])
    return out


def evaluate(families, k: int, seeds: int) -> list:
    records = load(CORPUS)
    lines = ["| family | held-out groups | programs | tau prior | best@1 prior | best@8 prior | best@1 random "
             "| best@8 random |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    online = [f"| family | mode | tau after {k} measured | best@8 after {k} measured |", "| --- | --- | --- | --- |"]
    for fam in families:
        t0 = time.time()
        ds = held_out(fam, records)
        path = P.shipped_path(fam)
        if path.exists():
            _, booster = P.load(path)
        else:   # the shipped recipe, trained here: why the family ships no model
            full = P.build_dataset(records, catalogue(), fam)
            train = full.subset(lambda name: not is_held_out(name.split("@")[0]))
            booster = P.train(train, params=P.prior_params(train))
            fam += " (not shipped)"
        rows = np.array(prior_rows(ds, booster, np.random.default_rng(0)))
        m = rows.mean(axis=0)
        lines.append(f"| {fam} | {len(rows)} | {len(ds.feats)} | " + " | ".join(f"{v:.3f}" for v in m) + " |")
        acc: dict = {}
        for seed in range(seeds):
            for mode, r in online_rows(ds, booster, k, seed).items():
                acc.setdefault(mode, []).extend(r)
        for mode, r in acc.items():
            if r:
                a = np.array(r).mean(axis=0)
                online.append(f"| {fam} | {mode} | {a[0]:.3f} | {a[1]:.3f} |")
        print(f"{fam}: {len(rows)} groups in {time.time() - t0:.0f} s", file=sys.stderr)
    return lines + [""] + online


def live(op: str, shape: int, trials: int, per_round: int, seed: int) -> None:
    """Tune a held-out table workload on this machine cold, then pretrained: best latency after each round."""
    import tempfile

    import ansorc
    from ansorc import workloads as W
    from ansorc.search.tuning import TuneOptions
    for mode in ("none", "pretrained"):
        with tempfile.TemporaryDirectory() as d:
            opts = TuneOptions(trials=trials, per_round=per_round, seed=seed, cost_model=mode, progress=False)
            res = ansorc.tune(W.make(op, shape), log=f"{d}/log.jsonl", options=opts)
            curve = "  ".join(f"{n}:{g:.1f}" for n, g in res.curve)
            print(f"{op}/{shape} cost_model={mode}: best {res.best_seconds * 1e3:.3f} ms; GFLOP/s by trials {curve}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--family", nargs="+", default=["avx2", "avx512", "cuda"])
    p.add_argument("--online", type=int, default=16, help="measured programs the online model has seen")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--out", help="write the markdown tables here too")
    p.add_argument("--live", action="store_true", help="tune a held-out task cold vs pretrained instead")
    p.add_argument("--op", default="GMM")
    p.add_argument("--shape", type=int, default=3)
    p.add_argument("--trials", type=int, default=64)
    p.add_argument("--per-round", type=int, default=16)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    if a.live:
        live(a.op, a.shape, a.trials, a.per_round, a.seed)
        return 0
    text = "\n".join(evaluate(a.family, a.online, a.seeds)) + "\n"
    print(text)
    if a.out:
        Path(a.out).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
