"""tanh vectorizes on x86 (codegen/simd.py _tanh_helper: a polynomial near 0, the vector exp beyond) instead of
calling tanhf per lane: within 2 ulp of numpy's float64 tanh, NaN and the infinities as libm gives them. An ISA
this CPU lacks is compiled and not run, and the test says so."""
import shutil
import subprocess

import numpy as np
import pytest

import ansorc
from ansorc import te
from ansorc.codegen.target import Target, host_isas
from ansorc.search.default_schedule import default_cpu_schedule
from tests.kernel_text import body_of

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
EDGES = [0.0, -0.0, 0.625, -0.625, 0.6249999, 1e-30, -1e-30, 1e-5, 44.0, -44.0, 88.0, 1e30, -1e30,
         np.inf, -np.inf, np.nan]


def _program(n: int):
    x = te.placeholder((n,), name="x")
    y = te.compute((n,), lambda i: te.tanh(x[i]) * 0.5, name="y")
    return ansorc.ComputeDAG([x, y])


@pytest.mark.parametrize("isa", ["avx2", "avx512"])
def test_tanh_vectorizes_within_two_ulp(isa, tmp_path):
    if Target.from_name(isa).arch != Target.from_name("native").arch:
        pytest.skip("x86 ISAs: this machine is not x86")
    dag = _program(4096)
    state = default_cpu_schedule(dag, isa)
    code = ansorc.generate_source(dag, state, target=isa).code
    assert f"ansorc_tanh_m{256 if isa == 'avx2' else 512}(" in code and "tanhf(" not in body_of(code, "kernel")
    if isa not in host_isas():
        src = tmp_path / "k.c"
        src.write_text(code)
        cmd = ["gcc", "-O2", "-c", *Target.from_name(isa).flags, str(src), "-o", str(tmp_path / "k.o")]
        assert subprocess.run(cmd, capture_output=True, text=True).returncode == 0
        pytest.skip(f"compiled for {isa}; this CPU cannot run it")
    x = np.concatenate([np.linspace(-12, 12, 4096 - len(EDGES)), EDGES]).astype(np.float32)
    y = np.empty_like(x)
    ansorc.build(dag, state, target=isa)(x, y)
    want = np.tanh(x.astype(np.float64)) * 0.5
    finite = ~np.isnan(want)
    ulp = np.abs(y[finite] - want[finite]) / np.spacing(np.maximum(np.abs(want[finite]), 1e-37).astype(np.float32))
    assert ulp.max() <= 2.0, (ulp.max(), x[finite][ulp.argmax()])
    assert np.isnan(y[~finite]).all()
