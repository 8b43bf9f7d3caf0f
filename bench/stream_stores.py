"""A row's best logged program with and without streaming stores for its output (the store_stream pragma, see
docs/codegen.md), side by side in one process, checked equal.

    python bench/stream_stores.py OP IDX LOG [--rounds 5]
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import ansorc  # noqa: E402
from suite_timing import WARM, row_parser, tuned_row  # noqa: E402  (sets OMP_PROC_BIND as the table's timing does)
from ansorc.api import build_spec  # noqa: E402
from ansorc.codegen.target import Target  # noqa: E402
from ansorc.ir.state import replay  # noqa: E402
from ansorc.ir.steps import Pragma, steps_from_json  # noqa: E402
from ansorc.measure.alternate import median_alternating  # noqa: E402
from ansorc.measure.record import best, load  # noqa: E402
from ansorc.spec import KernelSpec  # noqa: E402


def with_and_without(dag, log: str) -> dict:
    """{"plain": kernel, "stream": kernel} of the log's best program, its output stage's pragma off and on."""
    state = replay(dag, steps_from_json(best(load(log), dag.workload_key, "native", k=1)[0].steps))
    out = dag.outputs[0].name
    kernels = {}
    for name, on in (("plain", 0), ("stream", 1)):
        s = state.apply(Pragma(out, state.stage(out).iters[0].name, "store_stream", on))
        kernels[name] = build_spec(KernelSpec.of(dag, s, Target.from_name("native")), f"{name}_{out}")
    return kernels


def main(argv=None) -> int:
    ap = row_parser(__doc__)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args(argv)
    _, dag, _, values, zeros = tuned_row(a.op, a.idx, a.log)
    ins = [ansorc.array(v) for v in values]
    outs = {k: [ansorc.array(z) for z in zeros] for k in ("plain", "stream")}
    kernels = with_and_without(dag, a.log)
    fns = {k: (lambda k=k: kernels[k](*ins, *outs[k])) for k in kernels}
    for fn in fns.values():
        fn()
    np.testing.assert_allclose(outs["stream"][0], outs["plain"][0], rtol=1e-6)
    med = median_alternating(fns, rounds=a.rounds, min_time=0.05, warm=WARM)
    print(f"{a.op} {a.idx}: " + ", ".join(f"{k} {v * 1e6:.1f} us" for k, v in med.items()), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
