"""A target is a plug-in: the registry parses every kind's names, and the toy "scalar" target (one folder under
ansorc/targets/ plus one registry line) compiles, tunes and exports through the same API and command as the CPU
target, with no OpenMP runtime linked."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ansorc
from ansorc import te
from ansorc.targets import PLUGINS, known_names, parse, plugin

ROOT = Path(__file__).resolve().parents[2]


def needed_libraries(lib) -> list:
    out = subprocess.run(["readelf", "-d", str(lib)], capture_output=True, text=True, check=True).stdout
    return [line.split("[")[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line]


def matmul(n=48):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    return [A, B, te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")]


def test_every_name_parses_to_its_kind():
    for kind in PLUGINS:
        for name in plugin(next(n for n in known_names() if parse(n).kind == kind)).names:
            assert parse(name).kind == kind and plugin(name).kind == kind
    assert parse("cuda:sm_80").arch == "sm_80"
    with pytest.raises(ValueError, match="unknown target 'avx9'; known: native, .*cuda.*scalar"):
        parse("avx9")


def test_scalar_target_lives_in_its_folder_and_one_registry_line():
    users = [p for p in (ROOT / "ansorc").rglob("*.py") if "targets.scalar" in p.read_text()
             and "targets/scalar" not in p.as_posix()]
    assert [p.relative_to(ROOT).as_posix() for p in users] == ["ansorc/targets/__init__.py"]


def test_scalar_tunes_and_runs_without_openmp(tmp_path):
    kern = ansorc.compile(matmul(), trials=8, log=str(tmp_path / "log.jsonl"), target="scalar",
                          options=ansorc.TuneOptions(progress=False))
    a, b = (np.random.default_rng(i).standard_normal((48, 48)).astype("float32") for i in range(2))
    np.testing.assert_allclose(kern(a, b), a @ b, rtol=1e-4, atol=1e-4)
    lines = (tmp_path / "log.jsonl").read_text().splitlines()
    assert len(lines) >= 8 and all(json.loads(line)["target"] == "scalar" for line in lines)
    assert not [lib for lib in needed_libraries(kern.lib_path) if "omp" in lib]


def test_scalar_export_from_the_command_line(tmp_path):
    r = subprocess.run([sys.executable, "-m", "ansorc.cli", "compile", "examples/matmul_relu.te", "-o",
                        str(tmp_path), "--target", "scalar", "--trials", "0", "-D", "N=32", "-D", "M=16", "-D",
                        "K=8", "--json"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    files = json.loads(r.stdout)["files"]
    assert Path(files["h"]).exists()
    assert not [lib for lib in needed_libraries(files["so"]) if "omp" in lib]
    app = tmp_path / "app"   # linked without -fopenmp: nothing of OpenMP is needed
    subprocess.run(["cc", f"-I{tmp_path}", str(ROOT / "examples/embed/main.c"), f"-L{tmp_path}", "-lmatmul_relu",
                    f"-Wl,-rpath,{tmp_path}", "-lm", "-o", str(app)], check=True)
    res = subprocess.run([str(app)], capture_output=True, text=True)
    assert res.returncode == 0 and "max relative error" in res.stdout, res.stdout + res.stderr
