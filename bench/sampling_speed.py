"""Programs sampled per second (sketch generation excluded, annotation + replay included), one core.

    python bench/sampling_speed.py
"""
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ansorc import workloads  # noqa: E402
from ansorc.search.annotate import sample  # noqa: E402
from ansorc.search.sketch import generate_sketches  # noqa: E402
from ansorc.search.task import SearchTask  # noqa: E402

CASES = {"GMM 1024": lambda: workloads.gmm(1, 1024, 1024, 1024),
         "C2D 56x56x64->64 3x3": lambda: workloads.c2d(1, 56, 56, 64, 64, 3, 1, 1),
         "NRM 1024": lambda: workloads.nrm(1, 1024, 1024)}


def main(n: int = 2000) -> None:
    for name, make in CASES.items():
        task = SearchTask(make())
        t0 = time.perf_counter()
        sketches = generate_sketches(task)
        t1 = time.perf_counter()
        progs = sample(task, n, seed=0, sketches=sketches)
        t2 = time.perf_counter()
        print(f"{name:22} {len(sketches)} sketches in {1e3 * (t1 - t0):.1f} ms; "
              f"{len(progs)} distinct programs in {t2 - t1:.2f} s = {len(progs) / (t2 - t1):.0f} programs/s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
