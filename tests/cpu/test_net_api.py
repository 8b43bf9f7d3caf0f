"""ansorc.net.compile and schedule_groups: schedules from a log, the default otherwise, one error for trials."""
from __future__ import annotations

import sys
import time
import types

import numpy as np
import pytest

import ansorc.net
import ansorc.net.tune
from ansorc.ir.schedule.canonical import rename_steps
from ansorc.ir.program.evaluate import evaluate
from ansorc.ir.schedule.steps import steps_to_json
from ansorc.measure.record import Record, RecordLog, steps_key
from ansorc.net.api import build_model, schedule_groups
from ansorc.net.network import NetError, group_dag
from ansorc.search.annotate import sample
from ansorc.search.task import SearchTask

from tests.net_samples import chain, conv_mlp_softmax, convnet_fused_groups, one_group_per_op


def check(net, model, seed=0):
    x = np.random.default_rng(seed).standard_normal(net.inputs[0].shape).astype(np.float32)
    want = evaluate(list(net.outputs), {**net.weights, net.inputs[0].name: x})
    for got, t in zip(model(x), net.outputs):
        np.testing.assert_allclose(got, want[t.name], rtol=1e-4, atol=1e-5)


def test_a_logged_schedule_is_replayed_for_its_workload(tmp_path):
    net = conv_mlp_softmax(seed=2)
    groups = convnet_fused_groups(net)
    dense = group_dag(net, groups[1])
    [state] = sample(SearchTask(dense, "native"), 1, seed=3)
    steps = rename_steps(dense, steps_to_json(state.steps), to_canonical=True)  # as the tuner logs them
    log = tmp_path / "net.jsonl"
    RecordLog(log).append([Record(dense.workload_key, "native", steps_key(steps), (1e-3,), 0,
                                  timestamp=time.time())])
    schedules, tasks = schedule_groups(net, groups, log=str(log))
    assert [t.schedule == "log" for t in tasks] == [False, True, False]
    assert all(t.schedule in ("default", "naive") for t in tasks if t.schedule != "log")
    assert schedules[groups[1].name].steps == state.steps
    with build_model(net, groups, schedules, tasks=tasks) as model:
        assert model.tasks == tasks
        check(net, model)


def test_a_schedule_logged_with_the_weights_per_call_serves_the_constant_task(tmp_path):
    """Logs tuned before a model's weights were constant hold the tasks under their per-call keys: the program is
    valid with constant weights too, so it is used (not the default) when the constant key has no record."""
    net = conv_mlp_softmax(seed=2)
    groups = convnet_fused_groups(net)
    dense = group_dag(net, groups[1])
    assert dense.constants
    plain = dense.with_constants(())
    [state] = sample(SearchTask(plain, "native"), 1, seed=4)
    steps = rename_steps(plain, steps_to_json(state.steps), to_canonical=True)
    log = tmp_path / "old.jsonl"
    RecordLog(log).append([Record(plain.workload_key, "native", steps_key(steps), (1e-3,), 0, timestamp=time.time())])
    schedules, tasks = schedule_groups(net, groups, log=str(log))
    assert [t.schedule == "log" for t in tasks] == [False, True, False]
    assert schedules[groups[1].name].steps == state.steps
    with build_model(net, groups, schedules, tasks=tasks) as model:
        check(net, model)


def test_compile_imports_fuses_and_builds(monkeypatch):
    """compile() on an imported Network, with fusion stood in by one group per op."""
    net = conv_mlp_softmax(seed=4)
    monkeypatch.setitem(sys.modules, "ansorc.net.fuse", types.SimpleNamespace(fuse=one_group_per_op))
    model = ansorc.net.compile(net, name="my net")
    assert model.name == "my_net" and len(model.tasks) == len(one_group_per_op(net))
    check(net, model, seed=1)
    model.close()


def test_compile_with_trials_needs_a_log():
    with pytest.raises(NetError, match="needs a log"):
        ansorc.net.compile("model.onnx", trials=8)


def test_compile_with_trials_tunes_then_uses_the_log(monkeypatch, tmp_path):
    """trials > 0: the task scheduler measures programs into the log; every task it measured runs its best,
    handed over in memory: the network is fused once, and the log is not searched again for tuned tasks."""
    net = chain(length=3, size=512)
    fused = []
    monkeypatch.setitem(sys.modules, "ansorc.net.fuse",
                        types.SimpleNamespace(fuse=lambda n: fused.append(n) or one_group_per_op(n)))
    looked_up = []
    real_from_log = ansorc.net.api._from_log
    monkeypatch.setattr(ansorc.net.api, "_from_log", lambda *a: looked_up.append(a[3]) or real_from_log(*a))
    # the in-model check reads the log by design (tests/cpu/test_net_in_model.py); here: compile's hand-over
    monkeypatch.setattr(ansorc.net.tune, "check_in_model", lambda *a, **k: {})
    log = tmp_path / "tuned.jsonl"
    with ansorc.net.compile(net, trials=2, log=str(log)) as model:
        assert log.exists() and any(t.schedule == "log" for t in model.tasks)
        check(net, model, seed=2)
    assert len(fused) == 1
    tuned = {t.dag.workload_key for t in model.tasks if t.schedule == "log"}
    assert tuned and not tuned & {d.workload_key for d in looked_up}


def test_profile_times_every_kernel_call_and_leaves_results_alone():
    net = conv_mlp_softmax(seed=5)
    x = np.random.default_rng(5).standard_normal(net.inputs[0].shape).astype(np.float32)
    with ansorc.net.compile(net) as model:
        before = model(x)
        prof = model.profile(x, rounds=3)
        calls = model.signature["calls"]
        assert [(p["group"], p["kernel"]) for p in prof] == [tuple(c) for c in calls]
        assert all(p["seconds"] > 0 for p in prof)
        for a, b in zip(before, model(x)):  # profiling is off again and changed nothing
            np.testing.assert_array_equal(a, b)
        lib, n = model._lib, len(calls)
        buf = model._ffi.new("double[]", n)
        getattr(lib, f"{model.name}_profile_enable")(1)   # enabling restarts the counters at zero
        assert getattr(lib, f"{model.name}_profile_read")(buf, n) == n and list(buf) == [0.0] * n
        getattr(lib, f"{model.name}_profile_enable")(0)
        model(x)                                           # off: nothing is counted
        getattr(lib, f"{model.name}_profile_read")(buf, n)
        assert list(buf) == [0.0] * n


def test_a_logged_schedule_that_does_not_replay_is_named_once_with_its_log(tmp_path):
    # issue 50.5: the warning named the workload, not the log (and a second warning said the same task again)
    import warnings
    net = conv_mlp_softmax(seed=2)
    groups = convnet_fused_groups(net)
    dense = group_dag(net, groups[1])
    log = tmp_path / "net.jsonl"
    RecordLog(log).append([Record(dense.workload_key, "native", steps_key([["SP", "gone", "i", [4]]]), (1e-3,), 0,
                                  timestamp=time.time())])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _, tasks = ansorc.net.api.schedule_groups(net, groups, log=str(log))
        ansorc.net.api._warn_untuned(tasks, str(log))
    assert [t.replays for t in tasks] == [True, False, True] and all(t.schedule == "default" for t in tasks)
    [w] = [str(w.message) for w in caught]
    assert w.startswith(f"{log}: 3 of 3 tasks have no tuned program there that replays (1 of them: the logged "
                        "program does not replay)") and f"{dense.workload_key[:12]}, does not replay)" in w, w


@pytest.mark.parametrize("kwargs,fragment", [({"trials": -1}, "trials=-1: expected an integer >= 0"),
                                             ({"input_shapes": {"x": (2.5, 3, 8, 8)}}, "got (2.5, 3, 8, 8)")])
def test_compile_refuses_negative_trials_and_fractional_shapes(tmp_path, kwargs, fragment):
    # issue 50.5: trials=-1 was accepted and 2.5 became 2 silently
    from tests.cpu.test_net_cli import tiny_cnn
    with pytest.raises(NetError) as err:
        ansorc.net.compile(tiny_cnn(tmp_path / "m.onnx", batch="N"), **kwargs)
    assert fragment in str(err.value), err.value


def test_a_gather_index_out_of_range_at_run_time_names_the_model_input():
    # issue 50.5: the error named the te placeholder n_x_0, a name the user never gave
    import onnx
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [6, 4])
    ids = helper.make_tensor_value_info("ids", TensorProto.INT64, [3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])
    graph = helper.make_graph([helper.make_node("Gather", ["x", "ids"], ["y"], name="pick")], "pick", [x, ids], [y])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(proto)
    data = np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32)
    with ansorc.net.compile(proto) as model:
        np.testing.assert_allclose(model(data, np.array([5, 0, 2]))[0], data[[5, 0, 2]])
        with pytest.raises(NetError, match=r"index out of range in x$"):
            model(data, np.array([1, 6, 0]))
