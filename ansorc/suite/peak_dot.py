"""Peak throughput of the dot-product instructions: int8 (u8 x s8 -> s32) and bf16 (bf16 x bf16 -> f32).

    python bench/peak_fma.py --kind int8|bf16 [--threads 2] [--chains 12]

The ceilings the low-precision kernels are measured against, timed like the float32 FMA peak (suite/peak.py):
`chains` independent accumulators per thread on every core, timed inside C. An operation is a multiply or an add,
so one multiply-add is 2 operations, as GFLOP/s counts float32 FMAs. Each kind lists its instruction sequences
widest first; the first this CPU runs is timed (AVX512-VNNI, AVX-VNNI, the AVX2 vpmaddubsw + vpmaddwd fallback;
AVX512-BF16).
"""
from __future__ import annotations

import ctypes
import statistics
from dataclasses import dataclass

from ansorc.codegen.source import Source
from ansorc.codegen.target import Target, cpu_flags
from ansorc.measure.builder import build

from .peak import calibrated_iters


@dataclass(frozen=True)
class DotLoop:
    """One instruction sequence: the C of one chain's step, its vector types and what one step computes."""
    name: str
    needs: frozenset        # /proc/cpuinfo flags
    flags: tuple            # compiler flags
    acc: str                # accumulator vector type
    operand: str            # operand vector type
    init: str               # chain {c}'s starting accumulator: distinct, or gcc merges equal chains into one
    operands: str           # declares the operands x, y
    step: str               # one chain's step: {a} is its accumulator
    lanes: int              # 32-bit lanes in the accumulator
    store: str              # stores {v} to the int32/float array t
    macs: int               # multiply-adds one step does


_I512 = dict(acc="__m512i", operand="__m512i", init="_mm512_set1_epi32({c})", lanes=16,
             operands="__m512i x = _mm512_set1_epi8(3), y = _mm512_set1_epi8(-2);",
             store="_mm512_storeu_si512((void*)t, {v})")
_I256 = dict(acc="__m256i", operand="__m256i", init="_mm256_set1_epi32({c})", lanes=8,
             operands="__m256i x = _mm256_set1_epi8(3), y = _mm256_set1_epi8(-2);",
             store="_mm256_storeu_si256((__m256i*)t, {v})")
LOOPS = {
    "int8": (
        DotLoop("avx512-vnni vpdpbusd", frozenset({"avx512f", "avx512_vnni"}), ("-mavx512f", "-mavx512bw",
                "-mavx512vnni"), step="{a} = _mm512_dpbusd_epi32({a}, x, y);", macs=64, **_I512),
        DotLoop("avx-vnni vpdpbusd", frozenset({"avx2", "avx_vnni"}), ("-mavx2", "-mavxvnni"),
                step="{a} = _mm256_dpbusd_avx_epi32({a}, x, y);", macs=32, **_I256),
        # u8 x s8 pairs summed to saturating s16, then pairs of s16 summed to s32 (multiplied by ones)
        DotLoop("avx2 vpmaddubsw+vpmaddwd", frozenset({"avx2"}), ("-mavx2",),
                step="{a} = _mm256_add_epi32({a}, _mm256_madd_epi16(_mm256_maddubs_epi16(x, y), ones));",
                macs=32, **{**_I256, "operands": _I256["operands"] + " __m256i ones = _mm256_set1_epi16(1);"}),
    ),
    "bf16": (
        DotLoop("avx512-bf16 vdpbf16ps", frozenset({"avx512f", "avx512_bf16"}),
                ("-mavx512f", "-mavx512bw", "-mavx512bf16"), acc="__m512", operand="__m512bh",
                init="_mm512_set1_ps({c}.0f)", lanes=16, store="_mm512_storeu_ps(t, {v})", macs=32,
                operands="__m512bh x = (__m512bh)_mm512_set1_epi16(0x3f80), y = (__m512bh)_mm512_set1_epi16(0x3380);",
                step="{a} = _mm512_dpbf16_ps({a}, x, y);"),
    ),
}

TEMPLATE = """#include <immintrin.h>
#include <omp.h>
#include <stdint.h>
volatile double ansorc_peak_sink;
double ansorc_peak(int64_t iters, int threads) {{
  double t0 = omp_get_wtime();
  #pragma omp parallel num_threads(threads)
  {{
    {operands}
    {decls}
    for (int64_t i = 0; i < iters; ++i) {{
      {body}
      __asm__ volatile("" : "+v"(x), "+v"(y));  /* operands unknown to the compiler: no step is folded */
    }}
    {t_type} t[{lanes}];
    {store};
    ansorc_peak_sink = (double)t[0];
  }}
  return omp_get_wtime() - t0;
}}
"""


def loop_for(kind: str, flags: frozenset | None = None) -> DotLoop | None:
    """The widest sequence of `kind` this CPU (or one with `flags`) runs; None when it runs none."""
    have = cpu_flags() if flags is None else flags
    return next((lp for lp in LOOPS[kind] if lp.needs <= have), None)


def dot_source(loop: DotLoop, chains: int) -> str:
    decls = " ".join(f"{loop.acc} a{c} = {loop.init.format(c=c)};" for c in range(chains))
    # x "changes" after each step: no product is shared between chains (the AVX2 sequence's would be)
    body = " ".join(loop.step.format(a=f"a{c}") + ' __asm__ volatile("" : "+v"(x));' for c in range(chains))
    add = "_mm512_add_epi32" if loop.acc == "__m512i" else "_mm256_add_epi32" if loop.acc == "__m256i" \
        else "_mm512_add_ps"
    acc = "a0"
    for c in range(1, chains):   # every chain feeds the sink, so none is dead code
        acc = f"{add}({acc}, a{c})"
    t_type = "float" if loop.acc == "__m512" else "int32_t"
    return TEMPLATE.format(operands=loop.operands, decls=decls, body=body, t_type=t_type, lanes=loop.lanes,
                           store=loop.store.format(v=acc))


def dot_call(loop: DotLoop, threads: int | None = None, chains: int = 12, seconds: float = 0.002) -> tuple:
    """(fn, ops): a no-argument call of the loop lasting about `seconds`, and the operations it does."""
    target = Target.from_name("native")
    threads = threads or target.num_cores
    flags = ("-O3", *loop.flags, "-fopenmp", "-shared", "-fPIC", "-std=gnu99")
    [res] = build([Source(dot_source(loop, chains), "ansorc_peak", ())], target_flags=flags, cc=target.cc)
    if not res.ok:
        raise RuntimeError(res.error_msg)
    fn = ctypes.CDLL(res.lib_path).ansorc_peak
    fn.restype, fn.argtypes = ctypes.c_double, [ctypes.c_int64, ctypes.c_int]
    iters = calibrated_iters(lambda n: fn(n, threads), seconds)
    return (lambda: fn(iters, threads)), 2.0 * loop.macs * chains * iters * threads


def measure_dot_peak(kind: str, threads: int | None = None, chains: int = 12, repeats: int = 7,
                     seconds: float = 0.3) -> tuple:
    """(loop, median G-operations/s) of the widest `kind` sequence here; (None, 0.0) when the CPU has none."""
    loop = loop_for(kind)
    if loop is None:
        return None, 0.0
    call, ops = dot_call(loop, threads, chains, seconds)
    return loop, statistics.median(ops / call() / 1e9 for _ in range(repeats))


__all__ = ["LOOPS", "DotLoop", "loop_for", "dot_source", "measure_dot_peak"]
