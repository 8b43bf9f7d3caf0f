"""The ceiling of a convolution's register tile on this machine: W columns x V vectors, hot in L1, beside the FMA
peak loop in alternating rounds.

    python bench/register_tiles.py                        # 6x2 7x2 5x2 4x2 4x3, every core
    python bench/register_tiles.py --tiles 6x2 7x2 --rounds 21 --pin 1

Each tile is the inner loop ansorc emits for a channels-last convolution (C3D 7x7x512's best program): per step of
the reduction over input channels, V weights vectors are loaded (the first `--pin` of them kept in registers as
ir/pin.py does: an empty asm), and each of the W columns' inputs is broadcast and multiplied into V accumulators.
A run is 256 steps (a 256-channel chunk); the accumulators are loaded before and stored after it, as between the
rows of the tile. Every thread has its own inputs (W columns 2 KB apart, the channels-last stride of 512
channels), weights (16 KB for V = 2) and outputs: no cache misses, so the figure is the tile's instruction
throughput. Printed per tile: median GFLOP/s over the rounds, and the median over rounds of its rate / the peak
loop's rate in the same round (the VM's speed moves between minutes; the ratio pairs a round's two figures).
Built from the same simd.py tables as the code generator (bench/peak_fma.py's scheme).
"""
from __future__ import annotations

import argparse
import ctypes
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from peak_fma import peak_call  # noqa: E402
from ansorc.codegen import simd  # noqa: E402
from ansorc.codegen.source import Source  # noqa: E402
from ansorc.codegen.target import Target  # noqa: E402
from ansorc.measure.alternate import alternating_rounds  # noqa: E402
from ansorc.measure.builder import build  # noqa: E402

STEPS = 256        # reduction steps per run (a 256-channel chunk)
STRIDE = 512       # floats between two columns' inputs (channels-last, 512 channels)
MAX_W, MAX_V = 16, 8


def tile_function(isa: str, w: int, v: int, pin: int) -> tuple:
    """(C function `tile_WxV(reps, x, wts, out, threads)` returning seconds, its FLOPs per rep and thread)."""
    lanes = max(n for d, n in simd.caps(isa).types if d == "float32")
    f = lambda op, **kw: simd.intrinsic(isa, op, "float32", lanes).format(**kw)  # noqa: E731
    vt = simd.vector_type(isa, "float32", lanes)
    pin_stmt = simd.PIN.get(isa)
    acc = [[f"a{c}_{j}" for j in range(v)] for c in range(w)]
    lines = [f"double tile_{w}x{v}(int64_t reps, const float* x, const float* wts, float* out, int threads) {{",
             "  double t0 = omp_get_wtime();",
             "  #pragma omp parallel num_threads(threads)",
             "  {",
             "    int t = omp_get_thread_num();",
             f"    const float* xt = x + (int64_t)t * {MAX_W * STRIDE};",
             f"    const float* wt = wts + (int64_t)t * {STEPS * MAX_V * lanes};",
             f"    float* ot = out + (int64_t)t * {MAX_W * MAX_V * lanes};",
             "    for (int64_t r = 0; r < reps; ++r) {"]
    lines += [f"      {vt} {acc[c][j]} = {f('load', p=f'ot + {(c * v + j) * lanes}')};"
              for c in range(w) for j in range(v)]
    lines.append(f"      for (int k = 0; k < {STEPS}; ++k) {{")
    for j in range(v):
        lines.append(f"        {vt} w{j} = {f('load', p=f'wt + k * {v * lanes} + {j * lanes}')};")
        if j < pin and pin_stmt:
            lines.append(f"        {pin_stmt.format(a=f'w{j}')};")
    for c in range(w):
        lines.append(f"        {{ {vt} b = {f('set1', a=f'xt[{c * STRIDE} + k]')};")
        lines += [f"          {acc[c][j]} = {f('fma', a='b', b=f'w{j}', c=acc[c][j])};" for j in range(v)]
        lines.append("        }")
    lines.append("      }")
    lines += [f"      {f('store', p=f'ot + {(c * v + j) * lanes}', v=acc[c][j])};" for c in range(w) for j in range(v)]
    lines += ["    }", "  }", "  return omp_get_wtime() - t0;", "}"]
    return "\n".join(lines), 2.0 * w * v * lanes * STEPS


def default_pin(isa: str, w: int, v: int) -> int:
    """Weights vectors ir/pin.py would keep in registers: all of them while accumulators, pinned vectors and one
    broadcast fit the register file, else as many as fit (none past it)."""
    return max(0, min(v, simd.caps(isa).registers - w * v - 1))


def build_tiles(target: Target, tiles: list, pin: int | None) -> dict:
    """{label: (fn, FLOPs per rep and thread)}, one library for all tiles."""
    parts, flops = ["#include <omp.h>", "#include <stdint.h>", simd.prelude(target.isa)], {}
    for w, v in tiles:
        code, fl = tile_function(target.isa, w, v, default_pin(target.isa, w, v) if pin is None else pin)
        parts.append(code)
        flops[(w, v)] = fl
    [res] = build([Source("\n".join(parts), f"tile_{tiles[0][0]}x{tiles[0][1]}", ())], target_flags=target.flags,
                  cc=target.cc)
    if not res.ok:
        raise RuntimeError(res.error_msg)
    lib = ctypes.CDLL(res.lib_path)
    out = {}
    for w, v in tiles:
        fn = getattr(lib, f"tile_{w}x{v}")
        fn.restype = ctypes.c_double
        fn.argtypes = [ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
        out[(w, v)] = (fn, flops[(w, v)])
    return out


def parse_tile(text: str) -> tuple:
    w, v = (int(x) for x in text.lower().split("x"))
    if not (1 <= w <= MAX_W and 1 <= v <= MAX_V):
        raise argparse.ArgumentTypeError(f"tile {text!r}: columns 1-{MAX_W} x vectors 1-{MAX_V}")
    return w, v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tiles", nargs="+", type=parse_tile, default=[(6, 2), (7, 2), (5, 2), (4, 2), (4, 3)])
    ap.add_argument("--pin", type=int, default=None, help="weights vectors pinned (default: as ir/pin.py would)")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--isa", default="native")
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args()
    target = Target.from_name(args.isa)
    threads = args.threads or target.num_cores
    lanes = max(n for d, n in simd.caps(target.isa).types if d == "float32")
    rng = np.random.default_rng(0)
    x = rng.random(threads * MAX_W * STRIDE, dtype=np.float32)
    wts = rng.random(threads * STEPS * MAX_V * lanes, dtype=np.float32)
    out = np.zeros(threads * MAX_W * MAX_V * lanes, np.float32)
    ptrs = [a.ctypes.data_as(ctypes.c_void_p) for a in (x, wts, out)]
    peak, peak_flops = peak_call(args.isa, threads, seconds=0.005)
    fns, flops = {"peak": peak}, {"peak": peak_flops}
    for (w, v), (fn, fl) in build_tiles(target, args.tiles, args.pin).items():
        reps = 64
        while fn(reps, *ptrs, threads) < 0.005:
            reps *= 2
        fns[f"{w}x{v}"] = (lambda fn=fn, reps=reps: fn(reps, *ptrs, threads))
        flops[f"{w}x{v}"] = fl * reps * threads
    times = alternating_rounds(fns, args.rounds, min_time=0.02, warm=0.005)
    rate = {k: [flops[k] / t / 1e9 for t in ts] for k, ts in times.items()}
    regs = simd.caps(target.isa).registers
    print(f"{target.isa}, {threads} threads, {regs} vector registers, {args.rounds} rounds; "
          f"peak loop {statistics.median(rate['peak']):.0f} GFLOP/s")
    print("| tile (columns x vectors) | accumulators | pinned weights | GFLOP/s | of the peak loop (paired) |")
    print("| --- | --- | --- | --- | --- |")
    for w, v in args.tiles:
        k = f"{w}x{v}"
        pinned = default_pin(target.isa, w, v) if args.pin is None else min(args.pin, v)
        paired = statistics.median(a / p for a, p in zip(rate[k], rate["peak"]))
        print(f"| {k} | {w * v} | {pinned} | {statistics.median(rate[k]):.0f} | {100 * paired:.0f}% |")


if __name__ == "__main__":
    main()
