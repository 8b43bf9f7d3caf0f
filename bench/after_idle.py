"""How much slower a tuned kernel runs right after the CPUs idled: blocks of calls back to back, then each after a
sleep, medians of each (docs/measurement.md, "Warm, not idle, before each block").

    python bench/after_idle.py OP IDX LOG [--sleep 0.1] [--calls 25] [--seconds 4]
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import ansorc  # noqa: E402
from suite_timing import row_parser, tuned_row  # noqa: E402  (sets OMP_PROC_BIND as the table's timing does)


def blocks(fn, calls: int, seconds: float, sleep: float) -> list:
    """Seconds per call of each block of `calls` calls, for `seconds` of running, each block after `sleep`."""
    out, t_end = [], time.perf_counter() + seconds
    while time.perf_counter() < t_end:
        if sleep:
            time.sleep(sleep)
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        out.append((time.perf_counter() - t0) / calls)
    return out


def main(argv=None) -> int:
    ap = row_parser(__doc__)
    ap.add_argument("--sleep", type=float, default=0.1)
    ap.add_argument("--calls", type=int, default=25)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--per-call-weights", action="store_true", help="LOG was tuned with weights per call")
    a = ap.parse_args(argv)
    kern, _, _, values, zeros = tuned_row(a.op, a.idx, a.log, not a.per_call_weights)
    args = [ansorc.array(v) for v in values + zeros]
    fn = lambda: kern(*args)  # noqa: E731
    fn()
    for sleep in (0.0, a.sleep, 0.0):
        got = blocks(fn, a.calls, a.seconds, sleep)
        print(f"{a.op} {a.idx} blocks of {a.calls} calls, {sleep:.2f} s sleep before each: median "
              f"{statistics.median(got) * 1e6:.1f} us/call over {len(got)} blocks", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
