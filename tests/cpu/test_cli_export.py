"""The ansorc command and embedding: compile an expression file, link the library from a C program."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ansorc
from ansorc.cli import main
from tests.kernel_text import body_of

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "ansorc.cli", *args], capture_output=True, text=True, cwd=ROOT)


def test_compile_then_embed_in_c(tmp_path):
    out = tmp_path / "out"
    r = run_cli("compile", "examples/matmul_relu.te", "-o", str(out), "--trials", "0", "-D", "N=64", "-D", "M=48",
                "-D", "K=32", "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert Path(info["files"]["so"]).exists() and Path(info["files"]["h"]).exists()
    app = tmp_path / "app"
    cc = ["cc", f"-I{out}", str(ROOT / "examples/embed/main.c"), f"-L{out}", "-lmatmul_relu",
          f"-Wl,-rpath,{out}", "-fopenmp", "-lm", "-o", str(app)]
    subprocess.run(cc, check=True)
    res = subprocess.run([str(app)], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "max relative error" in res.stdout
    # the .c file compiles on its own with the flags the header names
    subprocess.run(["cc", "-O3", "-march=native", "-fopenmp", "-shared", "-fPIC", "-std=c99", "-o",
                    str(tmp_path / "again.so"), info["files"]["c"], "-lm"], check=True)


def test_load_exported_library(tmp_path):
    r = run_cli("compile", "examples/softmax.te", "-o", str(tmp_path), "--trials", "0", "--name", "sm",
                "--quiet")
    assert r.returncode == 0, r.stderr
    kern = ansorc.load(tmp_path / "libsm.so")
    spec = kern.args[0]
    x = np.random.default_rng(0).standard_normal(spec.shape).astype(np.float32)
    y = kern(x)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=-1, keepdims=True), rtol=1e-5, atol=1e-6)


def test_kernel_export_python_api(tmp_path):
    from ansorc import workloads
    kern = ansorc.build(workloads.matmul(16, 8, 4))
    paths = kern.export(tmp_path, "mm16")
    again = ansorc.load(paths["so"])
    a = np.ones((16, 4), np.float32)
    b = np.ones((4, 8), np.float32)
    np.testing.assert_allclose(again(a, b), a @ b)
    with pytest.raises(Exception, match="not a valid C identifier"):
        kern.export(tmp_path, "bad name")


def test_exit_codes_and_help(tmp_path, capsys):
    assert main(["--help"]) == 0
    assert main(["compile", "--help"]) == 0
    assert main(["compile"]) == 2  # missing arguments
    assert main(["compile", str(tmp_path / "missing.te"), "-o", str(tmp_path)]) == 2
    bad = tmp_path / "bad.te"
    bad.write_text("input A: float32[4]\noutput B[i] = A[i] +\n")
    assert main(["compile", str(bad), "-o", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "bad.te:2:" in err and "Traceback" not in err
    assert main(["compile", "examples/gmm.te", "-o", str(tmp_path), "--trials", "0", "--name", "int"]) == 2
    assert main(["show", str(tmp_path / "nolog.json")]) == 2


def test_names_cannot_inject_code():
    from ansorc import te
    evil = 'x); system("id"); //'
    A = te.placeholder((4,), name=evil)
    B = te.compute((4,), lambda i: A[i] * 2.0, name="out; int y")
    kern = ansorc.build([A, B])
    assert "system(" not in body_of(kern.source.replace("/*", ""), "kernel")
    np.testing.assert_allclose(kern(np.arange(4, dtype=np.float32)), np.arange(4) * 2.0)


def test_tune_then_show_then_compile_from_log(tmp_path):
    log = tmp_path / "t.jsonl"
    r = run_cli("tune", "examples/gmm.te", "--trials", "6", "--log", str(log), "-D", "N=32", "-D", "M=32",
                "-D", "K=32", "--quiet", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["trials"] == 6
    r = run_cli("show", str(log), "--json")
    assert r.returncode == 0
    [row] = json.loads(r.stdout)["workloads"]
    assert row["trials"] == 6 and row["best_gflops"] > 0
    assert row["signature"] == "X[1,32,32] Y[1,32,32] -> Z[1,32,32]"   # what the key hashes, for people
    assert row["signature"] in run_cli("show", str(log)).stdout
    r = run_cli("compile", "examples/gmm.te", "-o", str(tmp_path / "o"), "--trials", "0", "--log", str(log),
                "-D", "N=32", "-D", "M=32", "-D", "K=32")
    assert r.returncode == 0, r.stderr
    assert "GFLOP/s" in (tmp_path / "o" / "gmm.h").read_text()


def test_cross_compile_for_neon(tmp_path):
    import shutil
    if shutil.which("aarch64-linux-gnu-gcc") is None:
        pytest.skip("aarch64-linux-gnu-gcc is not installed")
    r = run_cli("compile", "examples/softmax.te", "-o", str(tmp_path), "--target", "neon", "--trials", "0",
                "-D", "M=8", "-D", "N=16")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "libsoftmax.so").read_bytes()[18] == 183  # ELF e_machine = EM_AARCH64
    r = run_cli("compile", "examples/softmax.te", "-o", str(tmp_path), "--target", "neon", "--trials", "4")
    assert r.returncode == 1 and "cannot be measured on this machine" in r.stderr


def test_avx2_export_is_built_and_documented_for_avx2(tmp_path):
    """`compile --target avx2` exports a library built with the avx2 flags (not -march=native), and its header's
    build line names them: on an AVX-512 machine, no zmm register may appear in the library."""
    import shutil
    from ansorc.codegen.target import Target
    if not Target.from_name("avx2").runs_here():
        pytest.skip("this CPU cannot run avx2 kernels")
    if shutil.which("objdump") is None:
        pytest.skip("objdump is not installed")
    r = run_cli("compile", "examples/matmul_relu.te", "-o", str(tmp_path), "--target", "avx2", "--trials", "0",
                "-D", "N=64", "-D", "M=64", "-D", "K=64", "--name", "mm2")
    assert r.returncode == 0, r.stderr
    header = (tmp_path / "mm2.h").read_text()
    [build_line] = [ln for ln in header.splitlines() if "Build the library:" in ln]
    assert "-mavx2" in build_line and "-mfma" in build_line and "-march=native" not in build_line
    asm = subprocess.run(["objdump", "-d", str(tmp_path / "libmm2.so")], capture_output=True, text=True,
                         check=True).stdout
    assert "ymm" in asm  # the kernel is vectorized for AVX2 ...
    assert "zmm" not in asm  # ... and uses no AVX-512 register


def test_kernel_spec_is_frozen_and_rebuilds_the_same_program(tmp_path):
    import dataclasses
    from ansorc import workloads
    kern = ansorc.build(workloads.matmul(16, 8, 4), target="generic")
    assert kern.spec.target.name == "generic" and kern.spec.flags == kern.spec.target.flags
    with pytest.raises(dataclasses.FrozenInstanceError):
        kern.spec.flags = ()
    assert kern.spec.source("kernel").code == kern.source
    header = Path(kern.export(tmp_path, "g")["h"]).read_text()
    assert "-march=native" not in header


def test_user_errors_share_one_base_class(tmp_path):
    from ansorc import te, workloads
    kern = ansorc.build(workloads.matmul(4, 4, 4))
    bad_calls = [lambda: kern(np.ones((4, 4), np.float64), np.ones((4, 4), np.float32)),
                 lambda: kern(np.ones((3, 4), np.float32), np.ones((4, 4), np.float32)),
                 lambda: kern(np.ones((4, 4), np.float32))]
    for call in bad_calls:
        with pytest.raises(ansorc.AnsorcError):
            call()
    with pytest.raises(ansorc.AnsorcError):
        te.placeholder((0, 4), name="A")
    with pytest.raises(ansorc.AnsorcError):
        workloads.make("no_such_workload")
    with pytest.raises(ansorc.AnsorcError):
        kern.export(tmp_path, "bad name")
    with pytest.raises(ansorc.AnsorcError):
        ansorc.load(tmp_path / "libmissing.so")
    with pytest.raises(ansorc.AnsorcError):
        ansorc.apply_best(tmp_path / "empty.jsonl", workloads.matmul(4, 4, 4))


def test_cross_compile_with_a_constant_uses_the_per_call_log(tmp_path):
    """A log tuned on the target with every input per call serves `--constant`: its program is the one exported."""
    import shutil
    import time
    from ansorc import workloads
    from ansorc.ir.program.dag import ComputeDAG
    from ansorc.measure.record import Record, RecordLog
    from ansorc.measure.runner import MeasureResult
    from ansorc.search.task import SearchTask
    from ansorc.search.tuning import canonical_steps, default_state
    if shutil.which("aarch64-linux-gnu-gcc") is None:
        pytest.skip("aarch64-linux-gnu-gcc is not installed")
    task = SearchTask(ComputeDAG(workloads.make("GMM", 0)), "neon")
    steps = canonical_steps(task, default_state(task))
    log = tmp_path / "neon.jsonl"
    RecordLog(str(log)).append([Record.from_measure(task.workload_key, "neon", steps,
                                                    MeasureResult((1e-4,), 0, "", 1.0, time.time()))])
    args = ("compile", "examples/gmm.te", "-o", str(tmp_path / "o"), "--target", "neon", "--trials", "0",
            "--log", str(log), "-D", "B=1", "-D", "N=128", "-D", "M=128", "-D", "K=128")
    r = run_cli(*args, "--constant", "Y")
    assert r.returncode == 0, r.stderr
    header = (tmp_path / "o" / "gmm.h").read_text()
    assert "best logged" in header and "untuned" not in header, header[:2000]
