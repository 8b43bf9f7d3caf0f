"""Which CPUs measurement processes run on.

An OpenMP runtime started with OMP_PROC_BIND binds every thread of its team to one place, the calling (main)
thread included, and a process started from that thread inherits its one-CPU mask: after PyTorch ran a
parallel op in a process with OMP_PROC_BIND=true, our measure worker timed 2-thread kernels on one core
(docs/perf-notes.md, "Search and measurement"). The worker and the tuning run therefore use the CPUs of the whole
process: those it had when this module was imported, and those any of its threads may use."""
from __future__ import annotations

import contextlib
import glob
import os

ENV = "ANSORC_WORKER_CPUS"   # the CPU list a measure worker sets for itself, "0,1,2" (worker.py)


def _mask() -> set:
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):   # not Linux
        return set()


IMPORT_CPUS = _mask()


def _parse(cpu_list: str) -> set:
    out: set = set()
    for part in cpu_list.split(","):
        lo, _, hi = part.strip().partition("-")
        if lo.isdigit():
            out.update(range(int(lo), int(hi or lo) + 1))
    return out


def process_cpus() -> set:
    """The CPUs this process may use: those at import, and every CPU some thread of it may run on."""
    cpus = set(IMPORT_CPUS)
    for path in glob.glob("/proc/self/task/*/status"):
        try:
            with open(path) as f:
                line = next((ln for ln in f if ln.startswith("Cpus_allowed_list:")), "")
        except OSError:   # the thread exited meanwhile
            continue
        cpus |= _parse(line.partition(":")[2])
    return cpus or _mask()


def worker_env() -> dict:
    """{ENV: the process's CPUs} for a measure worker's environment ({} where affinity is unknown)."""
    cpus = process_cpus()
    return {ENV: ",".join(map(str, sorted(cpus)))} if cpus else {}


@contextlib.contextmanager
def all_process_cpus():
    """The calling thread on every CPU of the process for the block (its children start with that mask, as
    compilers do), then back on its own: in-process OpenMP keeps the binding it was timed with."""
    mine, cpus = _mask(), process_cpus()
    widened = bool(mine and cpus and cpus != mine)
    if widened:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        if widened:
            with contextlib.suppress(OSError):
                os.sched_setaffinity(0, mine)
