"""With a fixed seed and a deterministic measurer, every tuning driver measures the same programs in the same
order as the golden (tests/golden/tuner_order.json): a refactor of the drivers must not change what they search.
The fake backend times a program by a hash of its C text, so the order depends on the search and the renders only
(render changes show in tests/golden/render first). The search sizes parallel loops by the core count: the golden
holds on 2-core machines (CI's). ANSORC_UPDATE_GOLDEN=1 rewrites the golden."""
import hashlib
import json
import os
import time
from pathlib import Path

import pytest

from ansorc import workloads
from ansorc.measure.builder import BuildResult
from ansorc.measure.errors import MeasureErrorNo
from ansorc.measure.record import steps_key
from ansorc.measure.runner import MeasureResult
from ansorc.search import multi
from ansorc.search.multi import tune_tasks
from ansorc.search.task import SearchTask
from ansorc.search.tuner import tune
from ansorc.search.tuning import tune_options

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "tuner_order.json"


class HashTimed:
    """A synchronous backend whose timing of a program is a function of its text alone."""

    def build(self, sources):
        return [BuildResult(s, f"/fake/{s.key}.so", MeasureErrorNo.NO_ERROR, "", 0.0) for s in sources]

    def run(self, builds, task=None, **kw):
        out = []
        for b in builds:
            h = int(hashlib.sha256(b.source.code.encode()).hexdigest()[:8], 16)
            out.append(MeasureResult((1e-4 * (1 + h / 2 ** 32),), MeasureErrorNo.NO_ERROR, "", 0.0, time.time()))
        return out

    def close(self):
        pass


def order(records) -> list:
    keys = [steps_key(r.steps) for r in records]
    return [hashlib.sha256(k.encode()).hexdigest()[:12] for k in keys]


def tasks():
    # a named ISA, not "native": the C text (and so the fake timings) must not depend on the machine's
    return [SearchTask(workloads.matmul(64, 64, 64), "avx2"),
            SearchTask(workloads.WORKLOADS["C2D"][0](1, 14, 14, 16, 16, 3, 1, 1), "avx2")]


def runs(model: str, monkeypatch) -> dict:
    # cost_model="none": the golden pins the cold tuner (a pretrained prior would reorder "lgbm")
    opts = dict(seed=3, model=model, progress=False, retime_top=0, per_round=8, cost_model="none")
    one = tune(tasks()[0], trials=24, backend=HashTimed(), options=tune_options(**opts))
    sched = tune_tasks(tasks(), trials=32, backend=HashTimed(), options=tune_options(**opts))
    # round-robin, the driver making its own backends (the "tune_tasks" entry: a per-task driver before)
    monkeypatch.setattr(multi, "local_backend", lambda target, options: HashTimed())
    many = tune_tasks(tasks(), trials=32, strategy="round-robin", options=tune_options(**opts)).results
    return {"tune": order(one.records), "scheduler": [order(r.records) for r in sched.results],
            "scheduler_rounds": list(sched.rounds), "tune_tasks": [order(r.records) for r in many]}


@pytest.mark.parametrize("model", ["random", "lgbm"])
def test_the_drivers_measure_the_golden_programs_in_the_golden_order(model, monkeypatch):
    got = runs(model, monkeypatch)
    golden = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    if os.environ.get("ANSORC_UPDATE_GOLDEN"):
        golden[model] = got
        GOLDEN.write_text(json.dumps(golden, indent=1) + "\n")
    assert model in golden, f"{GOLDEN} has no {model!r} entry: run with ANSORC_UPDATE_GOLDEN=1"
    for k, v in golden[model].items():
        assert got.get(k) == v, f"{k}: the {model} driver measured other programs or another order"
