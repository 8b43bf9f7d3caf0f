"""`ansorc profile model.onnx`: every task's time inside the model and its share, onnxruntime's node times beside,
a PNG chart, --json; without onnxruntime or matplotlib it still reports ours; bad input exits 2 in one line."""
import contextlib
import io
import json
import sys
from types import SimpleNamespace

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ansorc.cli import main
from ansorc.net.profile import node_times, task_rows
from ansorc.net.profile_report import task_table


def two_conv_model(path):
    """conv -> relu -> conv of the same shape (one task of weight 2, or fused with its relu) -> pool -> matmul."""
    rng = np.random.default_rng(0)
    init = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32) * 0.3, n)
            for n, s in (("w1", (8, 8, 3, 3)), ("w2", (8, 8, 3, 3)), ("fc", (8, 4)))]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
             helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
             helper.make_node("GlobalAveragePool", ["r2"], ["p"], name="gap"),
             helper.make_node("Flatten", ["p"], ["f"], name="flat"),
             helper.make_node("MatMul", ["f", "fc"], ["y"], name="fc")]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    m = helper.make_model(helper.make_graph(nodes, "twoconv", [x], [y], init),
                          opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return str(path)


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def profiled(tmp_path_factory):
    """One profile of the model (a compile and a few runs), shared by the checks below."""
    folder = tmp_path_factory.mktemp("profile")
    model = two_conv_model(folder / "twoconv.onnx")
    code, out, err = run("profile", model, "--rounds", "3", "--png", str(folder / "chart.png"), "--json", "--quiet")
    assert code == 0, err
    return model, folder, json.loads(out), err


def test_rows_cover_every_task_and_the_shares_add_up(profiled):
    model, _, result, _ = profiled
    code, out, err = run("show", model, "--json")
    assert code == 0, err
    tasks = {t["name"]: t["weight"] for t in json.loads(out)["tasks"]}
    assert {r["task"]: r["weight"] for r in result["tasks"]} == tasks
    assert sum(r["share"] for r in result["tasks"]) == pytest.approx(100.0, abs=0.01)
    assert all(r["source"] == "default" and r["ms"] >= 0 for r in result["tasks"])
    assert result["ansorc"]["run_ms"] > 0 and result["ansorc"]["kernels_ms"] >= 0


def test_onnxruntime_nodes_beside_ours(profiled):
    _, _, result, _ = profiled
    ort = result["onnxruntime"]
    assert ort["available"] and ort["run_ms"] > 0
    assert {"Conv", "MatMul"} <= {r["op"] for r in ort["by_op"]}
    assert sum(r["nodes"] for r in ort["by_op"]) == len(ort["nodes"])


def test_png_is_written_and_the_table_names_each_task(profiled):
    _, folder, result, err = profiled
    assert result["png"] == str(folder / "chart.png")
    assert (folder / "chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for r in result["tasks"]:
        assert f"| {r['task']} | {r['weight']} |" in result["table"]
    assert "onnxruntime op" in result["table"] and "end to end" in result["table"]
    assert err == ""   # --quiet: no progress lines


def test_without_onnxruntime_and_matplotlib_ours_still_show(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)   # `import onnxruntime` now raises ImportError
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.chdir(tmp_path)
    model = two_conv_model(tmp_path / "m.onnx")
    code, out, err = run("profile", model, "--rounds", "2", "--top", "1")
    assert code == 0, err
    assert "onnxruntime is not installed" in out and "more tasks" in out and "end to end" in out
    warnings = [line for line in err.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "matplotlib" in warnings[0], err
    assert not (tmp_path / "m_profile.png").exists()


@pytest.mark.parametrize("case", ["missing", "not_a_model", "malformed", "rounds", "png_folder", "log"])
def test_bad_input_exits_2_in_one_line(tmp_path, case):
    model = tmp_path / "m.onnx"
    argv = ["profile", str(model)]
    if case == "not_a_model":
        (tmp_path / "m.te").write_text("A = input((4,))\n")
        argv = ["profile", str(tmp_path / "m.te")]
    elif case == "malformed":
        model.write_bytes(b"\x08\x01garbage that is not a model")
    elif case != "missing":
        two_conv_model(model)
        argv += {"rounds": ["--rounds", "0"], "png_folder": ["--png", str(tmp_path / "no" / "p.png")],
                 "log": ["--log", str(tmp_path / "none.jsonl")]}[case]
    code, out, err = run(*argv)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, (code, err)
    assert err.startswith("ansorc: error: ") and out == ""


def test_help_names_the_options():
    code, out, _ = run("profile", "--help")
    assert code == 0 and all(opt in out for opt in ("--log", "--rounds", "--top", "--png", "--json", "--quiet"))


class _Task:
    def __init__(self, name, groups, flops, unit="GFLOP/s"):
        self.name, self.groups, self.weight, self.flops = name, groups, len(groups), flops
        self.dag = SimpleNamespace(rate_unit=unit)
        self.schedule, self.replays = "log", True


def test_task_rows_sum_groups_and_keep_calls_of_no_task():
    prof = [{"group": "g0", "kernel": "k0", "seconds": 3e-3}, {"group": "g1", "kernel": "k1", "seconds": 1e-3},
            {"group": "g2", "kernel": "k0", "seconds": 4e-3}, {"group": "gx", "kernel": "k2", "seconds": 2e-3}]
    rows = task_rows([_Task("a", ("g0", "g2"), 1e6), _Task("b", ("g1",), 1e6, "GOP/s")], prof)
    assert [(r["task"], round(r["ms"], 6), round(r["share"], 6)) for r in rows] == \
        [("a", 7.0, 70.0), ("other", 2.0, 20.0), ("b", 1.0, 10.0)]
    assert rows[0]["gflops"] == pytest.approx(2e6 / 7e-3 / 1e9) and rows[0]["source"] == "log"
    table = "\n".join(task_table({"tasks": rows, "ansorc": {"kernels_ms": 10.0}}, 5))
    assert "| 0.3 |" in table and "| 1.0 GOP/s |" in table    # an integer task's rate says its unit


def test_node_times_drop_the_warm_up_and_take_medians(tmp_path):
    def event(name, op, us):
        return {"cat": "Node", "name": f"{name}_kernel_time", "dur": us, "args": {"op_name": op}}
    trace = [event("conv", "Conv", 900), event("conv", "Conv", 10), event("conv", "Conv", 30),
             event("conv", "Conv", 12), {"cat": "Session", "name": "model_run", "dur": 5000}]
    trace += [event("body", "Add", us) for us in (50, 50, 1, 1, 2, 2, 1, 1)]   # twice in each of 4 runs
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(trace))
    assert node_times(str(path), 4) == {("conv", "Conv"): pytest.approx(0.012), ("body", "Add"): pytest.approx(0.002)}


@pytest.mark.slow
def test_with_a_log_the_tasks_run_its_programs(tmp_path):
    model, log = two_conv_model(tmp_path / "m.onnx"), str(tmp_path / "m.jsonl")
    code, out, err = run("tune", model, "--trials", "8", "--log", log, "--quiet")
    assert code == 0, err
    code, out, err = run("profile", model, "--log", log, "--rounds", "2", "--png", str(tmp_path / "p.png"), "--json")
    assert code == 0, err
    rows = json.loads(out)["tasks"]
    assert all(r["source"] == "log" and r["alone_ms"] > 0 for r in rows), rows
    assert "alone (log) ms" in json.loads(out)["table"]
