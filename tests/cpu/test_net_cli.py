"""The command line on ONNX models: show, compile (untuned and from a log), tune; bad models exit 2 in one line."""
import json
import shutil
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ansorc.cli import main


def tiny_cnn(path, batch=1, op="Relu"):
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3, "w")
    fc = numpy_helper.from_array(rng.standard_normal((8, 4)).astype(np.float32) * 0.3, "fc")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node(op, ["c"], ["r"], name="act"),
             helper.make_node("GlobalAveragePool", ["r"], ["p"], name="gap"),
             helper.make_node("Flatten", ["p"], ["f"], name="flat"),
             helper.make_node("MatMul", ["f", "fc"], ["y"], name="fc")]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch if isinstance(batch, int) else "N", 4])
    m = helper.make_model(helper.make_graph(nodes, "tiny", [x], [y], [w, fc]),
                          opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return str(path)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_show_lists_the_tasks(tmp_path, capsys):
    code, out, err = run(capsys, "show", tiny_cnn(tmp_path / "m.onnx"), "--json")
    assert code == 0, err
    tasks = json.loads(out)["tasks"]
    assert len(tasks) >= 2 and all(t["weight"] >= 1 and t["flops"] > 0 for t in tasks)


def test_compile_untuned_writes_the_library(tmp_path, capsys):
    code, out, err = run(capsys, "compile", tiny_cnn(tmp_path / "m.onnx"), "-o", str(tmp_path / "out"))
    assert code == 0, err
    names = {p.name for p in (tmp_path / "out").iterdir()}
    assert {"m.c", "m.h", "libm.so", "m.weights"} <= names, names
    assert "0 of" in out   # no log: no task ran a tuned program


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_compile_for_cuda_needs_no_gpu(tmp_path, capsys):
    # the library is built and exported here; the GPU is needed only where it runs (first call)
    code, out, err = run(capsys, "compile", tiny_cnn(tmp_path / "m.onnx"), "-o", str(tmp_path / "out"),
                         "--target", "cuda", "--arch", "sm_80")
    assert code == 0, err
    names = {p.name for p in (tmp_path / "out").iterdir()}
    assert {"m.cu", "m.h", "libm.so", "m.weights"} <= names, names
    assert "-arch=sm_80" in (tmp_path / "out" / "m.h").read_text()   # --arch reaches a model's build


@pytest.mark.slow
def test_tune_then_compile_from_the_log(tmp_path, capsys):
    model, log = tiny_cnn(tmp_path / "m.onnx"), str(tmp_path / "m.jsonl")
    code, out, err = run(capsys, "tune", model, "--trials", "12", "--log", log, "--quiet", "--json")
    assert code == 0, err
    res = json.loads(out)
    assert res["trials"] == 12 and res["estimated_latency_ms"] > 0 and (tmp_path / "m.latency.png").exists()
    code, out, err = run(capsys, "compile", model, "-o", str(tmp_path / "out"), "--log", log, "--json")
    assert code == 0, err
    res = json.loads(out)
    assert res["tuned_tasks"] == res["tasks"]


def test_tune_without_matplotlib_logs_and_skips_the_chart(tmp_path, capsys, monkeypatch):
    # matplotlib is optional (the dev extra): `pip install ansorc` users tuning a model crashed after the tuning
    monkeypatch.setitem(sys.modules, "matplotlib", None)    # `import matplotlib` now raises ImportError
    model, log = tiny_cnn(tmp_path / "m.onnx"), str(tmp_path / "m.jsonl")
    code, out, err = run(capsys, "tune", model, "--trials", "4", "--log", log, "--quiet", "--json")
    assert code == 0, err
    res = json.loads(out)
    assert res["trials"] == 4 and res["plot"] is None and not (tmp_path / "m.latency.png").exists()


@pytest.mark.parametrize("case", ["malformed", "unsupported", "dynamic", "missing", "bad_shape_arg"])
def test_bad_models_exit_2_in_one_line(tmp_path, capsys, case):
    path = tmp_path / "m.onnx"
    argv = ["compile", str(path), "-o", str(tmp_path / "out")]
    if case == "malformed":
        path.write_bytes(b"\x08\x01garbage that is not a model")
    elif case == "unsupported":
        tiny_cnn(path, op="Celu2")
    elif case == "dynamic":
        tiny_cnn(path, batch="N")
    elif case == "bad_shape_arg":
        tiny_cnn(path, batch="N")
        argv += ["--input-shape", "x=1x3xeight"]
    code, out, err = run(capsys, *argv)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_input_shape_fixes_a_dynamic_dimension(tmp_path, capsys):
    model = tiny_cnn(tmp_path / "m.onnx", batch="N")
    code, out, err = run(capsys, "compile", model, "-o", str(tmp_path / "out"), "--input-shape", "x=2x3x8x8")
    assert code == 0, err


# issue 50.5: each of these was a traceback, a wrong exit code, an internal name or a whole repr
@pytest.mark.parametrize("case,argv,fragment", [
    ("dynamic", ["--input-shape", "x=99999999999999999999x3x8x8"], "a dimension above 2147483647"),
    (1 << 24, [], "input 'x' of shape (16777216, 3, 8, 8) has 3221225472 elements"),
    ("static", ["--trials", "-5"], "--trials must be >= 0"),
    ("static", ["--target", "cuda", "--arch", "sm_x"], "--arch sm_x"),
    ("static", ["--trials", "2", "--log", "/proc/self/m.jsonl"], "not a writable folder"),
])
def test_bad_input_on_a_model_exits_2_in_one_line(tmp_path, capsys, case, argv, fragment):
    model = tiny_cnn(tmp_path / "m.onnx", batch="N" if case == "dynamic" else 1 if case == "static" else case)
    code, out, err = run(capsys, "compile", model, "-o", str(tmp_path / "out"), *argv)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, (code, err)
    assert fragment in err and "n_x_0" not in err and "CudaTarget(" not in err, err
