"""A node's runner without Ray: a library built on one "node" (cache folder) travels as bytes to another and is
measured there against the task's reference; a wrong reference is caught; NEON runs under qemu, flagged."""
import shutil

import numpy as np
import pytest

from ansorc import workloads
from ansorc.api import generate_source
from ansorc.codegen.target import Target
from ansorc.ir.program.evaluate import evaluate, random_inputs
from ansorc.measure.errors import MeasureErrorNo
from ansorc.measure.ray_nodes import EMULATED_NOTE, Item, NodeRunner, build_for_cluster, portable_flags
from ansorc.measure.runner import RunnerConfig
from ansorc.measure.task import MeasureTask
from ansorc.search.default_schedule import default_cpu_schedule
from ansorc.search.task import SearchTask


def _task(tensors, key):
    dag = SearchTask(tensors, "native").dag
    inputs = random_inputs(list(dag.inputs), 0)
    ref = evaluate(list(dag.outputs), inputs)
    return MeasureTask([inputs[t.name] for t in dag.inputs], [ref[t.name] for t in dag.outputs], key=key)


def test_library_built_elsewhere_is_measured_and_checked(tmp_path, monkeypatch):
    tensors = workloads.matmul(32, 32, 32)
    source = generate_source(tensors, None, "mm")
    monkeypatch.setenv("ANSORC_CACHE_DIR", str(tmp_path / "builder"))
    res, digest, data = build_for_cluster(source, portable_flags("native"), Target.from_name("native").cc, 30.0)
    assert res.ok and digest and data
    monkeypatch.setenv("ANSORC_CACHE_DIR", str(tmp_path / "runner"))   # another node: its own cache
    fetched = []
    runner = NodeRunner("native", RunnerConfig(repeat=1, min_repeat_ms=1.0), 30.0,
                        fetch=lambda box: fetched.append(1) or box[0])
    try:
        task = _task(tensors, "mm")
        item = Item(res, digest, (data,))
        [ok] = runner.measure("mm", (task,), [item], None, True)
        assert ok.ok and ok.costs, ok.error_msg
        assert (tmp_path / "runner" / "ray_libs" / f"{digest}.so").read_bytes() == data
        [again] = runner.measure("mm", (task,), [item], None, True)
        assert again.ok and len(fetched) == 2   # the task once, the bytes once: cached on the node
        bad = MeasureTask(task.inputs, [o + 1.0 for o in task.reference_outputs], key="mm-wrong")
        [wrong] = runner.measure("mm-wrong", (bad,), [item], None, True)
        assert wrong.error_code == MeasureErrorNo.WRONG_ANSWER
    finally:
        runner.close()


@pytest.mark.skipif(Target.from_name("native").isa not in ("avx2", "avx512"), reason="needs an x86 vector ISA")
def test_a_native_source_builds_for_the_cluster_when_the_compiler_names_an_older_cpu(tmp_path, monkeypatch):
    """The driver's source has the widest ISA's intrinsics; a compiler naming a CPU model without that ISA (gcc
    12.2 calls a Zen 4 znver3) must still build it: the ISA's flags travel with the model's."""
    import ansorc.measure.ray_nodes as nodes
    monkeypatch.setattr(nodes, "native_march", lambda cc: "x86-64")    # a model with neither AVX2 nor AVX-512
    monkeypatch.setenv("ANSORC_CACHE_DIR", str(tmp_path))
    tensors = workloads.matmul(64, 64, 64)
    source = generate_source(tensors, default_cpu_schedule(SearchTask(tensors, "native").dag), "mm")
    assert "_mm" in source.code                                         # vector intrinsics of the native ISA
    res, digest, data = build_for_cluster(source, portable_flags("native"), Target.from_name("native").cc, 60.0)
    assert res.ok and digest and data, res.error_msg[:600]


@pytest.mark.skipif(not (shutil.which("aarch64-linux-gnu-gcc") and shutil.which("qemu-aarch64")),
                    reason="needs aarch64-linux-gnu-gcc and qemu-aarch64")
def test_neon_runner_builds_itself_and_flags_the_timing_as_emulated(tmp_path, monkeypatch):
    monkeypatch.setenv("ANSORC_CACHE_DIR", str(tmp_path))
    tensors = workloads.matmul(8, 8, 8)
    source = generate_source(tensors, None, "mm", "neon")
    from ansorc.measure.builder import BuildResult
    item = Item(BuildResult(source, "node-built:x", MeasureErrorNo.NO_ERROR, "", 0.0))
    runner = NodeRunner("neon", RunnerConfig(), 120.0)
    task = _task(tensors, "mm")
    [res] = runner.measure("mm", (task,), [item], None, True)
    assert res.ok and res.error_msg == EMULATED_NOTE and np.isfinite(res.costs[0])
    bad = MeasureTask(task.inputs, [o + 1.0 for o in task.reference_outputs], key="bad")
    [wrong] = runner.measure("bad", (bad,), [item], None, True)
    assert wrong.error_code == MeasureErrorNo.WRONG_ANSWER
