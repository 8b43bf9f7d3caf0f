"""CUDA sources -> cubins with nvcc: one nvcc per core, a content-keyed cache, ptxas resource reports.

A cubin holds the program's kernels only; the runner (cuda_runner.py) loads it with the driver API and replays
Source.launches itself. nvcc runs with -Xptxas -v, and its per-kernel report (registers, shared memory, spills)
is parsed and kept next to the cubin, so that a cached build reports the same resources as a fresh one.
No --use_fast_math: results must match numpy's.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ansorc.codegen.source import Source
from ansorc.measure.builder import MAX_STDERR_CHARS, BuildResult, run_compiler, write_atomically, cache_root
from ansorc.measure.errors import MeasureErrorNo

DEFAULT_NVCC_TIMEOUT = 60.0     # seconds; ptxas on a heavily unrolled kernel can take several
NVCC_FLAGS: tuple[str, ...] = ("-O3", "-Xptxas", "-v")
STATIC_SHARED_LIMIT = 48 * 1024  # __shared__ arrays beyond this need dynamic shared memory and an opt-in

# Per-architecture limits for checks without a GPU at hand (CUDA programming guide, compute capability table).
ARCH_LIMITS = {
    "sm_80": {"max_threads_per_block": 1024, "max_registers_per_block": 65536, "warp_size": 32,
              "max_shared_per_block": 49152, "max_shared_per_block_optin": 166912},
    "sm_86": {"max_threads_per_block": 1024, "max_registers_per_block": 65536, "warp_size": 32,
              "max_shared_per_block": 49152, "max_shared_per_block_optin": 101376},
    "sm_89": {"max_threads_per_block": 1024, "max_registers_per_block": 65536, "warp_size": 32,
              "max_shared_per_block": 49152, "max_shared_per_block_optin": 101376},
    "sm_90": {"max_threads_per_block": 1024, "max_registers_per_block": 65536, "warp_size": 32,
              "max_shared_per_block": 49152, "max_shared_per_block_optin": 232448},
}


@dataclass(frozen=True)
class CudaBuildResult(BuildResult):
    """A BuildResult whose lib_path is a cubin, with ptxas' report per kernel:
    {kernel: {"registers", "shared_bytes", "stack_bytes", "spill_stores", "spill_loads", "constant_bytes"}}."""
    resources: dict = field(default_factory=dict)
    warning: str = ""           # e.g. register spills: legal, but worth knowing
    arch: str = ""


def nvcc_path() -> str | None:
    return shutil.which("nvcc") or (
        "/usr/local/cuda/bin/nvcc" if os.access("/usr/local/cuda/bin/nvcc", os.X_OK) else None)


_FUNC = re.compile(r"Compiling entry function '([^']+)'")
_PROPS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")
_CMEM = re.compile(r"(\d+) bytes cmem\[0\]")


def parse_ptxas(output: str) -> dict:
    """ptxas -v output -> {kernel: {registers, shared_bytes, stack_bytes, spill_stores, spill_loads,
    constant_bytes}}. Kernels are named as compiled (extern "C" names are unmangled)."""
    report: dict[str, dict] = {}
    current = None
    for line in output.splitlines():
        m = _FUNC.search(line)
        if m:
            current = report.setdefault(m.group(1), {"registers": 0, "shared_bytes": 0, "stack_bytes": 0,
                                                     "spill_stores": 0, "spill_loads": 0, "constant_bytes": 0})
            continue
        if current is None:
            continue
        m = _PROPS.search(line)
        if m:
            current["stack_bytes"], current["spill_stores"], current["spill_loads"] = map(int, m.groups())
        m = _USED.search(line)
        if m:
            current["registers"] = int(m.group(1))
            s, c = _SMEM.search(line), _CMEM.search(line)
            current["shared_bytes"] = int(s.group(1)) if s else 0
            current["constant_bytes"] = int(c.group(1)) if c else 0
    return report


def spill_warning(resources: dict) -> str:
    spills = [f"{k}: {r['spill_stores']} B spill stores, {r['spill_loads']} B spill loads"
              for k, r in sorted(resources.items()) if r["spill_stores"] or r["spill_loads"]]
    return "register spills: " + "; ".join(spills) if spills else ""


def check_limits(resources: dict, limits: dict, launches: Sequence = ()) -> str | None:
    """Why the program cannot launch on a device with `limits` (device_limits() or ARCH_LIMITS[arch]), or None.

    Without launches only per-kernel facts are checked (static shared memory); with them, every launch's
    threads, registers x threads and static + dynamic shared memory. Spills are not errors (see spill_warning)."""
    static_cap = limits.get("max_shared_per_block", STATIC_SHARED_LIMIT)
    optin = limits.get("max_shared_per_block_optin", static_cap)
    for kernel, r in sorted(resources.items()):
        if r["shared_bytes"] > static_cap:
            return f"kernel {kernel}: {r['shared_bytes']} B of static shared memory > {static_cap} B"
    for launch in launches:
        r = resources.get(launch.kernel)
        if r is None:
            return f"launch of {launch.kernel}: no such kernel in the cubin (ptxas compiled {sorted(resources)})"
        threads = 1
        for b in launch.block:
            threads *= int(b)
        if threads > limits.get("max_threads_per_block", 1024):
            return f"kernel {launch.kernel}: {threads} threads per block > {limits['max_threads_per_block']}"
        warp = limits.get("warp_size", 32)
        regs = r["registers"] * (-(-threads // warp) * warp)
        if regs > limits.get("max_registers_per_block", 65536):
            return (f"kernel {launch.kernel}: {r['registers']} registers x {threads} threads = {regs} > "
                    f"{limits['max_registers_per_block']} registers per block")
        shared = r["shared_bytes"] + int(launch.shared_bytes)
        if shared > optin:
            return f"kernel {launch.kernel}: {shared} B of shared memory (static + dynamic) > {optin} B"
    return None


_nvcc_ids: dict[str, str] = {}


def nvcc_id(nvcc: str) -> str:
    """All of `nvcc --version` (its first line names no version, unlike gcc's), so an upgrade changes the key."""
    if nvcc not in _nvcc_ids:
        try:
            out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.SubprocessError):
            out = ""
        _nvcc_ids[nvcc] = out.strip() or nvcc
    return _nvcc_ids[nvcc]


def cuda_build_key(source: Source, nvcc: str, arch: str, flags: Sequence[str]) -> str:
    text = "\0".join([source.key, nvcc_id(nvcc), arch, *flags])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _command(nvcc: str, arch: str, flags: Sequence[str], out: Path, src: Path) -> list[str]:
    return [nvcc, "-cubin", f"-arch={arch}", *flags, "-o", str(out), str(src)]


def _cached(source: Source, key: str, out_dir: Path, nvcc: str, arch: str, flags) -> CudaBuildResult | None:
    cubin, report = out_dir / f"{key}.cubin", out_dir / f"{key}.ptxas.json"
    if not (cubin.exists() and report.exists()):
        return None
    try:
        resources = json.loads(report.read_text())
    except (OSError, ValueError):
        return None
    repro = shlex.join(_command(nvcc, arch, flags, cubin, out_dir / f"{key}.cu"))
    return CudaBuildResult(source, str(cubin), MeasureErrorNo.NO_ERROR, "", 0.0, True, repro, resources,
                           spill_warning(resources), arch)


def _compile_one(source: Source, key: str, out_dir: Path, nvcc: str, arch: str, flags: Sequence[str],
                 timeout: float) -> CudaBuildResult:
    start = time.perf_counter()
    src, cubin = out_dir / f"{key}.cu", out_dir / f"{key}.cubin"
    repro = shlex.join(_command(nvcc, arch, flags, cubin, src))
    if source.lang != "cuda":
        return CudaBuildResult(source, None, MeasureErrorNo.COMPILE_DEVICE,
                               f"nvcc builds lang='cuda' sources, not {source.lang!r}", 0.0, arch=arch)
    write_atomically(src, source.code)
    tmp = cubin.with_name(f"{cubin.name}.tmp.{os.getpid()}.{threading.get_ident()}")
    try:
        code, output = run_compiler(_command(nvcc, arch, flags, tmp, src), timeout)
    except OSError as exc:
        code, output = -1, f"cannot run {nvcc}: {exc}"
    seconds = time.perf_counter() - start
    if code == 0:
        resources = parse_ptxas(output)
        write_atomically(out_dir / f"{key}.ptxas.json", json.dumps(resources))
        os.replace(tmp, cubin)  # last: a cubin in the cache always has its report
        return CudaBuildResult(source, str(cubin), MeasureErrorNo.NO_ERROR, "", seconds, False, repro, resources,
                               spill_warning(resources), arch)
    tmp.unlink(missing_ok=True)
    if code is None:
        msg = f"nvcc timed out after {timeout:g} s\nsource: {src}\nrepro: {repro}"
        return CudaBuildResult(source, None, MeasureErrorNo.BUILD_TIMEOUT, msg, seconds, False, repro, arch=arch)
    msg = f"nvcc exited with {code}:\n{output[-MAX_STDERR_CHARS:]}\nsource: {src}\nrepro: {repro}"
    return CudaBuildResult(source, None, MeasureErrorNo.COMPILE_DEVICE, msg, seconds, False, repro, arch=arch)


def build_cuda(sources: Sequence[Source], arch: str = "sm_90", timeout: float = DEFAULT_NVCC_TIMEOUT,
               n_parallel: int | None = None, build_dir: str | os.PathLike | None = None,
               flags: Sequence[str] = NVCC_FLAGS, nvcc: str | None = None) -> list[CudaBuildResult]:
    """Compile each source to <build_dir>/<key>.cubin in parallel (results in the order of `sources`).

    Cached cubins are reused (cached=True, build_seconds=0); failures are not cached."""
    nvcc = nvcc or nvcc_path() or "nvcc"
    out_dir = Path(build_dir) if build_dir is not None else cache_root() / "builds" / "cuda"
    out_dir.mkdir(parents=True, exist_ok=True)
    flags = tuple(flags)
    keys = [cuda_build_key(s, nvcc, arch, flags) for s in sources]
    results: dict[str, CudaBuildResult] = {}
    todo: dict[str, Source] = {}
    for source, key in zip(sources, keys):
        if key in results or key in todo:
            continue
        hit = _cached(source, key, out_dir, nvcc, arch, flags)
        if hit is not None:
            results[key] = hit
        else:
            todo[key] = source
    workers = max(1, min(n_parallel or os.cpu_count() or 1, len(todo) or 1))
    order = sorted(todo, key=lambda k: -len(todo[k].code))  # largest first, as in builder.build
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {k: pool.submit(_compile_one, todo[k], k, out_dir, nvcc, arch, flags, timeout) for k in order}
        for key, fut in futures.items():
            results[key] = fut.result()
    return [results[k] if results[k].source is s else _with_source(results[k], s) for s, k in zip(sources, keys)]


def _with_source(r: CudaBuildResult, source: Source) -> CudaBuildResult:
    return CudaBuildResult(source, r.lib_path, r.error_code, r.error_msg, r.build_seconds, r.cached,
                           r.repro_command, r.resources, r.warning, r.arch)


def with_limit_check(result: CudaBuildResult, limits: dict) -> CudaBuildResult:
    """The build, failed with COMPILE_DEVICE when its launches exceed the device's limits."""
    if not result.ok:
        return result
    problem = check_limits(result.resources, limits, result.source.launches)
    if problem is None:
        return result
    return CudaBuildResult(result.source, None, MeasureErrorNo.COMPILE_DEVICE, f"over the device limits: {problem}",
                           result.build_seconds, result.cached, result.repro_command, result.resources,
                           result.warning, result.arch)


def cuda_library_command(nvcc: str, arch: str, source: str, library: str) -> list:
    """The nvcc command that builds `library` from `source`: what export runs, and what its header says it ran."""
    return [nvcc, "-shared", "-Xcompiler", "-fPIC", "-O3", f"-arch={arch}", "-diag-suppress", "177,550", "-o", library,
            source]


def build_cuda_library(source: Source, out_dir: str | os.PathLike, arch: str = "sm_90",
                       timeout: float = 300.0, nvcc: str | None = None) -> Path:
    """lib<entry>.so from a CUDA source whose host launcher has a plain extern "C" entry. nvcc links the CUDA
    runtime statically (its default), so the library needs only the driver (libcuda.so.1) where it runs."""
    nvcc = nvcc or nvcc_path() or "nvcc"
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    src, lib = out / f"{source.entry}.cu", out / f"lib{source.entry}.so"
    write_atomically(src, source.code)
    tmp = lib.with_name(f"{lib.name}.tmp.{os.getpid()}")
    cmd = cuda_library_command(nvcc, arch, str(src), str(tmp))
    code, output = run_compiler(cmd, timeout)
    if code != 0:
        tmp.unlink(missing_ok=True)
        cmd[cmd.index(str(tmp))] = str(lib)
        raise RuntimeError(f"nvcc could not build {lib.name} ({'timeout' if code is None else code}): "
                           f"{output[-MAX_STDERR_CHARS:]}\nrepro: {shlex.join(cmd)}")
    os.replace(tmp, lib)
    return lib
