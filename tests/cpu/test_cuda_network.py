"""Whole networks on CUDA without a GPU: the library's plan (every group's programs, bindings, arena) run through
the GPU emulation matches the numpy reference, and the .cu library and the C embedding example build."""
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from ansorc.codegen.pipeline import resolve_target
from ansorc.net import zoo
from ansorc.net.api import schedule_groups
from ansorc.net.fuse import fuse
from ansorc.net.importer import import_model, run_reference
from ansorc.targets.cuda.net_library import plan_network
from ansorc.targets.cuda.net_model import EmulatedModel, build_cuda_network


def _plan(model, with_groups=False):
    net = import_model(model)
    groups = fuse(net)
    schedules, _ = schedule_groups(net, groups, None, "cuda")
    plan = plan_network(net, groups, schedules, resolve_target("cuda"))
    return (net, plan, groups) if with_groups else (net, plan)


@pytest.mark.slow
def test_emulated_cuda_network_matches_reference():
    net, plan = _plan(zoo.resnet18(size=32, classes=10))
    assert len(plan.programs) < len(plan.calls)   # groups of one workload share their kernels
    x = np.random.default_rng(0).standard_normal(tuple(net.inputs[0].shape)).astype(np.float32)
    [got] = EmulatedModel(plan, net)(x)
    [ref] = run_reference(net, [x])
    ref = np.asarray(ref).reshape(got.shape)
    assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 1e-5


@pytest.mark.skipif(shutil.which("nvcc") is None or shutil.which("gcc") is None, reason="nvcc is not installed")
def test_cuda_network_library_and_embedding_build(tmp_path):
    net, plan = _plan(zoo.bert_tiny(seq=16, layers=1, vocab=100))
    files, sig = build_cuda_network(plan, net, "sm_90", tmp_path)
    assert sig["launches"] >= sig["groups"] and Path(files["so"]).stat().st_size > 0
    home = Path(shutil.which("nvcc")).resolve().parents[1]
    if not (home / "include" / "cuda_runtime.h").exists():
        home = next(Path("/usr/local").glob("cuda-*"), home)
    root = Path(__file__).resolve().parents[2]
    r = subprocess.run(["gcc", f"-I{tmp_path}", f"-I{home / 'include'}", f'-DMODEL_HEADER="{plan.name}.h"',
                        str(root / "examples/embed_net_cuda/main.c"), f"-L{tmp_path}", f"-l{plan.name}",
                        f"-L{home / 'lib64'}", "-lcudart", "-o", str(tmp_path / "app")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr



def _matmul_relu():
    from onnx import TensorProto, helper, numpy_helper
    w = numpy_helper.from_array(np.random.default_rng(1).standard_normal((16, 8)).astype(np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])],
                              "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_cuda_model_builds_without_a_gpu_and_runs_or_says_why(tmp_path):
    from ansorc.net import compile as compile_net
    from ansorc.net.network import NetError
    model = compile_net(_matmul_relu(), target="cuda:sm_80", progress=False)
    files = model.export(tmp_path)   # no GPU needed to build or export
    assert {Path(p).suffix for p in files.values()} >= {".cu", ".h", ".so", ".weights"}
    x = np.random.default_rng(0).standard_normal((2, 16)).astype(np.float32)
    try:
        [got] = model(x)
    except NetError as e:   # no usable GPU here: one clear line, not a crash at compile time
        assert "cannot start on the GPU" in str(e) and "\n" not in str(e), e
        return
    [ref] = run_reference(import_model(_matmul_relu()), [x])
    assert np.allclose(got, np.asarray(ref).reshape(got.shape), rtol=1e-4, atol=1e-5)


def test_cuda_network_with_winograd_convs_runs_emulated_and_builds(monkeypatch, tmp_path):
    """The network lowering is target-blind, so a CUDA build gets Winograd stages too: they must plan, run
    (emulated) and, where nvcc is, build."""
    from .test_net_winograd import conv_model
    monkeypatch.delenv("ANSORC_WINOGRAD", raising=False)
    model = conv_model(1, 32, 32, 16, 16, (1, 1, 1, 1), True, seed=3)   # 16x16: m = 2, 64 tiles
    net, plan, groups = _plan(model, with_groups=True)
    assert any("wino_gemm" in g.name for g in groups), [g.name for g in groups]
    x = np.random.default_rng(0).standard_normal((1, 32, 16, 16)).astype(np.float32)
    [got] = EmulatedModel(plan, net)(x)
    [ref] = run_reference(net, [x])
    assert np.linalg.norm(got - np.asarray(ref).reshape(got.shape)) / np.linalg.norm(ref) < 1e-5
    if shutil.which("nvcc"):
        files, sig = build_cuda_network(plan, net, "sm_90", tmp_path)
        assert sig["launches"] >= 4 and Path(files["so"]).stat().st_size > 0
