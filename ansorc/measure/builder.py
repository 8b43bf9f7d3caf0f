"""Sources -> shared libraries: one compiler process per core, a content-keyed cache, reproducible errors.

Each source becomes its own .so, compiled and linked by one compiler call. Batching several sources into one
compiler call saved nothing measurable (docs/measurement.md), and one library per source keeps entry names
free to repeat and makes the cache a plain file lookup. Two things do save time: the standard headers, above
all <immintrin.h> (~0.2 s of parsing per call), come from a precompiled header built once per compiler and
flags; and the largest sources start first, so that one slow compile does not run alone at the end. Cached
libraries and precompiled headers are used only while their content matches the digest recorded when they were
built (sealed.py), and temporary files of killed builds are swept.
"""
from __future__ import annotations

import hashlib
import os
import shlex
import signal
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ansorc.codegen.source import Source
from ansorc.codegen.target import compile_flags, host_cc, library_flags
from ansorc.measure.errors import MeasureErrorNo
from ansorc.measure.sealed import install, intact, sweep_leftovers

DEFAULT_CFLAGS: tuple[str, ...] = library_flags()  # the "native" target's: -O3 -march=native ... (any compiler)
RUNTIME_CFLAGS: tuple[str, ...] = ("-O2", "-fopenmp", "-shared", "-fPIC", "-std=c99")
DEFAULT_BUILD_TIMEOUT = 15.0  # seconds, Ansor's LocalBuilder default


def _runtime_dir() -> Path:
    """runtime/ of the checkout (source tree, editable install), else the copy a wheel installs as ansorc/_runtime."""
    package = Path(__file__).resolve().parents[1]
    checkout = package.parent / "runtime"
    return checkout if (checkout / "timer.c").exists() else package / "_runtime"


RUNTIME_DIR = _runtime_dir()
MAX_STDERR_CHARS = 4000
# Precompiled for every C build: what the generated prelude includes, plus the x86 intrinsics header. Sources
# include these again, which the headers' include guards make free.
PCH_HEADER = """#if !defined(_POSIX_C_SOURCE) || _POSIX_C_SOURCE < 200112L
#undef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200112L
#endif
#include <stdint.h>
#include <stdlib.h>
#include <math.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
"""
PCH_PREFIX = PCH_HEADER.split("#if defined(__x86_64__)")[0]  # generated sources start with exactly this


@dataclass(frozen=True)
class BuildResult:
    source: Source
    lib_path: str | None           # None when the build failed
    error_code: int                # MeasureErrorNo
    error_msg: str                 # compiler output, source path and repro command on failure
    build_seconds: float
    cached: bool = False           # True when the library came from the cache
    repro_command: str = ""        # shell command that rebuilds the library by hand

    @property
    def ok(self) -> bool:
        return self.error_code == MeasureErrorNo.NO_ERROR


def cache_root() -> Path:
    """$ANSORC_CACHE_DIR, else ~/.cache/ansorc. Builds go to <root>/builds, the runtime to <root>/runtime."""
    env = os.environ.get("ANSORC_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "ansorc"


def default_build_dir() -> Path:
    return cache_root() / "builds"


_compiler_ids: dict[str, str] = {}
_compiler_ids_lock = threading.Lock()


def compiler_id(cc: str) -> str:
    """First line of `cc --version`, so that a compiler upgrade invalidates the cache."""
    with _compiler_ids_lock:
        if cc not in _compiler_ids:
            try:
                out = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30).stdout
            except (OSError, subprocess.SubprocessError):
                out = ""
            _compiler_ids[cc] = out.splitlines()[0] if out else cc
        return _compiler_ids[cc]


def _header_digest() -> str:
    header = RUNTIME_DIR / "ansorc_runtime.h"
    return hashlib.sha256(header.read_bytes()).hexdigest() if header.exists() else ""


def build_key(source: Source, cc: str, flags: Sequence[str]) -> str:
    """Cache key: the source's content key plus everything else that changes the binary."""
    text = "\0".join([source.key, compiler_id(cc), *flags, _header_digest()])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


_pch_failed: set[str] = set()  # PCH folders whose header this compiler could not precompile
_pch_lock = threading.Lock()


def pch_flags(cc: str, flags: Sequence[str], timeout: float = DEFAULT_BUILD_TIMEOUT) -> list[str]:
    """["-include", header] with the header's precompiled form next to it, built once per compiler, flags and
    cache folder; [] when the compiler cannot make one (the sources then parse their headers themselves)."""
    cflags = [f for f in flags if f != "-shared"]
    ident = compiler_id(cc)
    digest = hashlib.sha256("\0".join([PCH_HEADER, ident, *cflags]).encode()).hexdigest()[:16]
    folder = cache_root() / "pch" / digest
    header = folder / "ansorc_pch.h"
    compiled = folder / ("ansorc_pch.h.pch" if "clang" in ident.lower() else "ansorc_pch.h.gch")
    with _pch_lock:
        # Checked on every batch, not remembered: the cache folder may have been cleared or switched meanwhile;
        # by content, not existence (the digest of the large .gch is remembered while its file is unchanged).
        if _text(header) == PCH_HEADER and intact(compiled):
            return ["-include", str(header)]
        if str(folder) in _pch_failed:
            return []
        try:
            folder.mkdir(parents=True, exist_ok=True)
            sweep_leftovers(folder)
            if _text(header) != PCH_HEADER:
                write_atomically(header, PCH_HEADER)  # never rewritten when present: clang checks its mtime
            tmp = compiled.with_name(f"{compiled.name}.tmp.{os.getpid()}")
            code, _ = run_compiler([cc, *cflags, "-x", "c-header", "-o", str(tmp), str(header)], timeout)
            if code == 0:
                install(tmp, compiled)
                return ["-include", str(header)]
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        _pch_failed.add(str(folder))
        return []


def _text(path: Path) -> str | None:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return None


def write_atomically(path: Path, data: str) -> None:
    """Write through a temporary file and a rename: a reader never sees half a file."""
    tmp = path.with_name(f"{path.name}.tmp.{os.getpid()}.{threading.get_ident()}")
    tmp.write_text(data)
    os.replace(tmp, path)


def run_compiler(cmd: list[str], timeout: float) -> tuple[int | None, str]:
    """(exit code or None on timeout, stderr). The compiler runs in its own session so that a timeout kills cc1 too."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return None, out or ""


def _compile_one(source: Source, key: str, build_dir: Path, cc: str, flags: Sequence[str], timeout: float,
                 extra: Sequence[str] = ()) -> BuildResult:
    start = time.perf_counter()
    src_path = build_dir / f"{key}.c"
    lib_path = build_dir / f"{key}.so"
    if source.lang != "c":
        return BuildResult(source, None, MeasureErrorNo.COMPILE_DEVICE,
                           f"no builder for lang={source.lang!r} yet", 0.0)
    write_atomically(src_path, source.code)
    tmp_lib = lib_path.with_name(f"{lib_path.name}.tmp.{os.getpid()}.{threading.get_ident()}")
    cmd = [cc, *flags, *extra, "-I", str(RUNTIME_DIR), "-o", str(tmp_lib), str(src_path)]
    repro = shlex.join([cc, *flags, *extra, "-I", str(RUNTIME_DIR), "-o", str(lib_path), str(src_path)])
    try:
        code, output = run_compiler(cmd, timeout)
    except OSError as exc:  # compiler missing or not executable
        code, output = -1, f"cannot run {cc}: {exc}"
    seconds = time.perf_counter() - start
    if code == 0:
        install(tmp_lib, lib_path)
        return BuildResult(source, str(lib_path), MeasureErrorNo.NO_ERROR, "", seconds, False, repro)
    tmp_lib.unlink(missing_ok=True)
    if code is None:
        msg = f"build timed out after {timeout:g} s\nsource: {src_path}\nrepro: {repro}"
        return BuildResult(source, None, MeasureErrorNo.BUILD_TIMEOUT, msg, seconds, False, repro)
    tail = output[-MAX_STDERR_CHARS:]
    msg = f"{cc} exited with {code}:\n{tail}\nsource: {src_path}\nrepro: {repro}"
    return BuildResult(source, None, MeasureErrorNo.COMPILE_HOST, msg, seconds, False, repro)


def build(sources: Sequence[Source], target_flags: Sequence[str] = DEFAULT_CFLAGS,
          timeout: float = DEFAULT_BUILD_TIMEOUT, n_parallel: int | None = None, cc: str | None = None,
          build_dir: str | os.PathLike | None = None) -> list[BuildResult]:
    """Compile every source into <build_dir>/<key>.so with `cc` (default: $CC, else gcc), in parallel; results are
    in the order of `sources`.

    A library already in the cache is reused (cached=True, build_seconds=0). Failed builds are not cached,
    so a fixed compiler or flag is picked up on the next call.
    """
    cc = cc or host_cc()
    out_dir = Path(build_dir) if build_dir is not None else default_build_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    sweep_leftovers(out_dir)  # temporary files of builders killed mid-compile
    flags = compile_flags(target_flags, cc)
    keys = [build_key(s, cc, flags) for s in sources]
    results: dict[str, BuildResult] = {}
    todo: dict[str, Source] = {}
    for source, key in zip(sources, keys):
        lib = out_dir / f"{key}.so"
        if key in results or key in todo:
            continue
        if intact(lib):  # a library is reused only while its bytes are those this builder installed
            repro = shlex.join([cc, *flags, "-I", str(RUNTIME_DIR), "-o", str(lib), str(out_dir / f"{key}.c")])
            results[key] = BuildResult(source, str(lib), MeasureErrorNo.NO_ERROR, "", 0.0, True, repro)
        else:
            todo[key] = source
    workers = max(1, min(n_parallel or os.cpu_count() or 1, len(todo) or 1))
    # The precompiled header pays off for sources that parse the intrinsics header (it is most of their parse).
    # Only for generated sources: they start with the same feature macros and includes as the header, so their
    # meaning cannot change (a hand-written source defining e.g. _GNU_SOURCE after the header would).
    wants_pch = {k for k, s in todo.items()
                 if s.lang == "c" and s.code.startswith(PCH_PREFIX) and "#include <immintrin.h>" in s.code}
    extra = pch_flags(cc, flags, timeout) if wants_pch else []
    # Largest first: compile time grows with the code, and a big one started last would finish alone.
    order = sorted(todo, key=lambda k: -len(todo[k].code))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {key: pool.submit(_compile_one, todo[key], key, out_dir, cc, flags, timeout,
                                    extra if key in wants_pch else ())
                   for key in order}
        for key, fut in futures.items():
            results[key] = fut.result()
    # Duplicates in the batch share one build, but each result names its own Source object.
    return [results[k] if results[k].source is s else _with_source(results[k], s) for s, k in zip(sources, keys)]


def _with_source(result: BuildResult, source: Source) -> BuildResult:
    return BuildResult(source, result.lib_path, result.error_code, result.error_msg, result.build_seconds,
                       result.cached, result.repro_command)


_runtime_lock = threading.Lock()


def runtime_library(cc: str | None = None, cache_dir: str | os.PathLike | None = None) -> Path:
    """The timing runtime (runtime/timer.c) compiled once into a small cached .so; returns its path. Built with the
    kernels' compiler (default: $CC, else gcc), so that a process loads one OpenMP runtime, not libgomp and libomp."""
    cc = cc or host_cc()
    root = Path(cache_dir) if cache_dir is not None else cache_root() / "runtime"
    text = (RUNTIME_DIR / "timer.c").read_text() + _header_digest() + compiler_id(cc) + " ".join(RUNTIME_CFLAGS)
    lib = root / f"ansorc_runtime_{hashlib.sha256(text.encode()).hexdigest()[:16]}.so"
    with _runtime_lock:
        if intact(lib):
            return lib
        root.mkdir(parents=True, exist_ok=True)
        tmp = lib.with_name(f"{lib.name}.tmp.{os.getpid()}")
        cmd = [cc, *RUNTIME_CFLAGS, "-I", str(RUNTIME_DIR), "-o", str(tmp), str(RUNTIME_DIR / "timer.c"), "-lm"]
        code, output = run_compiler(cmd, 120.0)
        if code != 0:
            tmp.unlink(missing_ok=True)
            raise RuntimeError(f"cannot build the ansorc runtime:\n{output}\nrepro: {shlex.join(cmd)}")
        install(tmp, lib)
        return lib
