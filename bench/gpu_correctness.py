"""On a GPU machine: random GPU programs of every benchmark workload (smallest shapes) built with nvcc and run
through the GPU runner against numpy's answer. Prints a table (workload, programs, correct, wrong, other
errors) and ends with `correctness: N passed, M failed`.

    python bench/gpu_correctness.py --programs 100 [--json OUT.json]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ansorc import workloads  # noqa: E402
from ansorc.codegen.pipeline import render  # noqa: E402
from ansorc.ir.program.evaluate import evaluate, random_inputs  # noqa: E402
from ansorc.ir.schedule.state import ScheduleError  # noqa: E402
from ansorc.targets.cuda.measure_runner import CudaBackend, CudaRunner, CudaRunnerConfig  # noqa: E402
from ansorc.measure.errors import error_name  # noqa: E402
from ansorc.targets.cuda.search_annotate import sample_gpu  # noqa: E402
from ansorc.search.task import SearchTask  # noqa: E402


def programs(name: str, n: int, seed: int):
    task = SearchTask(workloads.smallest(name), "cuda")
    sources = []
    for k, st in enumerate(sample_gpu(task, 3 * n, seed=seed)):
        try:
            sources.append((st, render(task.dag, st, f"{name.lower()}_{k}", "cuda")))
        except ScheduleError:
            continue
        if len(sources) == n:
            break
    return task, sources


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--programs", type=int, default=100, help="in all, spread over the 13 workloads")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--json")
    args = ap.parse_args()
    names = sorted(workloads.WORKLOADS)
    per = -(-args.programs // len(names))
    rows, failures = [], []
    backend = CudaBackend(CudaRunner(CudaRunnerConfig(timeout=20.0, repeats=1)), args.arch)
    t0 = time.time()
    try:
        for name in names:
            task, progs = programs(name, per, seed=7)
            inputs = random_inputs(task.dag.inputs, 0)
            ref = evaluate(list(task.dag.outputs), inputs)
            backend.runner.set_task([inputs[t.name] for t in task.dag.inputs],
                                    [ref[t.name] for t in task.dag.outputs])
            builds = backend.build([src for _, src in progs])
            results = backend.run(builds, early_cut=False)
            codes = Counter(error_name(r.error_code) for r in results)
            rows.append((name, len(progs), codes.get("NO_ERROR", 0), codes.get("WRONG_ANSWER", 0),
                         sum(v for k, v in codes.items() if k not in ("NO_ERROR", "WRONG_ANSWER"))))
            for (st, src), r in zip(progs, results):
                if not r.ok:
                    failures.append({"workload": name, "error": error_name(r.error_code), "msg": r.error_msg[:800],
                                     "steps": [s.to_json() for s in st.steps]})
            print(f"{name}: {rows[-1][2]}/{rows[-1][1]} correct {dict(codes)} ({time.time() - t0:.0f} s)", flush=True)
    finally:
        backend.close()
    print("\n| workload | programs | correct | wrong | other errors |\n| --- | --- | --- | --- | --- |")
    for r in rows:
        print("| " + " | ".join(map(str, r)) + " |")
    passed, total = sum(r[2] for r in rows), sum(r[1] for r in rows)
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "failures": failures}, indent=1))
    for f in failures[:5]:
        print(json.dumps(f)[:1500])
    print(f"correctness: {passed} passed, {total - passed} failed")
    return 0 if passed == total else 1


if __name__ == "__main__":
    sys.exit(main())
