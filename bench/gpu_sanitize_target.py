"""A program for compute-sanitizer: a few random GPU programs of small workloads, built and launched once each in
this process (no worker process, so the sanitizer sees every launch). Exit status 0 when all ran.

    compute-sanitizer --tool memcheck --error-exitcode 3 python3 bench/gpu_sanitize_target.py GMM,C2D,SFM 2
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ansorc import workloads  # noqa: E402
from ansorc.codegen.pipeline import render  # noqa: E402
from ansorc.ir.schedule.state import ScheduleError  # noqa: E402
from ansorc.targets.cuda.measure_driver import Device  # noqa: E402
from ansorc.targets.cuda.measure_nvcc import build_cuda  # noqa: E402
from ansorc.targets.cuda.search_annotate import sample_gpu  # noqa: E402
from ansorc.search.task import SearchTask  # noqa: E402


def main() -> int:
    names, per = sys.argv[1].split(","), int(sys.argv[2])
    dev = Device()
    ran = 0
    for name in names:
        task = SearchTask(workloads.smallest(name), "cuda")
        srcs = []
        for k, st in enumerate(sample_gpu(task, 4 * per, seed=11)):
            try:
                srcs.append(render(task.dag, st, f"san_{name.lower()}_{k}", "cuda"))
            except ScheduleError:
                continue
            if len(srcs) == per:
                break
        for src, res in zip(srcs, build_cuda(srcs, dev.limits()["arch"])):
            module = dev.load_module(Path(res.lib_path).read_bytes())
            ptrs = []
            for a in src.args:
                n = int(np.prod(a.shape)) * 4
                ptrs.append(dev.alloc(n))
                if not a.is_output:
                    dev.htod(ptrs[-1], np.random.default_rng(0).uniform(-1, 1, a.shape).astype(np.float32))
            ptrs += [dev.alloc(w.size * 4) for w in src.workspaces]
            for launch in src.launches:
                dev.launch(dev.function(module, launch.kernel), launch.grid, launch.block, launch.shared_bytes,
                           dev.ffi.cast("CUstream", 0), [ptrs[i] for i in launch.args])
            dev.synchronize()
            for p in ptrs:
                dev.free(p)
            dev.unload_module(module)
            ran += 1
    print(f"sanitize target: {ran} programs ran")
    return 0


if __name__ == "__main__":
    sys.exit(main())
