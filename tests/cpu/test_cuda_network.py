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


def _plan(model):
    net = import_model(model)
    groups = fuse(net)
    schedules, _ = schedule_groups(net, groups, None, "cuda")
    return net, plan_network(net, groups, schedules, resolve_target("cuda"))


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
