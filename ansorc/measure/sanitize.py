"""Run a generated kernel under AddressSanitizer and UndefinedBehaviorSanitizer.

A sanitized library cannot be dlopen'ed into a Python process that lacks the ASan runtime, so the kernel is
linked with the stand-alone driver of codegen/cross.py (inputs and outputs through files) into a program built
with -fsanitize=address,undefined, and run as a subprocess. Any report (heap/stack overflow, use after free,
signed overflow, misaligned access, shift or division faults) makes the run fail with the report's first lines.
"""
from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ansorc.codegen.cross import driver
from ansorc.codegen.source import Source
from ansorc.ir.program.dtypes import NP_DTYPE
from ansorc.measure.builder import RUNTIME_DIR, cache_root
from ansorc.measure.sealed import install, intact

# -O0 and no -g: compile time (-g on an unrolled kernel can take a minute); the checks are the same
SANITIZE_FLAGS = ("-O0", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                  "-fno-omit-frame-pointer", "-fopenmp", "-std=c99")
RUN_ENV = {"ASAN_OPTIONS": "detect_leaks=0:abort_on_error=0:exitcode=86",   # the driver never frees: no leak report
           "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1:exitcode=87", "OMP_NUM_THREADS": "2"}
REPORT_MARKERS = ("AddressSanitizer", "runtime error:", "UndefinedBehaviorSanitizer", "LeakSanitizer")


@dataclass(frozen=True)
class SanitizedRun:
    outputs: list | None     # numpy arrays in output order; None when the program failed
    report: str              # "" when clean; otherwise the sanitizer report or the failure


class SanitizerUnavailable(RuntimeError):
    pass


def build_sanitized(source: Source, cc: str = "gcc", isa_flags=("-march=native",), timeout: float = 120.0) -> Path:
    """The kernel plus driver compiled into a sanitized program (cached by content)."""
    flags = (*SANITIZE_FLAGS, *isa_flags)
    text = source.code + driver(source)  # the driver carries the argument sizes, which the kernel may not show
    key = hashlib.sha256("\0".join([text, cc, *flags]).encode()).hexdigest()[:24]
    out_dir = cache_root() / "sanitize"
    out_dir.mkdir(parents=True, exist_ok=True)
    exe, src = out_dir / f"{key}.exe", out_dir / f"{key}.c"
    if intact(exe):
        return exe
    src.write_text(text)
    tmp = exe.with_name(f"{exe.name}.tmp.{os.getpid()}")
    cmd = [cc, *flags, "-I", str(RUNTIME_DIR), "-o", str(tmp), str(src), "-lm"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        if "asan" in proc.stderr.lower() or "ubsan" in proc.stderr.lower():
            raise SanitizerUnavailable(f"{cc} cannot link the sanitizers:\n{proc.stderr[-2000:]}")
        raise RuntimeError(f"sanitized build failed:\n{proc.stderr[-4000:]}\nrepro: {shlex.join(cmd)}")
    install(tmp, exe)
    return exe


def run_sanitized(source: Source, inputs, cc: str = "gcc", timeout: float = 120.0) -> SanitizedRun:
    """Build (cached) and run `source` on numpy inputs (argument order) under ASan+UBSan."""
    exe = build_sanitized(source, cc)
    with tempfile.TemporaryDirectory(prefix="ansorc_asan_") as tmp:
        paths = [os.path.join(tmp, f"{k}.bin") for k in range(len(source.args))]
        for spec, arr, path in zip(source.inputs, inputs, paths):
            np.ascontiguousarray(arr, dtype=NP_DTYPE[spec.dtype]).tofile(path)
        env = {**os.environ, **RUN_ENV}
        env.pop("LD_PRELOAD", None)
        try:
            proc = subprocess.run([str(exe), *paths], capture_output=True, text=True, timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            return SanitizedRun(None, f"timed out after {timeout:g} s: {exe}")
        report = "\n".join(proc.stderr.splitlines()[:40])
        if proc.returncode != 0 or any(m in proc.stderr for m in REPORT_MARKERS):
            return SanitizedRun(None, f"exit {proc.returncode}: {exe}\n{report}" if report else f"exit "
                                f"{proc.returncode}: {exe}")
        outs = [np.fromfile(p, dtype=NP_DTYPE[a.dtype]).reshape(a.shape)
                for a, p in zip(source.outputs, paths[len(source.inputs):])]
        return SanitizedRun(outs, "")


__all__ = ["run_sanitized", "build_sanitized", "SanitizedRun", "SanitizerUnavailable", "SANITIZE_FLAGS"]
