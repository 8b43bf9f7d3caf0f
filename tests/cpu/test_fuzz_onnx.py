"""Issue 50: random small ONNX graphs (fuzz_onnx_graphs.py) compiled by ansorc's network path with the model
library built under -fsanitize=address,undefined, against onnxruntime (fuzz_onnx_check.py): every graph passes,
is rejected by both (ansorc with one line), or is a counted coverage gap; no sanitizer report, crash,
traceback or silent mismatch. The long run (2,000 graphs) is bench/fuzz_onnx.py."""
from __future__ import annotations

import collections
import shutil
import subprocess

import pytest

from tests.cpu.fuzz_onnx_check import check_graph
from tests.cpu.fuzz_onnx_graphs import graph_for_seed, tolerances

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
pytest.importorskip("onnxruntime")
CI_GRAPHS = 200   # about 1.1 s of CPU a graph (a sanitized -O0 build each): ~4 min on 2 cores
CI_SEED = 1_000_003 * 7   # not the long run's seeds (bench/fuzz_onnx.py --seed 0 starts at 0)


def _sanitizers_link(tmp_path) -> bool:
    src = tmp_path / "t.c"
    src.write_text("int main(void) { return 0; }\n")
    cmd = ["gcc", "-fsanitize=address,undefined", str(src), "-o", str(tmp_path / "t")]
    return subprocess.run(cmd, capture_output=True).returncode == 0


@pytest.mark.slow
def test_random_onnx_graphs_run_clean_under_asan_and_ubsan_and_match_onnxruntime(tmp_path):
    if not _sanitizers_link(tmp_path):
        pytest.skip("gcc cannot link -fsanitize=address,undefined here")
    counts, failures = collections.Counter(), []
    for k in range(CI_GRAPHS):
        graph = graph_for_seed(CI_SEED + k)
        outcome = check_graph(graph.model, graph.feeds, *tolerances(graph))
        counts[outcome.kind] += 1
        if outcome.failed:
            failures.append(f"seed {CI_SEED + k} {outcome.kind}: {graph.describe()}\n{outcome.detail[:1500]}")
    assert not failures, f"{counts}\n" + "\n\n".join(failures[:5])
    # the generator reaches both sides: graphs computed and compared, and bad graphs rejected by both
    assert counts["passed"] >= CI_GRAPHS // 2 and counts["rejected"] >= CI_GRAPHS // 20, counts
