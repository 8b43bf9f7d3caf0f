"""The kernels' thread pool (codegen/parallel.py) on its own, through a small C harness: every iteration runs
exactly once whatever the claim size, the team really works in parallel, workers leave when idle and before
their library is unloaded, a forked child and concurrent callers get correct results, and without -fopenmp
nothing but the calling thread runs. Each case runs in a fresh Python process (threads and forks stay there)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from ansorc.codegen.c import PRELUDE
from ansorc.codegen.parallel import THREADS_PRELUDE
from tests.cpu.compilers import COMPILERS

HARNESS = r"""
#include <string.h>
#include <time.h>
static long owner[1 << 16];
static void count(void* hits, int32_t lo, int32_t hi) {
  for (int32_t i = lo; i < hi; ++i) __atomic_fetch_add((int32_t*)hits + i, 1, __ATOMIC_RELAXED);
}
static void slow(void* ctx, int32_t lo, int32_t hi) {
  (void)ctx;
  struct timespec t = {0, 200000};
  for (int32_t i = lo; i < hi; ++i) { owner[i] = (long)pthread_self_id(); nanosleep(&t, NULL); }
}
/* -1 when some iteration of some repetition ran other than once, else 0 */
int cover(int32_t n, int32_t chunk, int reps) {
  int32_t* hits = (int32_t*)calloc((size_t)n, sizeof(int32_t));
  int bad = 0;
  for (int r = 0; r < reps && !bad; ++r) {
    memset(hits, 0, sizeof(int32_t) * (size_t)n);
    ansorc_parallel_for(count, hits, n, chunk);
    for (int32_t i = 0; i < n; ++i) bad |= hits[i] != 1;
  }
  free(hits);
  return bad ? -1 : 0;
}
/* how many threads ran the iterations of one slow loop */
int threads_used(int32_t n) {
  ansorc_parallel_for(slow, NULL, n, 0);
  int distinct = 0;
  for (int32_t i = 0; i < n; ++i) {
    int seen = 0;
    for (int32_t j = 0; j < i; ++j) seen |= owner[j] == owner[i];
    distinct += !seen;
  }
  return distinct;
}
"""
THREAD_ID = """#include <pthread.h>
static unsigned long pthread_self_id(void) { return (unsigned long)pthread_self(); }
"""


def _build(tmp_path, cc: str, openmp: bool = True) -> str:
    src, lib = tmp_path / "pool.c", tmp_path / ("pool.so" if openmp else "serial.so")
    src.write_text(PRELUDE + THREAD_ID + THREADS_PRELUDE + HARNESS)
    flags = ["-O2", "-shared", "-fPIC", "-std=c99", *(["-fopenmp"] if openmp else ["-pthread"])]
    subprocess.run([cc, *flags, "-o", str(lib), str(src)], check=True, capture_output=True, timeout=120)
    return str(lib)


def _python(lib: str, code: str, threads: int = 2, **env) -> str:
    code = PRELUDE_PY.format(lib=lib) + textwrap.dedent(code)
    env = {"OMP_NUM_THREADS": str(threads), "PATH": "/usr/bin:/bin", **env}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env=env)
    assert run.returncode == 0, run.stderr
    return run.stdout


PRELUDE_PY = """
import ctypes, os, threading, time
def tasks(): return len(os.listdir("/proc/self/task"))
lib = ctypes.CDLL({lib!r})
"""


@pytest.mark.parametrize("cc", COMPILERS)
def test_every_iteration_runs_once_for_every_claim_size(tmp_path, cc):
    lib = _build(tmp_path, cc)
    out = _python(lib, """
        for n in (1, 2, 3, 7, 64, 1000, 65536):
            for chunk in (0, 1, -1, 5):
                assert lib.cover(n, chunk, 50 if n < 65536 else 5) == 0, (n, chunk)
        print("ok")
    """, threads=3)
    assert out.strip() == "ok"


def test_the_team_shares_a_loop_and_leaves_when_idle_or_unloaded(tmp_path):
    lib = _build(tmp_path, "gcc")
    out = _python(lib, """
        base = tasks()
        used = lib.threads_used(200)     # 200 x 0.2 ms: the worker takes part
        busy = tasks()
        time.sleep(1.6)                  # idle for over a second: the worker exits
        idle = tasks()
        lib.cover(1000, 0, 3)            # and comes back on the next call
        back = tasks()
        import _ctypes
        _ctypes.dlclose(lib._handle)     # joins the worker before unmapping its code
        time.sleep(1.3)                  # a worker left behind would wake in unmapped code here
        print(base, used, busy, idle, back, tasks())
    """)
    base, used, busy, idle, back, after = map(int, out.split())
    assert used == 2 and busy == base + 1 and idle == base and back == base + 1 and after == base


def test_a_forked_child_and_concurrent_callers_get_every_iteration(tmp_path):
    lib = _build(tmp_path, "gcc")
    out = _python(lib, """
        assert lib.cover(4096, 0, 5) == 0
        pid = os.fork()
        if pid == 0:     # the parent's worker does not exist here
            os._exit(0 if lib.cover(4096, 0, 20) == 0 and lib.threads_used(100) == 2 else 1)
        assert os.waitpid(pid, 0)[1] == 0
        results = []
        calls = [threading.Thread(target=lambda: results.append(lib.cover(20000, 0, 20))) for _ in range(3)]
        [t.start() for t in calls]; [t.join() for t in calls]
        print(results)
    """)
    assert out.strip() == "[0, 0, 0]"


def test_without_openmp_the_loop_runs_on_the_calling_thread(tmp_path):
    lib = _build(tmp_path, "gcc", openmp=False)
    out = _python(lib, """
        base = tasks()
        print(lib.cover(1000, 0, 3), lib.threads_used(20), tasks() - base)
    """)
    assert out.split() == ["0", "1", "0"]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 cores")
def test_with_omp_proc_bind_the_worker_takes_the_next_core(tmp_path):
    # OpenMP binds the calling thread to one core, and a thread it makes inherits that mask: without its own
    # binding the worker would share the caller's core
    lib = _build(tmp_path, "gcc")
    out = _python(lib, """
        lib.threads_used(50)
        for t in sorted(os.listdir("/proc/self/task")):
            print([x.split()[1] for x in open(f"/proc/self/task/{t}/status") if x.startswith("Cpus_allowed_list")][0])
    """, OMP_PROC_BIND="true")
    masks = out.split()
    assert len(masks) == 2 and masks[0] != masks[1] and all("-" not in m and "," not in m for m in masks), masks
