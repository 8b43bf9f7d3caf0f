"""The workspace pool of emitted C (codegen/pool.py): buffers reused between calls, the overflow served from the
heap, huge-page alignment, several threads at once; and kernels that use it right on every call."""
from __future__ import annotations

import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import ansorc
from ansorc import workloads
from ansorc.codegen import pool
from ansorc.codegen.c import PRELUDE
from ansorc.ir.program.evaluate import evaluate, random_inputs
from ansorc.search.default_schedule import default_cpu_schedule
from tests.kernel_text import body_of

HARNESS = r"""
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#define CHECK(c) do { if (!(c)) { printf("failed: %s (line %d)\n", #c, __LINE__); return 1; } } while (0)
static void* hammer(void* arg) {
  unsigned seed = (unsigned)(size_t)arg, bad = 0;
  for (int i = 0; i < 20000; ++i) {
    seed = seed * 1103515245u + 12345u;
    size_t n = 64 + (seed >> 8) % 5000;
    unsigned char* a = (unsigned char*)ansorc_workspace_take(n);
    unsigned char* b = (unsigned char*)ansorc_workspace_take(n / 2 + 1);
    if (!a || !b) { bad++; continue; }
    memset(a, (int)(seed & 255), n); memset(b, (int)(~seed & 255), n / 2 + 1);
    for (size_t k = 0; k < n; k += 97) bad += a[k] != (unsigned char)(seed & 255);
    for (size_t k = 0; k < n / 2 + 1; k += 97) bad += b[k] != (unsigned char)(~seed & 255);
    ansorc_workspace_give(b); ansorc_workspace_give(a);
  }
  return (void*)(size_t)bad;
}
int main(void) {
  void* p = ansorc_workspace_take(1000); CHECK(p != NULL); ansorc_workspace_give(p);
  void* q = ansorc_workspace_take(500); CHECK(q == p); ansorc_workspace_give(q);      /* reused, no new buffer */
  void* held[SLOTS + 2];
  for (int i = 0; i < SLOTS + 2; ++i) { held[i] = ansorc_workspace_take(4096); CHECK(held[i] != NULL); }
  for (int i = 0; i < SLOTS + 2; ++i) for (int j = 0; j < i; ++j) CHECK(held[i] != held[j]);  /* overflow: heap */
  for (int i = SLOTS + 1; i >= 0; --i) ansorc_workspace_give(held[i]);
  void* big = ansorc_workspace_take((size_t)3 << 20); CHECK(big != NULL);
  CHECK(((size_t)big & (((size_t)2 << 20) - 1)) == 0);                                    /* huge-page aligned */
  memset(big, 1, (size_t)3 << 20); ansorc_workspace_give(big);
  CHECK(ansorc_workspace_take((size_t)3 << 20) == big); ansorc_workspace_give(big);
  pthread_t t[4]; void* bad[4];
  for (int i = 0; i < 4; ++i) pthread_create(&t[i], NULL, hammer, (void*)(size_t)(i + 1));
  for (int i = 0; i < 4; ++i) { pthread_join(t[i], &bad[i]); CHECK(bad[i] == NULL); }
  printf("ok\n");
  return 0;
}
"""


@pytest.mark.parametrize("cc", ["gcc", "clang"])
def test_pool_reuses_overflows_aligns_and_is_thread_safe(tmp_path, cc):
    if shutil.which(cc) is None:
        pytest.skip(f"{cc} is not installed")
    src = tmp_path / "pool.c"
    src.write_text(PRELUDE + pool.POOL_PRELUDE + f"#define SLOTS {pool.POOL_SLOTS}\n" + HARNESS)
    exe = tmp_path / "pool"
    cmd = [cc, "-std=c99", "-O1", "-Wall", "-Werror=implicit-function-declaration", "-pthread", str(src),
           "-o", str(exe)]
    if subprocess.run(cmd + ["-fsanitize=address"], capture_output=True).returncode != 0:
        subprocess.run(cmd, check=True, capture_output=True)     # a compiler without its ASan runtime installed
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stdout + run.stderr


def test_a_kernel_with_a_pooled_workspace_is_right_on_every_call_and_from_threads():
    tensors = workloads.c2d(1, 30, 30, 64, 32, 3, 1, 1)     # its padded input (32 x 32 x 64 floats) is 256 KB+
    dag = ansorc.ComputeDAG(tensors)
    kern = ansorc.build(tensors, default_cpu_schedule(dag))
    assert pool.TAKE in kern.source and pool.GIVE in kern.source and "free(" not in body_of(kern.source, "kernel")

    def call(seed: int) -> float:
        inputs = random_inputs(dag.inputs, seed)
        want = evaluate(list(dag.outputs), inputs)[dag.outputs[0].name]
        got = kern(*[ansorc.array(inputs[t.name]) for t in dag.inputs])
        return float(np.abs(np.asarray(got) - want).max())

    assert max(call(s) for s in range(3)) < 1e-3                   # the buffer reused, its contents rewritten
    with ThreadPoolExecutor(4) as ex:
        assert max(ex.map(call, range(3, 15))) < 1e-3


def test_a_buffer_inside_a_parallel_loop_is_plain_heap_memory():
    """Per-iteration buffers of a parallel loop bypass the pool's one lock (malloc's thread caches serve them)."""
    from ansorc import te
    from ansorc.ir.schedule.steps import Annotate, ComputeAt, Split
    A = te.placeholder((64, 512), name="A")
    B = te.placeholder((512, 256), name="B")
    B2 = te.compute((512, 256), lambda k, j: B[k, j] * 2.0, name="B2")
    k = te.reduce_axis((0, 512), name="k")
    C = te.compute((64, 256), lambda i, j: te.sum(A[i, k] * B2[k, j], axis=k), name="C")
    steps = [Split("C", "i", (32,)), ComputeAt("B2", "C", "i.0"), Annotate("C", "i.0", "parallel")]
    kern = ansorc.build([A, B, C], steps)
    body = body_of(kern.source, "kernel")
    assert "ansorc_alloc(524288u)" in body and pool.TAKE not in body    # 512 KB of B2 per iteration of i.0
    a = np.random.rand(64, 512).astype(np.float32)
    b = np.random.rand(512, 256).astype(np.float32)
    np.testing.assert_allclose(np.asarray(kern(a, b)), a @ (2 * b), rtol=1e-4)
