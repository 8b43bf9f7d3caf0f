"""The old per-call best and the new kept-weights best of a row, both built on the constant-weights DAG (the old
program is valid there too), timed side by side in one process.

    python bench/old_vs_new.py OP IDX PER_CALL_LOG KEPT_LOG
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_PROC_BIND", "true")   # as bench/suite_timing.py times the table
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

import ansorc  # noqa: E402
from ansorc import workloads  # noqa: E402
from ansorc.ir.dag import ComputeDAG  # noqa: E402
from ansorc.measure.alternate import median_alternating  # noqa: E402
from ansorc.measure.record import best, load  # noqa: E402

op, idx, old, new = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
ts = workloads.make(op, idx)
plain, dag = ComputeDAG(ts), ComputeDAG(ts, workloads.weights(ts))
ro = best(load(old), plain.workload_key, "native", k=1)[0]
rn = best(load(new), dag.workload_key, "native", k=1)[0]
ko = ansorc.compile(dag, trials=0, log=old, name="old")   # the per-call log's best, built with constant weights
kn = ansorc.compile(dag, trials=0, log=new, name="new")
rng = np.random.default_rng(0)
ins = [ansorc.array(rng.standard_normal(t.shape, dtype=np.float32)) for t in dag.inputs]
oo, on = ansorc.empty(dag.outputs[0].shape), ansorc.empty(dag.outputs[0].shape)
ko(*ins, oo)
kn(*ins, on)
assert np.allclose(oo, on, rtol=1e-3, atol=1e-3 * max(1.0, float(np.abs(oo).max())))
med = median_alternating({"old program, kept mode": lambda: ko(*ins, oo), "new program": lambda: kn(*ins, on)},
                         rounds=7, min_time=0.05, warm=0.25)
print(op, idx, {k: round(v * 1e6, 1) for k, v in med.items()}, "logged medians old/new us:",
      round(ro.median * 1e6, 1), round(rn.median * 1e6, 1), "old prepared:", ko.source_obj.prepared)
