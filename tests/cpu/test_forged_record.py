"""Issue 50.8: a log's record claiming a speed above the machine's peak is flagged and re-timed, not printed."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ansorc
from ansorc import workloads
from ansorc.autotune import _retime
from ansorc.search.plausible import ImplausibleRecordWarning, plausible
from ansorc.codegen.target import Target
from ansorc.frontend import load
from ansorc.ir.program.dag import ComputeDAG
from ansorc.measure.record import Record, RecordLog, native_isa, steps_key
from ansorc.search.tuning import tune_options

ROOT = Path(__file__).resolve().parents[2]
FORGED_SECONDS = 1e-9   # the issue's figure; 64^3 matmul: 5.2e5 GFLOP/s, over 1000 cores' bound
TINY_SECONDS = 1e-12    # for the 32^3 workloads: 6.6e7 GFLOP/s (1e-9 s would be under a 192-core machine's bound)


def _forged_log(path, dag, seconds=TINY_SECONDS):
    """A well-formed record of `dag`'s naive program that claims `seconds` (the second line: the first is real)."""
    real = Record(dag.workload_key, "native", steps_key([]), (1.0,), 0, isa=native_isa(), timestamp=1.0)
    fast = Record(dag.workload_key, "native", steps_key([]), (seconds,), 0, isa=native_isa(), timestamp=2.0)
    RecordLog(path).append([real, fast])
    return path


def test_the_bound_is_above_any_real_kernel_and_below_a_forged_one():
    dag = ComputeDAG(workloads.matmul(64, 64, 64))
    tgt = Target.from_name("native")
    assert plausible(dag, tgt, 1e-3)
    assert not plausible(dag, tgt, FORGED_SECONDS) and not plausible(dag, tgt, 0.0)
    # a real kernel near this machine's peak (the default program of a 256^3 matmul), really timed, is plausible
    kern = ansorc.compile(workloads.matmul(256, 256, 256), trials=0)
    a, b = (np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32) for _ in range(2))
    np.testing.assert_allclose(kern(a, b), a @ b, rtol=1e-3, atol=1e-3)
    assert plausible(ComputeDAG(workloads.matmul(256, 256, 256)), tgt, _retime(kern, "-"))


def test_compile_trials_0_flags_and_retimes_a_forged_best(tmp_path):
    """Before: compile(trials=0) believed the record and reported 5.2e+05 GFLOP/s (2 * 64^3 flop in 1e-9 s)."""
    tensors = workloads.matmul(64, 64, 64)
    log = _forged_log(tmp_path / "forged.jsonl", ComputeDAG(tensors), FORGED_SECONDS)
    with pytest.warns(ImplausibleRecordWarning, match=r"forged.jsonl:2: a record of workload .* claims 1e-09 s "
                                                      r".* above this machine's bound .* re-timed here"):
        kern = ansorc.compile(tensors, trials=0, log=str(log))
    prov = kern.provenance
    measured = float(prov["measured seconds (median)"])
    assert measured > 1e-7 and float(prov["GFLOP/s"]) < 1e4      # a real timing of the naive program
    assert prov["logged seconds (above the machine's peak, not believed)"] == "1e-09"
    a, b = (np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32) for _ in range(2))
    np.testing.assert_allclose(kern(a, b), a @ b, rtol=1e-4, atol=1e-4)


def test_cli_compile_prints_the_measured_figure_not_the_forged_one(tmp_path):
    """Before: `ansorc compile --trials 0 --log forged.jsonl` printed "best: 5.243e+05 GFLOP/s"."""
    defines = {"B": "1", "N": "32", "M": "32", "K": "32"}
    prog = load(str(ROOT / "examples/gmm.te"), defines)
    log = _forged_log(tmp_path / "forged.jsonl", ComputeDAG(prog.tensors))
    cmd = [sys.executable, "-m", "ansorc.cli", "compile", str(ROOT / "examples/gmm.te"), "--trials", "0", "--quiet",
           "--name", "gmm", "-o", str(tmp_path / "out"), "--log", str(log)]
    for k, v in defines.items():
        cmd += ["-D", f"{k}={v}"]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "forged.jsonl:2: a record of workload" in out.stderr and "not believed" in out.stderr
    [best] = [ln for ln in out.stdout.splitlines() if ln.startswith("best: ")]
    assert float(best.split()[1]) < 1e4, best   # 2 * 32^3 flop: the naive program, really timed


def test_tuning_resumed_from_a_forged_log_leaves_the_record_out(tmp_path):
    """Before: the forged 1e-9 s stood as the session's best (compile(trials>0) reported it, and it cut every
    candidate early); now it is left out with a warning, and the result is a real measured time."""
    tensors = workloads.matmul(32, 32, 32)
    log = _forged_log(tmp_path / "forged.jsonl", ComputeDAG(tensors))
    with pytest.warns(ImplausibleRecordWarning, match=r"forged.jsonl:2: a record .* left out of the resumed"):
        res = ansorc.tune(tensors, trials=2, log=str(log), options=tune_options(progress=False))
    assert res.best_seconds > 1e-8 and res.best_state is not None


def test_show_flags_a_forged_best_instead_of_printing_its_speed(tmp_path):
    """Before: `ansorc show` printed the forged record's GFLOP/s (and a 0 s record divided by zero)."""
    dag = ComputeDAG(workloads.matmul(32, 32, 32))
    log = tmp_path / "forged.jsonl"
    zero = ComputeDAG(workloads.matmul(16, 16, 16))   # a record claiming 0 s: a division by zero before
    RecordLog(log).append([Record(dag.workload_key, "native", steps_key([]), (TINY_SECONDS,), 0, isa=native_isa(),
                                  flop=dag.flop_count, timestamp=1.0),
                           Record(zero.workload_key, "native", steps_key([]), (0.0,), 0, isa=native_isa(),
                                  flop=zero.flop_count, timestamp=1.0)])
    out = subprocess.run([sys.executable, "-m", "ansorc.cli", "show", str(log)], capture_output=True, text=True,
                         cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "forged.jsonl:1: the best record of workload" in out.stderr and "not believed" in out.stderr
    assert "forged.jsonl:2: the best record of workload" in out.stderr
    [row] = [ln for ln in out.stdout.splitlines() if ln.startswith(dag.workload_key[:20])]
    assert "6.554e+04" not in row and "65536" not in row and row.split()[-2] == "-", row
