"""Measurement throughput: candidates per minute for a batch of matmul programs, split into build and run time,
and the stability of one kernel measured repeatedly in one worker.

    python bench/measure_throughput.py                       # 64 hand-written GMM 1024 variants
    python bench/measure_throughput.py --sources pkg.mod:fn  # fn() -> list[Source] or (list[Source], reference Source)

Builds go to a fresh temporary cache so every build is real. For scale: TVM builds and runs 64 GMM 1024
candidates in about 56 s (27 s build, 29 s run) on the 2-core dev VM.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ansorc.codegen.source import ArgSpec, Source  # noqa: E402
from ansorc.measure.builder import build  # noqa: E402
from ansorc.measure.runner import Runner  # noqa: E402
from peak_fma import busy_cpus, wait_until_idle  # noqa: E402

PACKED = ("int {e}_packed(void** args) "
          "{{ return {e}((const float*)args[0], (const float*)args[1], (float*)args[2]); }}\n")

PLAIN = """int {e}(const float* restrict A, const float* restrict B, float* restrict C) {{
  for (int x = 0; x < {n} * {n}; ++x) C[x] = 0.0f;
  {par}
  for (int {l0} = 0; {l0} < {n}; ++{l0})
    for (int {l1} = 0; {l1} < {n}; ++{l1})
      for (int {l2} = 0; {l2} < {n}; ++{l2})
        C[i * {n} + j] += A[i * {n} + k] * B[k * {n} + j];
  return 0;
}}
"""

# Tiled i/j/k with an i-k-j inner nest (contiguous, vectorizable j), accumulating in C or in a local tile.
TILED = """int {e}(const float* restrict A, const float* restrict B, float* restrict C) {{
  #pragma omp parallel for {collapse}
  for (int i0 = 0; i0 < {n}; i0 += {ti})
    for (int j0 = 0; j0 < {n}; j0 += {tj}) {{
      float acc[{ti}][{tj}];
      for (int i = 0; i < {ti}; ++i) for (int j = 0; j < {tj}; ++j) acc[i][j] = 0.0f;
      for (int k0 = 0; k0 < {n}; k0 += {tk})
        for (int i = 0; i < {ti}; ++i)
          for (int k = k0; k < k0 + {tk}; ++k) {{
            float a = A[(i0 + i) * {n} + k];
            {unroll}
            for (int j = 0; j < {tj}; ++j) acc[i][j] += a * B[k * {n} + j0 + j];
          }}
      for (int i = 0; i < {ti}; ++i) for (int j = 0; j < {tj}; ++j) C[(i0 + i) * {n} + j0 + j] = acc[i][j];
    }}
  return 0;
}}
"""


def matmul_args(n: int) -> tuple:
    return (ArgSpec("A", (n, n), "float32", False), ArgSpec("B", (n, n), "float32", False),
            ArgSpec("C", (n, n), "float32", True))


def matmul_sources(n: int = 1024, count: int = 64, seed: int = 0) -> list[Source]:
    """`count` distinct hand-written GMM variants: a few plain loop orders, the rest tiled, shuffled."""
    rng = random.Random(seed)
    args = matmul_args(n)
    sources = []
    for order in ("ikj", "ijk", "kij"):  # fast-ish, slow (strided B), mid; the worst orders (j/k-i inner) are left out
        e = f"mm_{order}"
        par = "#pragma omp parallel for" if order[0] != "k" else ""
        sources.append(Source("#include <stddef.h>\n" + PLAIN.format(e=e, n=n, par=par, l0=order[0], l1=order[1],
                                                                 l2=order[2]) + PACKED.format(e=e), e, args))
    tiles = [t for t in (4, 8, 16, 32, 64, 128, 256) if n % t == 0]
    seen = set()
    while len(sources) < count:
        ti, tj, tk = rng.choice(tiles[:5]), rng.choice(tiles[1:]), rng.choice(tiles)
        unroll = rng.choice(["", "#pragma GCC unroll 4", "#pragma GCC unroll 16"])
        collapse = rng.choice(["", "collapse(2)"])
        if (ti, tj, tk, unroll, collapse) in seen or ti * tj > 64 * 256:
            continue
        seen.add((ti, tj, tk, unroll, collapse))
        e = f"mm_tiled_{len(sources)}"
        code = TILED.format(e=e, n=n, ti=ti, tj=tj, tk=tk, unroll=unroll, collapse=collapse) + PACKED.format(e=e)
        sources.append(Source(code, e, args))
    rng.shuffle(sources)
    return sources


class OtherLoad:
    """CPUs used by other processes over a span: machine-wide busy time minus our own and our workers'."""

    def __init__(self):
        self.start = (self._machine_busy(), self._own(), time.monotonic())

    @staticmethod
    def _machine_busy() -> float:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
        return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")

    @staticmethod
    def _own() -> float:
        t = os.times()
        return t.user + t.system + t.children_user + t.children_system

    def cpus(self) -> float:
        busy0, own0, t0 = self.start
        other = (self._machine_busy() - busy0) - (self._own() - own0)
        return round(max(0.0, other) / max(1e-9, time.monotonic() - t0), 2)


def load_sources(spec: str):
    """'pkg.module:function' -> (sources, reference Source or None)."""
    module, _, name = spec.partition(":")
    got = getattr(importlib.import_module(module), name)()
    return (list(got[0]), got[1]) if isinstance(got, tuple) else (list(got), None)


def measure_batch(sources: list[Source], reference: Source | None, runner_kwargs: dict, build_dir: str) -> dict:
    load = OtherLoad()  # the compilers and the worker are our children: reaped, they count as our own time
    t0 = time.perf_counter()
    builds = build(sources, build_dir=build_dir)
    ref_build = build([reference], build_dir=build_dir)[0] if reference is not None else None
    build_s = time.perf_counter() - t0
    inputs, refs = None, None
    if reference is None and sources[0].args == matmul_args(sources[0].args[0].shape[0]):
        rng = np.random.default_rng(0)
        n = sources[0].args[0].shape[0]
        inputs = [rng.uniform(-1, 1, (n, n)).astype(np.float32) for _ in range(2)]
        refs = [inputs[0].astype(np.float64) @ inputs[1].astype(np.float64)]
    t1 = time.perf_counter()
    with Runner(inputs, refs, reference=ref_build, **runner_kwargs) as runner:
        results = runner.run(builds)
        starts = runner.worker_starts
    run_s = time.perf_counter() - t1
    ok = [r for r in results if r.ok]
    errors: dict[str, int] = {}
    for r in results:
        if not r.ok:
            errors[r.error_code.name] = errors.get(r.error_code.name, 0) + 1
    total = build_s + run_s
    return {"candidates": len(sources), "build_s": round(build_s, 2), "run_s": round(run_s, 2),
            "total_s": round(total, 2), "candidates_per_min": round(60 * len(sources) / total, 1),
            "ok": len(ok), "cut_early": sum(r.lower_bound for r in ok), "errors": errors, "worker_starts": starts,
            "best_median_s": min((r.median for r in ok if not r.lower_bound), default=None),
            "max_single_candidate_s": round(max(r.all_cost for r in results), 2),
            "other_processes_cpus": load.cpus()}


def stability(source: Source, runs: int, runner_kwargs: dict, build_dir: str, fresh_workers: bool = False) -> dict:
    """The same kernel measured `runs` times in a row, in one worker child or each time in a newly forked one
    (as after a crash or an early-cut kill): spread of the medians."""
    lib = build([source], build_dir=build_dir)[0]
    kwargs = dict(runner_kwargs, early_cut_ratio=None)
    load = OtherLoad()
    with Runner(**kwargs) as runner:
        results = [runner.run([lib])[0]]  # starts the worker
        for _ in range(runs - 1):
            if fresh_workers:
                runner.fresh_worker()
            results.append(runner.run([lib])[0])
    other = load.cpus()  # after close: the worker processes are reaped, so their time counts as our own
    medians = [r.median for r in results]
    fastest = [min(r.costs) for r in results]
    return {"kernel": source.entry, "runs": runs, "fresh_worker_each_run": fresh_workers,
            "medians_s": [round(m, 6) for m in medians],
            "max_over_min": round(max(medians) / min(medians), 4), "median_s": statistics.median(medians),
            "max_over_min_of_fastest_repeat": round(max(fastest) / min(fastest), 4),
            "other_processes_cpus": other}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sources", help="module:function returning the candidate Sources")
    p.add_argument("--n", type=int, default=1024)
    p.add_argument("--count", type=int, default=64)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--min-repeat-ms", type=float, default=100.0)
    p.add_argument("--early-cut", type=float, default=2.0, help="ratio to the best; 0 disables")
    p.add_argument("--cache-flush", action="store_true")
    p.add_argument("--stability-runs", type=int, default=10)
    p.add_argument("--json", help="also write the report here")
    p.add_argument("--wait-idle", type=float, default=0.0, help="wait up to this many seconds for an idle machine")
    a = p.parse_args(argv)
    sources, reference = load_sources(a.sources) if a.sources else (matmul_sources(a.n, a.count), None)
    runner_kwargs = {"repeat": a.repeat, "min_repeat_ms": a.min_repeat_ms, "early_cut_ratio": a.early_cut or None,
                     "cache_flush": a.cache_flush}
    # Other processes on a 2-core VM change every figure here; the report says how busy the machine was.
    report = {"busy_cpus_before": wait_until_idle(a.wait_idle, threshold=0.2) if a.wait_idle else busy_cpus(),
              "settings": runner_kwargs}
    with tempfile.TemporaryDirectory(prefix="ansorc-bench-") as build_dir:
        report["throughput"] = measure_batch(sources, reference, runner_kwargs, build_dir)
        stable = next((s for s in sources if s.entry.startswith("mm_tiled")), sources[0])
        if a.stability_runs:
            report["stability"] = stability(stable, a.stability_runs, runner_kwargs, build_dir)
            report["stability_fresh_workers"] = stability(stable, a.stability_runs, runner_kwargs, build_dir, True)
    report["busy_cpus_after"] = busy_cpus()
    report["loadavg_1min_after"] = round(os.getloadavg()[0], 2)
    text = json.dumps(report, indent=2)
    print(text)
    if a.json:
        Path(a.json).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
