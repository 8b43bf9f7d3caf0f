"""Peak float32 FMA throughput of this machine: independent FMA chains on every core, timed inside C.

    python ansorc/suite/peak.py [--threads 2] [--chains 12] [--isa native] [--kind fp32|int8|bf16]

Each thread runs `chains` independent accumulators (enough to cover the FMA latency times the FMA ports),
built from the same simd.py tables the code generator uses, so the figure is the ceiling for ansorc's kernels
on this ISA. Reported: median GFLOP/s over repeats.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import time


from ansorc.codegen import simd
from ansorc.codegen.source import Source
from ansorc.codegen.target import Target
from ansorc.measure.builder import build

TEMPLATE = """#include <omp.h>
#include <stdint.h>
{header}
volatile float ansorc_peak_sink;
/* Seconds for `iters` rounds of `chains` dependent-free FMAs of {lanes} lanes on each of `threads` threads. */
double ansorc_peak(int64_t iters, int threads) {{
  double t0 = omp_get_wtime();
  #pragma omp parallel num_threads(threads)
  {{
    {vtype} x = {set1_x}, y = {set1_y};
    {decls}
    for (int64_t i = 0; i < iters; ++i) {{
      {body}
    }}
    float t[{lanes}];
    {store};
    ansorc_peak_sink = t[0];
  }}
  return omp_get_wtime() - t0;
}}
"""


def busy_cpus(seconds: float = 0.5) -> float:
    """CPUs busy machine-wide over `seconds` (from /proc/stat); other tenants change every figure here."""
    def sample():
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        return sum(fields), fields[3] + fields[4]
    (t0, i0), _ = sample(), time.sleep(seconds)
    t1, i1 = sample()
    return round((1 - (i1 - i0) / max(1, t1 - t0)) * (os.cpu_count() or 1), 2)


def wait_until_idle(max_wait: float, threshold: float = 0.3) -> float:
    """Wait up to max_wait seconds until the machine uses < threshold CPUs; returns the last reading."""
    deadline = time.monotonic() + max_wait
    busy = busy_cpus()
    while busy > threshold and time.monotonic() < deadline:
        busy = busy_cpus(1.0)
    return busy


def peak_source(isa: str, chains: int) -> tuple:
    lanes = max(n for d, n in simd.caps(isa).types if d == "float32")
    f = lambda op, **kw: simd.intrinsic(isa, op, "float32", lanes).format(**kw)  # noqa: E731
    vtype = simd.vector_type(isa, "float32", lanes)
    decls = " ".join(f"{vtype} a{c} = {f('set1', a=f'{c}.0f')};" for c in range(chains))
    body = " ".join(f"a{c} = {f('fma', a=f'a{c}', b='x', c='y')};" for c in range(chains))
    acc = "a0"   # every chain feeds the sink, so none is dead code
    for c in range(1, chains):
        acc = f("+", a=acc, b=f"a{c}")
    code = TEMPLATE.format(header=simd.prelude(isa), vtype=vtype, lanes=lanes, set1_x=f("set1", a="0.999999f"),
                           set1_y=f("set1", a="1e-7f"), decls=decls, body=body, store=f("store", p="t", v=acc))
    return code, lanes


def peak_call(isa: str = "native", threads: int | None = None, chains: int = 12, seconds: float = 0.002) -> tuple:
    """(fn, flops): a no-argument call of the FMA microbenchmark that lasts about `seconds`, and the FLOPs it does.
    ansorc/suite/timing.py times it alternating with a row's contenders: the peak of the minutes the row was timed in
    (on a shared VM it moves between hours; docs/measurement.md)."""
    target = Target.from_name(isa)
    threads = threads or target.num_cores
    code, lanes = peak_source(target.isa, chains)
    [res] = build([Source(code, "ansorc_peak", ())], target_flags=target.flags, cc=target.cc)
    if not res.ok:
        raise RuntimeError(res.error_msg)
    fn = ctypes.CDLL(res.lib_path).ansorc_peak
    fn.restype, fn.argtypes = ctypes.c_double, [ctypes.c_int64, ctypes.c_int]
    iters = calibrated_iters(lambda n: fn(n, threads), seconds)
    return (lambda: fn(iters, threads)), 2.0 * lanes * chains * iters * threads


def calibrated_iters(seconds_of, seconds: float, start: int = 1000, tries: int = 3) -> int:
    """Iterations for one call of `seconds_of(iters)` to last about `seconds`. Each reading is the fastest of
    `tries` calls: on a loaded machine one call can stall for a scheduler slice (on CI a stalled reading sized the
    loop to time OpenMP's wake-up rather than FMAs; docs/perf-notes.md), and a single stalled reading must not
    shrink the loop. Never fewer iterations than the doubling reached, so the loop outweighs a parallel region's
    start."""
    fastest = lambda n: max(min(seconds_of(n) for _ in range(tries)), 1e-9)  # noqa: E731
    iters, took = start, fastest(start)
    while took < seconds / 4:
        iters *= 2
        took = fastest(iters)
    return max(iters, int(iters * seconds / took))


def measure_peak(isa: str = "native", threads: int | None = None, chains: int = 12, repeats: int = 7,
                 seconds: float = 0.3) -> float:
    """Median GFLOP/s of the FMA microbenchmark."""
    call, flops = peak_call(isa, threads, chains, seconds)
    return statistics.median(flops / call() / 1e9 for _ in range(repeats))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--isa", default="native")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--chains", type=int, default=12)
    ap.add_argument("--kind", choices=("fp32", "int8", "bf16"), default="fp32",
                    help="fp32 FMAs, or the int8 / bf16 dot-product instructions (suite/peak_dot.py)")
    ap.add_argument("--wait-idle", type=float, default=0.0, help="wait up to this many seconds for an idle machine")
    args = ap.parse_args()
    t = Target.from_name(args.isa)
    busy = wait_until_idle(args.wait_idle) if args.wait_idle else busy_cpus()
    if args.kind != "fp32":
        return dot_main(args, busy)
    g = measure_peak(args.isa, args.threads, args.chains)
    print(f"peak FMA ({t.isa}, {args.threads or t.num_cores} threads, {args.chains} chains): {g:.0f} GFLOP/s "
          f"(busy CPUs before: {busy}, after: {busy_cpus()})")


def dot_main(args, busy: float) -> None:
    from .peak_dot import measure_dot_peak
    loop, g = measure_dot_peak(args.kind, args.threads, args.chains)
    threads = args.threads or Target.from_name("native").num_cores
    if loop is None:
        print(f"peak {args.kind}: this CPU has no {args.kind} dot-product instruction (skipped)")
        return
    print(f"peak {args.kind} ({loop.name}, {threads} threads, {args.chains} chains): {g:.0f} G-ops/s "
          f"(a multiply-add is 2 ops; busy CPUs before: {busy}, after: {busy_cpus()})")


if __name__ == "__main__":
    main()
