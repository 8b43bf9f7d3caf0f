"""The in-model check (net/in_model.py): a tuned program that loses to its default inside the model is replaced,
the log says so in a line of its own kind, and compiling with the log follows it while it still applies."""
from __future__ import annotations

import time
import warnings

import numpy as np
import pytest

from ansorc.ir.program.evaluate import evaluate
from ansorc.ir.schedule.canonical import rename_steps
from ansorc.ir.schedule.steps import steps_to_json
from ansorc.measure.record import Record, RecordLog, load, steps_key
from ansorc.net import tune as net_tune
from ansorc.net.api import build_model, schedule_groups
from ansorc.net.in_model import InModelOptions, Verdict, check_in_model, default_schedules, load_verdicts
from ansorc.net.tasks import NetworkPlan, extract_tasks
from ansorc.search.annotate import sample
from ansorc.search.task import SearchTask

from tests.net_samples import conv_mlp_softmax, convnet_fused_groups


def small_plan() -> NetworkPlan:
    """A conv big enough (3.6 MFLOP) that its loops left unscheduled run several times slower than its default."""
    net = conv_mlp_softmax(seed=1, n=1, c=16, hw=28, co=32)
    groups = convnet_fused_groups(net)
    return NetworkPlan(net, tuple(groups), tuple(extract_tasks(net, groups, True)))


def log_naive_conv(plan, log) -> str:
    """The conv task's log best: its loops as written (no steps), claimed fast. Returns its steps JSON."""
    RecordLog(log).append([Record(plan.tasks[0].workload_key, "native", "[]", (1e-6,), 0, timestamp=time.time())])
    return "[]"


def check_outputs(plan, model) -> None:
    net = plan.net
    x = np.random.default_rng(0).standard_normal(net.inputs[0].shape).astype(np.float32)
    want = evaluate(list(net.outputs), {**net.weights, net.inputs[0].name: x})
    for got, t in zip(model(x), net.outputs):
        np.testing.assert_allclose(got, want[t.name], rtol=1e-4, atol=1e-5)


def test_a_verdict_is_a_line_of_its_own_kind(tmp_path):
    log = tmp_path / "v.jsonl"
    RecordLog(log).append([Record("k1", "native", "[]", (1e-3,), 0, timestamp=1.0)])
    verdict = Verdict("k1", "native", '[["CI","#1"]]', "[]", 0.5, 0.9, "m", "", 2.0)
    RecordLog(log).append_lines([verdict.to_json(), '{"kind":"in_model","workload_key":7}'])
    with warnings.catch_warnings():
        warnings.simplefilter("error")     # a verdict is no corrupt record
        assert [r.workload_key for r in load(log)] == ["k1"]
    with pytest.warns(UserWarning, match=r"v\.jsonl:3: skipped a malformed line"):
        assert load_verdicts(log, "native") == [verdict]
    with pytest.warns(UserWarning):
        assert load_verdicts(log, "avx2") == []     # another target's verdict does not apply


def test_a_slow_tuned_program_loses_to_the_default_and_compile_follows(tmp_path):
    plan, log = small_plan(), tmp_path / "net.jsonl"
    loser = log_naive_conv(plan, log)
    won = check_in_model(plan, str(log), options=InModelOptions(rounds=5))
    conv = plan.tasks[0]
    assert list(won) == [conv.workload_key]
    [v] = load_verdicts(log, "native")
    assert v.loser == loser and v.winner_ms < v.loser_ms
    plain = default_schedules(plan, "native")
    assert v.winner == steps_key(rename_steps(conv.dag, steps_to_json(plain[conv.groups[0]].steps), True))
    schedules, tasks = schedule_groups(plan.net, list(plan.groups), str(log), tasks=plan.tasks)
    assert (tasks[0].schedule, tasks[0].in_model) == ("log", True)
    assert schedules[conv.groups[0]].steps == plain[conv.groups[0]].steps
    with build_model(plan.net, list(plan.groups), schedules, tasks=tasks) as model:
        check_outputs(plan, model)
    assert check_in_model(plan, str(log)) == {}    # settled: nothing left to compare, no second verdict
    assert len(load_verdicts(log, "native")) == 1


def test_a_verdict_is_moot_once_the_log_has_a_better_program(tmp_path):
    plan, log = small_plan(), tmp_path / "net.jsonl"
    conv = plan.tasks[0]
    RecordLog(log).append_lines([Verdict(conv.workload_key, "native", '[["CI","#1"]]', log_naive_conv(plan, log),
                                         0.3, 3.0, "convnet", "", time.time()).to_json()])
    [state] = sample(SearchTask(conv.dag, "native"), 1, seed=5)
    steps = rename_steps(conv.dag, steps_to_json(state.steps), to_canonical=True)
    RecordLog(log).append([Record(conv.workload_key, "native", steps_key(steps), (1e-7,), 0, timestamp=time.time())])
    schedules, tasks = schedule_groups(plan.net, list(plan.groups), str(log), tasks=plan.tasks)
    assert (tasks[0].schedule, tasks[0].in_model) == ("log", False)
    assert schedules[conv.groups[0]].steps == state.steps


def test_tune_network_checks_in_the_model_unless_told_not_to(tmp_path, monkeypatch):
    calls = []

    def fake_check(plan, log, target, options, default):
        calls.append((default is not None and callable(default.profile), options))
        return {plan.tasks[0].workload_key: "the default"}
    monkeypatch.setattr(net_tune, "check_in_model", fake_check)
    plan = small_plan()
    run = net_tune.tune_network(plan, 2, str(tmp_path / "a.jsonl"), options=net_tune.TuneOptions(progress=False))
    assert calls == [(True, InModelOptions())]
    assert run.best_states()[plan.tasks[0].workload_key] == "the default"
    net_tune.tune_network(plan, 2, str(tmp_path / "b.jsonl"), options=net_tune.TuneOptions(progress=False),
                          in_model=None)
    assert len(calls) == 1


def test_the_check_keeps_its_share_of_a_time_budget(tmp_path, monkeypatch):
    """The default library is built before the search; the search gets the budget less that build and a reserve
    for the tuned library's build and the profiled runs."""
    budgets = []

    def fake_tune_tasks(*a, time_budget=None, **k):
        budgets.append(time_budget)
        raise KeyboardInterrupt    # stop here: only the budget handed to the search matters
    monkeypatch.setattr(net_tune, "tune_tasks", fake_tune_tasks)
    plan = small_plan()
    for check in (InModelOptions(), None):
        with pytest.raises(KeyboardInterrupt):
            net_tune.tune_network(plan, 2, str(tmp_path / "a.jsonl"), time_budget=100.0, in_model=check)
    with_check, without = budgets
    assert 0 < with_check < without - 1.0 and without > 99.0
