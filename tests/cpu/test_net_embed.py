"""An exported model library driven from C (examples/embed_net/main.c), plain and under ASan+UBSan."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from ansorc.ir.schedule.state import State
from ansorc.measure.sanitize import REPORT_MARKERS, RUN_ENV, SANITIZE_FLAGS
from ansorc.net.api import build_model
from ansorc.net.network import group_dag

from tests.net_samples import conv_mlp_softmax, convnet_fused_groups, one_group_per_op

MAIN = Path(__file__).resolve().parents[2] / "examples" / "embed_net" / "main.c"


def sampled(net, groups, seed: int) -> dict:
    from ansorc.search.annotate import sample
    from ansorc.search.task import SearchTask
    return {g.name: sample(SearchTask(group_dag(net, g), "native"), 1, seed=seed + k)[0] for k, g in enumerate(groups)}


@pytest.fixture(scope="module", params=["naive", "sampled"])
def exported(request, tmp_path_factory):
    """The test network's library: each op its own kernel, naive loops; or fused groups, random programs of the
    search space (vectorized, parallel, tiled): the sanitizer checks their vector accesses too."""
    net = conv_mlp_softmax(seed=5)
    if request.param == "naive":
        groups = one_group_per_op(net)
        schedules = {g.name: State.initial(group_dag(net, g)) for g in groups}
    else:
        groups = convnet_fused_groups(net)
        schedules = sampled(net, groups, 20)
    model = build_model(net, groups, schedules)
    out = tmp_path_factory.mktemp("embed")
    paths = model.export(out / "lib")
    yield net, model, out, paths
    model.close()


def generated(shape, seed: int) -> np.ndarray:
    """main.c's deterministic float32 inputs."""
    i = np.arange(int(np.prod(shape)), dtype=np.int64)
    return (((i * 37 + seed * 11) % 17).astype(np.float32) / np.float32(8.5) - np.float32(1.0)).reshape(shape)


def compile_app(cmd_head: list, out: Path, name: str, *extra) -> Path:
    exe = out / name
    cmd = [*cmd_head, f"-I{out / 'lib'}", '-DMODEL_HEADER="convnet.h"', str(MAIN), *extra, "-o", str(exe), "-lm"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0 and any(s in proc.stderr.lower() for s in ("asan", "ubsan", "sanitizer")):
        pytest.skip(f"the compiler cannot link the sanitizers: {proc.stderr[-300:]}")
    assert proc.returncode == 0, proc.stderr
    return exe


def run_app(exe: Path, weights: str, outdir: Path, *inputs, env=None) -> subprocess.CompletedProcess:
    outdir.mkdir(exist_ok=True)
    return subprocess.run([str(exe), weights, str(outdir), *map(str, inputs)], capture_output=True, text=True,
                          timeout=300, env=env)


def outputs(model, outdir: Path) -> list:
    return [np.fromfile(outdir / f"out{k}.bin", np.float32).reshape(t["shape"])
            for k, t in enumerate(model.signature["outputs"])]


def test_c_program_matches_the_model(exported):
    net, model, out, paths = exported
    lib = out / "lib"
    exe = compile_app(["gcc", "-O2", "-std=c99", "-fopenmp"], out, "app", f"-L{lib}", "-lconvnet",
                      f"-Wl,-rpath,{lib}")
    x = np.random.default_rng(7).standard_normal(net.inputs[0].shape).astype(np.float32)
    x.tofile(out / "x.bin")
    proc = run_app(exe, paths["weights"], out / "from_file", out / "x.bin")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("convnet output") == 2
    for got, want in zip(outputs(model, out / "from_file"), model(x)):
        np.testing.assert_array_equal(got, want)
    proc = run_app(exe, paths["weights"], out / "generated")   # no input files: generated inputs
    assert proc.returncode == 0, proc.stderr
    for got, want in zip(outputs(model, out / "generated"), model(generated(net.inputs[0].shape, 0))):
        np.testing.assert_array_equal(got, want)


def test_library_runs_clean_under_asan(exported):
    net, model, out, paths = exported
    isa = ["-march=native"]  # the kernels were rendered for this machine's vector ISA
    exe = compile_app(["gcc", *SANITIZE_FLAGS, *isa], out, "app_asan", paths["c"])
    env = {**os.environ, **RUN_ENV, "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0:exitcode=86"}
    env.pop("LD_PRELOAD", None)
    x = np.random.default_rng(8).standard_normal(net.inputs[0].shape).astype(np.float32)
    x.tofile(out / "xa.bin")
    proc = run_app(exe, paths["weights"], out / "asan", out / "xa.bin", env=env)
    assert proc.returncode == 0 and not any(m in proc.stderr for m in REPORT_MARKERS), proc.stderr[-3000:]
    for got, want in zip(outputs(model, out / "asan"), model(x)):  # -O0 here: same results up to rounding
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    data = Path(paths["weights"]).read_bytes()
    for name, blob in (("short", data[:len(data) // 2]), ("header", data[:20]), ("empty", b"")):
        bad = out / f"{name}.weights"
        bad.write_bytes(blob)
        proc = run_app(exe, str(bad), out / "asan_bad", out / "xa.bin", env=env)
        assert proc.returncode == 13 and not any(m in proc.stderr for m in REPORT_MARKERS), proc.stderr[-3000:]
