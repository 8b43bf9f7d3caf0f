"""Build and run kernels for another architecture (NEON on x86-64) under an emulator, to check them with numpy.

A foreign kernel cannot be dlopen'ed into this process, so each Source gets the C `main` of codegen/cross.py
appended. The program is linked statically (qemu-user then needs no foreign shared libraries) and run as
`qemu-aarch64 -L /usr/aarch64-linux-gnu prog in0.bin ... out0.bin ...`. Programs are cached by content under
<cache_root>/cross.
"""
from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ansorc.codegen.cross import driver
from ansorc.codegen.source import Source
from ansorc.codegen.target import Target
from ansorc.ir.program.dtypes import NP_DTYPE
from ansorc.measure.builder import cache_root
from ansorc.measure.sealed import install, intact


@dataclass(frozen=True)
class Program:
    source: Source
    path: str | None      # the executable, None when the build failed
    error: str = ""


def cache_dir() -> Path:
    return cache_root() / "cross"


def _build_one(source: Source, target: Target, out_dir: Path, timeout: float) -> Program:
    cmd_flags = target.exe_flags
    text = source.code + driver(source)  # the driver carries the argument sizes, which the kernel may not show
    key = hashlib.sha256("\0".join([text, target.cc, *cmd_flags]).encode()).hexdigest()[:24]
    exe, src = out_dir / f"{key}.exe", out_dir / f"{key}.c"
    if intact(exe):  # trusted by content, not existence (sealed.py)
        return Program(source, str(exe))
    src.write_text(text)
    tmp = exe.with_name(f"{exe.name}.tmp.{os.getpid()}")
    cmd = [target.cc, *cmd_flags, "-o", str(tmp), str(src), "-lm"]  # -lm last: static links resolve in order
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Program(source, None, f"{exc}\nrepro: {shlex.join(cmd)}")
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        return Program(source, None, f"{proc.stderr[-4000:]}\nrepro: {shlex.join(cmd)}")
    install(tmp, exe)
    return Program(source, str(exe))


def build_programs(sources, target: "Target | str" = "neon", timeout: float = 120.0,
                   n_parallel: int | None = None) -> list:
    """Compile each source with the driver into a static program for `target`, in parallel."""
    target = Target.from_name(target)
    out_dir = cache_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max_workers=n_parallel or os.cpu_count() or 1) as pool:
        return list(pool.map(lambda s: _build_one(s, target, out_dir, timeout), sources))


def run_program(program: Program, inputs, target: "Target | str" = "neon", timeout: float = 120.0) -> list:
    """Run a built program on numpy inputs (in argument order); returns the outputs as arrays."""
    target = Target.from_name(target)
    if program.path is None:
        raise RuntimeError(f"program was not built:\n{program.error}")
    src = program.source
    with tempfile.TemporaryDirectory(prefix="ansorc_cross_") as tmp:
        paths = [os.path.join(tmp, f"{k}.bin") for k in range(len(src.args))]
        for spec, arr, path in zip(src.inputs, inputs, paths):
            np.ascontiguousarray(arr, dtype=NP_DTYPE[spec.dtype]).tofile(path)
        cmd = [*target.run_prefix, program.path, *paths]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"{shlex.join(cmd)} exited with {proc.returncode}:\n{proc.stderr[-2000:]}")
        return [np.fromfile(p, dtype=NP_DTYPE[a.dtype]).reshape(a.shape)
                for a, p in zip(src.outputs, paths[len(src.inputs):])]


def run_cross(source: Source, inputs, target: "Target | str" = "neon") -> list:
    """Build `source` for `target` and run it once on `inputs`; the outputs as numpy arrays."""
    [program] = build_programs([source], target)
    return run_program(program, inputs, target)


__all__ = ["build_programs", "run_program", "run_cross", "Program"]
