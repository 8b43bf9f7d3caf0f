"""What runs on the nodes of a Ray cluster (ray_backend.py drives it): builds as tasks, one runner per node.

Plain Python without `import ray`, so that it is testable without a cluster; ray_backend.py wraps
`build_for_cluster` in a remote function and `NodeRunner` in an actor. A library travels between nodes as its
bytes with their sha256 (nodes need not share a file system) and is installed into the measuring node's cache
under that digest, checked on arrival.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import re
import socket
import subprocess
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import numpy as np

from ansorc.targets import parse, plugin
from ansorc.codegen.source import Source
from ansorc.codegen.target import Target, library_flags, num_cores
from ansorc.measure.builder import BuildResult, build, cache_root
from ansorc.measure.errors import MeasureErrorNo
from ansorc.measure.runner import MeasureResult, Runner, RunnerConfig
from ansorc.measure.sealed import install, intact

EMULATED_NOTE = "emulated under qemu: timing not native"  # error_msg of a NEON result measured under qemu
NODE_BUILT = "node-built:"   # lib_path prefix of a build deferred to the measuring node (cross, CUDA)


def target_resource(target: str) -> str:
    """The custom resource a node advertises to measure `target`: ansorc-target-avx512 / -avx2 / -neon /
    -sm_90 ("native" names this machine's widest ISA)."""
    return f"ansorc-target-{parse(target).resource}"


def node_builds(target: str) -> bool:
    """True when the measuring node builds itself: a cross target (its compiler and emulator are there) or a GPU
    (nvcc is there); native x86 libraries are built by tasks on any node."""
    return parse(target).builds_on_node


@lru_cache(maxsize=None)
def native_march(cc: str) -> str | None:
    """The CPU model gcc's -march=native means on this machine (e.g. "cooperlake"), or None if it won't say."""
    try:
        out = subprocess.run([cc, "-march=native", "-Q", "--help=target"], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r"^\s*-march=\s+([A-Za-z0-9_.-]+)\s*$", out, re.M)
    return found.group(1) if found else None


def portable_flags(target: str) -> tuple:
    """Compiler flags a library built on one node needs to run on another. "native" means the driver's CPU
    model, named (-march=native on a builder node would mean that node's CPU), plus the flags of the ISA the
    source was rendered for: a compiler older than the CPU names the nearest model it knows, which may lack that
    ISA (gcc 12.2 on a Zen 4 says znver3, without AVX-512); else the ISA's own flags."""
    tgt = Target.from_name(target)
    if tgt.name != "native":
        return tgt.flags
    isa_flags = Target.from_name(tgt.isa).isa_flags
    march = native_march(tgt.cc)
    return library_flags((f"-march={march}", f"-mtune={march}", *isa_flags) if march else isa_flags)


def build_for_cluster(source: Source, flags: tuple, cc: str, timeout: float) -> tuple:
    """Build one library on this node: (BuildResult, sha256 hex or "", the library's bytes or b"")."""
    [res] = build([source], flags, timeout, 1, cc)
    if not res.ok:
        return res, "", b""
    data = Path(res.lib_path).read_bytes()
    return res, hashlib.sha256(data).hexdigest(), data


def install_library(digest: str, data: bytes) -> str:
    """The library's path in this node's cache (<cache>/ray_libs/<digest>.so), written if absent."""
    folder = cache_root() / "ray_libs"
    path = folder / f"{digest}.so"
    if intact(path):
        return str(path)
    if hashlib.sha256(data).hexdigest() != digest:
        raise ValueError(f"library {digest[:12]} arrived corrupted")
    folder.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.tmp.{os.getpid()}")
    tmp.write_bytes(data)
    install(tmp, path)
    return str(path)


def has_library(digest: str) -> bool:
    return intact(cache_root() / "ray_libs" / f"{digest}.so")


def token_path(host: str | None = None) -> Path:
    """The timing token's lock file: in this machine's temporary folder, named after the (sanitized) host."""
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", host or socket.gethostname())[:100]
    return Path(tempfile.gettempdir()) / f"ansorc-timing-{name}.lock"


@contextmanager
def timing_token(host: str | None = None):
    """Held while one candidate is measured: one at a time per physical machine. A file lock keyed by host
    name, so nodes that share a machine (local test clusters) share it; a dead holder's lock goes with it."""
    with open(token_path(host), "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@dataclass(frozen=True)
class Item:
    """One candidate sent to a runner: its build (lib_path as on the builder node, or NODE_BUILT) and, for a
    library built elsewhere, its digest and a box [ObjectRef] holding its bytes (fetched only if not cached)."""
    build: BuildResult
    digest: str = ""
    data_box: tuple = ()


class NodeRunner:
    """One per node offering the target: measures candidates one at a time under the machine's timing token.

    `fetch` turns a boxed object reference into its value (ray.get on the node; the identity in unit tests)."""

    def __init__(self, target: str, config: RunnerConfig, build_timeout: float, fetch=None):
        self.target, self.config, self.build_timeout = target, config, build_timeout
        # Ray sets OMP_NUM_THREADS=1 in its workers; the kernels must time with every core, as they will run
        os.environ["OMP_NUM_THREADS"] = str(num_cores())
        self.fetch = fetch or (lambda box: box[0])
        self.task_key: str | None = None
        self.task = None
        self.runner = None   # made on first use: a CPU Runner (programs built elsewhere)
        self.node_measure = None   # made on first use: the plug-in's build-and-time here (node_builds)

    def omp_threads(self) -> int:
        """The OpenMP threads the measured kernels get here."""
        return int(os.environ.get("OMP_NUM_THREADS", "0"))

    def measure(self, task_key: str, task_box: tuple, items: list, best_seconds: float | None,
                early_cut: bool) -> list:
        """MeasureResults of `items` in order; the task (boxed) is fetched only when it changes."""
        if task_key != self.task_key:
            self.task, self.task_key = self.fetch(task_box), task_key
            self._set_task()
        out = []
        for item in items:
            with timing_token():
                res = self._measure_one(item, best_seconds, early_cut)
            if res.ok and not res.lower_bound and res.costs:
                best_seconds = min(best_seconds or res.median, res.median)
            out.append(res)
        return out

    def _set_task(self) -> None:
        task = self.task
        if node_builds(self.target):  # these take the task with each candidate
            return
        if self.runner is None:
            self.runner = Runner(config=self.config)
        reference = self._local(task.reference) if isinstance(task.reference, Item) else task.reference
        self.runner.set_task(task.inputs, task.reference_outputs, **task.runner_options(reference))

    def _local(self, item: Item) -> BuildResult:
        """The build with lib_path in this node's cache (its bytes fetched only if the cache lacks them)."""
        if not item.build.ok or not item.digest:
            return item.build
        path = (str(cache_root() / "ray_libs" / f"{item.digest}.so") if has_library(item.digest)
                else install_library(item.digest, self.fetch(item.data_box)))
        return replace(item.build, lib_path=path)

    def _measure_one(self, item: Item, best: float | None, early_cut: bool) -> MeasureResult:
        if node_builds(self.target):
            if self.node_measure is None:
                self.node_measure = plugin(self.target).node_measure(parse(self.target), self.config,
                                                                     self.build_timeout)
            return self.node_measure(item.build.source, self.task, best, early_cut)
        return self.runner.run([self._local(item)], best, early_cut)[0]

    def close(self) -> None:
        if self.runner is not None:
            self.runner.close()
        close = getattr(self.node_measure, "close", None)   # a node backend that holds a worker
        if close is not None:
            close()


def measure_emulated(source: Source, target: str, task, config: RunnerConfig, timeout: float) -> MeasureResult:
    """Build `source` with the cross compiler and run it under the emulator: checked against the task's reference
    outputs; its wall time is recorded, flagged EMULATED_NOTE (never a native timing)."""
    from ansorc.measure.cross import build_programs, run_program
    start = time.perf_counter()
    [prog] = build_programs([source], target, timeout, 1)
    if prog.path is None:
        return MeasureResult((), MeasureErrorNo.COMPILE_HOST, prog.error, time.perf_counter() - start, time.time())
    inputs = task.inputs
    if isinstance(inputs, dict):
        inputs = [inputs[a.name] for a in source.inputs]
    try:
        t0 = time.perf_counter()
        outs = run_program(prog, inputs, target, config.timeout)
        seconds = time.perf_counter() - t0
    except Exception as exc:  # noqa: BLE001 - the emulated program failed or hung: the candidate's error
        code = MeasureErrorNo.RUN_TIMEOUT if "timed out" in str(exc) else MeasureErrorNo.RUNTIME_DEVICE
        return MeasureResult((), code, str(exc)[:2000], time.perf_counter() - start, time.time())
    expected = task.reference_outputs
    if isinstance(expected, dict):
        expected = [expected[a.name] for a in source.outputs]
    for got, want in zip(outs, expected or ()):
        if not np.allclose(got, want, rtol=config.rtol, atol=config.atol, equal_nan=True):
            return MeasureResult((), MeasureErrorNo.WRONG_ANSWER, "outputs differ from the reference (emulated)",
                                 time.perf_counter() - start, time.time())
    return MeasureResult((seconds,), MeasureErrorNo.NO_ERROR, EMULATED_NOTE, time.perf_counter() - start,
                         time.time(), False, 1)
