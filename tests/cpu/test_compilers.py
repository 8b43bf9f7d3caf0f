"""Choosing the C compiler: `--cc` on the command line, else $CC, else gcc; targets own the flags; cross targets keep
their cross compiler; the timing runtime is built by the kernels' compiler (one OpenMP runtime per process)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import numpy as np
import pytest

from ansorc.cli import main
from ansorc.codegen.target import COMPILER_FLAGS, Target, compile_flags, compiler_family, host_cc
from ansorc.measure import builder

needs_clang = pytest.mark.skipif(shutil.which("clang") is None, reason="clang is not installed")
OK_TE = "param N = 64\ninput A: float32[N]\ninput B: float32[N]\noutput C[i] = A[i] * B[i] + 1.0\n"


def test_default_is_gcc_and_cc_environment_chooses(monkeypatch):
    monkeypatch.delenv("CC", raising=False)
    assert host_cc() == "gcc" and Target.from_name("native").cc == "gcc"
    monkeypatch.setenv("CC", "clang")
    assert Target.from_name("native").cc == "clang" and Target.from_name("avx2").cc == "clang"
    assert Target.from_name("native", "gcc").cc == "gcc"  # an explicit compiler wins over $CC
    assert Target.from_name("neon").cc == "aarch64-linux-gnu-gcc"  # a cross target keeps its cross compiler
    monkeypatch.setenv("CC", "gcc -O0")
    with pytest.raises(ValueError, match="one compiler program"):
        Target.from_name("native")


def test_flags_by_compiler_family():
    assert compiler_family("/usr/bin/clang-14") == "clang" and compiler_family("gcc-12") == "gcc"
    assert compiler_family("cc") == "gcc"  # anything else is driven like gcc
    target_flags = ("-O3", "-mavx2", "-mfma", "-fopenmp", "-shared", "-fPIC", "-std=c99")
    for cc in ("gcc", "clang"):  # a target's flags do not depend on the compiler; the builder adds the compiler's
        assert Target.from_name("avx2", cc).flags == target_flags
        assert compile_flags(target_flags, cc) == (*target_flags, *COMPILER_FLAGS[compiler_family(cc)])
    assert "-fno-predictive-commoning" not in compile_flags(builder.DEFAULT_CFLAGS, "/usr/bin/clang-14")
    assert compile_flags(compile_flags(target_flags, "gcc"), "gcc") == compile_flags(target_flags, "gcc")


def test_build_cache_keys_differ_by_compiler(monkeypatch):
    from ansorc.codegen.source import Source
    src = Source("int f(void) { return 1; }\n", "f", ())
    keys = {cc: builder.build_key(src, cc, builder.DEFAULT_CFLAGS) for cc in ("gcc", "clang")}
    assert keys["gcc"] != keys["clang"]


@needs_clang
def test_one_target_flag_set_builds_with_either_compiler(tmp_path):
    """The builder adds the compiler's own flags: gcc gets its tuning flag, clang (which rejects it) does not."""
    from ansorc.codegen.source import Source
    src = Source("int f(void) { return 1; }\n", "f", ())
    for cc in ("gcc", "clang"):
        [res] = builder.build([src], builder.DEFAULT_CFLAGS, cc=cc, build_dir=tmp_path)
        assert res.ok, res.error_msg
        assert ("-fno-predictive-commoning" in res.repro_command) == (cc == "gcc")


@needs_clang
def test_cli_cc_clang_builds_exports_and_restores_the_environment(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("CC", raising=False)
    te = tmp_path / "mul.te"
    te.write_text(OK_TE)
    assert main(["compile", str(te), "-o", str(tmp_path / "out"), "--trials", "0", "--cc", "clang", "--json"]) == 0
    files = json.loads(capsys.readouterr().out)["files"]
    assert "CC" not in os.environ  # --cc lasts for the command only
    header = open(files["h"]).read()
    assert "Build the library: clang -O3" in header
    deps = subprocess.run(["ldd", files["so"]], capture_output=True, text=True).stdout
    assert "libomp" in deps and "libgomp" not in deps  # really built by clang, with its OpenMP runtime
    from ansorc.kernel import load
    kern = load(files["so"])
    a, b = np.random.default_rng(0).standard_normal((2, 64)).astype(np.float32)
    np.testing.assert_allclose(kern(a, b), a * b + 1.0, rtol=1e-6)


@needs_clang
def test_tuning_with_clang_builds_runtime_and_kernels_with_clang(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ANSORC_CACHE_DIR", str(tmp_path / "cache"))
    te = tmp_path / "mul.te"
    te.write_text(OK_TE)
    log = tmp_path / "t.jsonl"
    assert main(["tune", str(te), "--log", str(log), "--trials", "3", "--cc", "clang", "--quiet", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["best_gflops"] > 0
    [runtime] = (tmp_path / "cache" / "runtime").glob("*.so")
    assert "libomp" in subprocess.run(["ldd", str(runtime)], capture_output=True, text=True).stdout
    libs = list((tmp_path / "cache" / "builds").glob("*.so"))
    assert libs and all("libomp" in subprocess.run(["ldd", str(p)], capture_output=True, text=True).stdout
                        for p in libs)
