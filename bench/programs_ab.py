"""A table row's programs side by side in one process: the best of each log given, or the default program (`-`),
checked equal, timed in alternating rounds (medians).

    python bench/programs_ab.py C3D 3 OLD_LOG.jsonl NEW_LOG.jsonl     # two logs' best programs
    python bench/programs_ab.py C3D 3 - LOG.jsonl                     # the default program against a log's best
    python bench/programs_ab.py GRP 0 - --round-robin                 # with and without the parallel_ranges pragma
    python bench/programs_ab.py SFM 3 LOG.jsonl --prefetch            # with and without the prefetch pragma
    python bench/programs_ab.py TBG 1 LOG.jsonl --guards              # with the last tiles guarded, as before
    python bench/programs_ab.py C3D 2 LOG.jsonl --row-pad             # with and without the row_pad pragma
    python bench/programs_ab.py DIL 0 LOG.jsonl --no-peel             # last tiles peeled (default) or shifted

--round-robin adds, for each program, the same program with its parallel_ranges pragmas dropped (its parallel loops
then deal out their iterations round-robin wherever a skip guard reads them, as before that pragma). --prefetch
adds the same program with the prefetch pragma (distance 1) on each root stage, or dropped where it is set.
--guards adds each program rendered with its pure stages' last partial tiles guarded (ir/lower.SHIFT_INWARD and
ir/peel.ENABLED off). --no-peel adds each program with its pure stages' last partial tiles shifted back inside,
recomputing part of the tile before, instead of peeled into a narrower copy (ir/peel.py).
--row-pad adds the same program with the row_pad pragma on each workspace whose rows alias (ir/layout.py), or
dropped where it is set.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import ansorc  # noqa: E402
from suite_timing import WARM, row_dag  # noqa: E402  (sets OMP_PROC_BIND as the table's timing does)
import ansorc.ir.lower as lower  # noqa: E402
import ansorc.ir.peel as peel  # noqa: E402
from ansorc.api import build_spec  # noqa: E402
from ansorc.codegen.target import Target  # noqa: E402
from ansorc.ir.state import replay  # noqa: E402
from ansorc.ir.steps import Pragma, steps_from_json  # noqa: E402
from ansorc.measure.alternate import median_alternating  # noqa: E402
from ansorc.measure.record import best, load  # noqa: E402
from ansorc.search.annotate import row_pad_candidates  # noqa: E402
from ansorc.search.default_schedule import default_cpu_schedule  # noqa: E402
from ansorc.spec import KernelSpec  # noqa: E402


def program(dag, source: str):
    """The state of the default program (`-`) or of a log's best."""
    if source == "-":
        return default_cpu_schedule(dag)
    return replay(dag, steps_from_json(best(load(source), dag.workload_key, "native", k=1)[0].steps))


def without_ranges(dag, state):
    """The same program with its parallel_ranges pragmas dropped."""
    return replay(dag, [s for s in state.steps if not (isinstance(s, Pragma) and s.key == "parallel_ranges")])


def toggled(dag, state, key: str, stages: list):
    """The same program with pragma `key` (value 1) on each of `stages`' outermost loops, or without it where it is
    set."""
    if any(isinstance(s, Pragma) and s.key == key for s in state.steps):
        return replay(dag, [s for s in state.steps if not (isinstance(s, Pragma) and s.key == key)])
    return replay(dag, [*state.steps, *[Pragma(st.name, st.iters[0].name, key, 1) for st in stages]])


def toggled_prefetch(dag, state):
    """The same program with the prefetch pragma on each root stage (distance 1), or without it where it is set."""
    roots = [st for st in state.stages if st.compute_at == "root" and st.iters and st.iters[0].extent > 1]
    return toggled(dag, state, "prefetch", roots)


def toggled_row_pad(dag, state):
    """The same program with the row_pad pragma on each workspace whose rows alias, or without it where it is set."""
    return toggled(dag, state, "row_pad", row_pad_candidates(state))


def checked_calls(dag, states: dict) -> tuple:
    """({label: a call of that program on shared random inputs}, the input values), every program built and
    checked equal to the first."""
    target = Target.from_name("native")
    kernels = {label: build_spec(KernelSpec.of(dag, s, target), f"p{i}") for i, (label, s) in enumerate(states.items())}
    values = [np.random.default_rng(0).standard_normal(t.shape, dtype=np.float32) for t in dag.inputs]
    ins = [ansorc.array(v) for v in values]
    outs = {k: [ansorc.empty(t.shape, t.dtype) for t in dag.outputs] for k in kernels}
    fns = {k: (lambda k=k: kernels[k](*ins, *outs[k])) for k in kernels}
    for fn in fns.values():
        fn()
    first = next(iter(outs.values()))[0]
    for k, o in outs.items():
        np.testing.assert_allclose(o[0], first, rtol=1e-4, atol=1e-3, err_msg=k)
    return fns, values


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("op", type=str.upper)
    ap.add_argument("idx", type=int)
    ap.add_argument("programs", nargs="+", help="logs (their best program) or - (the default program)")
    ap.add_argument("--round-robin", action="store_true")
    ap.add_argument("--prefetch", action="store_true")
    ap.add_argument("--guards", action="store_true")
    ap.add_argument("--row-pad", action="store_true")
    ap.add_argument("--no-peel", action="store_true")
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args(argv)
    dag = row_dag(a.op, a.idx)
    states = {}
    for k, src in enumerate(a.programs):
        label = f"{k}:{'default' if src == '-' else Path(src).name}"
        states[label] = program(dag, src)
        if a.round_robin:
            states[label + " round-robin"] = without_ranges(dag, states[label])
        if a.prefetch:
            states[label + " prefetch toggled"] = toggled_prefetch(dag, states[label])
        if a.row_pad:
            states[label + " row_pad toggled"] = toggled_row_pad(dag, states[label])
    fns, _ = checked_calls(dag, states)
    if a.guards:
        lower.SHIFT_INWARD = peel.ENABLED = False
        try:
            fns.update(checked_calls(dag, {k + " guarded": s for k, s in states.items()})[0])
        finally:
            lower.SHIFT_INWARD = peel.ENABLED = True
    if a.no_peel:
        peel.ENABLED = False
        try:
            fns.update(checked_calls(dag, {k + " shifted": s for k, s in states.items()})[0])
        finally:
            peel.ENABLED = True
    med = median_alternating(fns, rounds=a.rounds, min_time=0.05, warm=WARM)
    base = next(iter(med.values()))
    for k, v in med.items():
        print(f"{a.op} {a.idx} {k}: {v * 1e6:.1f} us ({v / base:.3f} of the first)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
