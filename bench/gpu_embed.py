"""Export a CUDA library (untuned default GPU program, or the best in --log) and print its paths; used by
gpu_check.sh to build and run examples/embed_cuda/main.c against it."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ansorc.codegen.pipeline import render  # noqa: E402
from ansorc.targets.cuda.export import export_cuda  # noqa: E402
from ansorc.frontend import load  # noqa: E402
from ansorc.targets.cuda.search_policy import default_gpu_schedule  # noqa: E402
from ansorc.search.task import SearchTask  # noqa: E402

out, arch = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "sm_90"
prog = load("examples/matmul_relu.te", defines={"N": 256, "M": 192, "K": 128})
task = SearchTask(prog.tensors, "cuda")
src = render(task.dag, default_gpu_schedule(task), "matmul_relu", "cuda")
print(export_cuda(src, out, arch))
