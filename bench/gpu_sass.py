"""Instruction mix of each case's best logged GPU program (cuobjdump -sass of its cubin): FFMA against shared
and global loads, by width. Says whether a kernel's inner loop is bound by shared-memory loads.

    python bench/gpu_sass.py --cases GMM-1024,C2D-56x64 --logs data/records/gpu/h200
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpu_cases import tensors  # noqa: E402

from ansorc.codegen.pipeline import render  # noqa: E402
from ansorc.ir.program.dag import ComputeDAG  # noqa: E402
from ansorc.ir.schedule.state import replay  # noqa: E402
from ansorc.ir.schedule.steps import steps_from_json  # noqa: E402
from ansorc.targets.cuda.measure_nvcc import build_cuda  # noqa: E402
from ansorc.measure.record import best, load  # noqa: E402

KINDS = ("FFMA", "FMUL", "FADD", "LDS", "LDS.64", "LDS.128", "LDG.E", "LDG.E.64", "LDG.E.128", "STS", "STS.128",
         "BAR.SYNC", "SHFL.DOWN")


def mix(cubin: str) -> Counter:
    out = subprocess.run(["cuobjdump", "-sass", cubin], capture_output=True, text=True).stdout
    ops = Counter()
    for line in out.splitlines():
        m = re.search(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
        if m:
            op = m.group(1)
            ops[op] += 1
            base = re.sub(r"\.(CONSTANT|STRONG\.GPU|EF|EL|LU|CG|CS|NA)\b", "", op)
            if base != op:
                ops[base] += 1
    return ops


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="GMM-1024,C2D-56x64,DEP-112x32")
    ap.add_argument("--logs", default="data/records/gpu/h200")
    ap.add_argument("--arch", default="sm_90")
    args = ap.parse_args()
    if shutil.which("cuobjdump") is None:
        print("cuobjdump not found")
        return 0
    print("| case | " + " | ".join(KINDS) + " |\n|---|" + "---|" * len(KINDS))
    for case in (c.partition(":")[0] for c in args.cases.split(",")):
        dag = ComputeDAG(tensors(case))
        log = Path(args.logs) / f"{case.lower()}.jsonl"
        top = best(load(log), dag.workload_key, "cuda") if log.exists() else []
        if not top:
            continue
        [res] = build_cuda([render(dag, replay(dag, steps_from_json(top[0].steps)), "sass", "cuda")], args.arch)
        ops = mix(res.lib_path)
        print(f"| {case} | " + " | ".join(str(ops.get(k, 0)) for k in KINDS) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
