"""The long run of the sanitizer fuzz test: N random te programs (tests/cpu/fuzz_programs.py), each with one
sampled schedule, built with -fsanitize=address,undefined and run against the numpy reference.

    python bench/fuzz_sanitize.py --programs 2000 --seed 0 [--out bench/results/fuzz_sanitize.json]

Counts: rejected by te.compute (a read not provably in bounds), unscheduled (the sampler or lowering refused,
an ansorc error), passed (clean and matching), and failures (a sanitizer report, a crash or a wrong answer: an
out-of-bounds or otherwise bad kernel the compiler accepted), each failure with its program and report.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ansorc.ir.program.bounds import BoundsError  # noqa: E402
from tests.cpu.fuzz_programs import Chooser, random_program  # noqa: E402
from tests.cpu.test_fuzz_sanitize import check_program  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="write the counts and failures as JSON here")
    ap.add_argument("--no-bounds-check", action="store_true",
                    help="disable te.compute's bounds check, to count the bad kernels it keeps out")
    args = ap.parse_args(argv)
    if args.no_bounds_check:
        import ansorc.ir.program.te as te_module
        te_module.check_reads = lambda *a: None
    counts = {"rejected": 0, "unscheduled": 0, "passed": 0, "failed": 0}
    failures = []
    start = time.time()
    for k in range(args.programs):
        seed = args.seed * 1_000_003 + k
        try:
            tensors = random_program(Chooser(random.Random(seed)))
        except BoundsError:
            counts["rejected"] += 1
            continue
        try:
            counts["passed" if check_program(tensors, seed=seed) else "unscheduled"] += 1
        except Exception as e:  # noqa: BLE001 - every failure is a finding, recorded with its program
            counts["failed"] += 1
            failures.append({"seed": seed, "error": f"{type(e).__name__}: {e}"[:3000]})
            print(f"program {k} (seed {seed}) FAILED: {str(e)[:400]}", flush=True)
        if (k + 1) % 50 == 0:
            print(f"{k + 1} programs, {time.time() - start:.0f} s: {counts}", flush=True)
    summary = {"programs": args.programs, "seed": args.seed, "seconds": round(time.time() - start, 1), **counts,
               "failures": failures}
    print(json.dumps({k: v for k, v in summary.items() if k != "failures"}))
    if args.out:
        Path(args.out).write_text(json.dumps(summary, indent=1) + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
