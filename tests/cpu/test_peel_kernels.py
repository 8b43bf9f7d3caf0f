"""Programs whose last partial tiles are peeled into narrower copies (ir/lowering/peel.py) compute what numpy does: the
tuned programs of the table's rows where the peel applies (DIL 224 stem's 109 columns in 6-column tiles, DIL 56x56
1x1's 56 in 6, CBR 224's 112 in 6; committed logs), and register-tiled matmuls with one or both axes overrunning,
their tile loops serial or parallel. Built and run in the measurement worker, as tuning does."""
from pathlib import Path

import pytest

import ansorc
from ansorc import workloads
from ansorc.api import generate_source
from ansorc.ir.program.evaluate import evaluate, random_inputs
from ansorc.ir.lowering.peel import peel_keys
from ansorc.ir.schedule.state import replay
from ansorc.ir.schedule.steps import Annotate, steps_from_json
from ansorc.measure.record import best, load
from ansorc.search.annotate import sample
from ansorc.search.task import HardwareParams, SearchTask

from tests.unit.test_peel import depthwise_relu6
from tests.unit.test_shift_inward import tiled_matmul
from .helpers import check_in_worker, check_sanitized

# The best 4 programs of DIL 0, DIL 1 and CBR 0 from a 300-trial tuning run (session s36).
LOG = Path(__file__).resolve().parents[2] / "tests" / "golden" / "records" / "peel_best.jsonl.gz"
FLAGS = ("-O1", "-march=native", "-fopenmp", "-shared", "-fPIC", "-std=c99")


@pytest.mark.parametrize("op,idx", [("DIL", 0), ("DIL", 1), ("CBR", 0)])
def test_the_tuned_programs_that_peel_match_numpy(op, idx):
    dag = ansorc.ComputeDAG(workloads.make(op, idx))
    records = best(load(LOG), dag.workload_key, "native", k=4)
    progs = [replay(dag, steps_from_json(r.steps)) for r in records]
    progs = [p for p in progs if peel_keys(p)]
    assert progs, f"{op} {idx}: none of the log's best programs has a last tile to peel"
    sources = [generate_source(dag, p, name=f"{op.lower()}{idx}_peel_{k}") for k, p in enumerate(progs)]
    assert all("_tail" in s.code for s in sources)
    check_in_worker(dag, progs, sources, FLAGS, f"{op} {idx}")


@pytest.mark.parametrize("rows,cols,parallel", [(130, 32, True), (130, 40, True), (133, 40, False)])
def test_register_tiled_matmuls_with_peeled_tiles_match_numpy(rows, cols, parallel):
    tensors, state = tiled_matmul(rows, cols, vectorize=True)
    if not parallel:
        state = replay(state.dag, [s for s in state.steps if not (isinstance(s, Annotate) and s.annotation ==
                                                                  "parallel")])
    assert len(peel_keys(state)) == 1 + (cols % 16 != 0)
    source = generate_source(state.dag, state, name=f"peel_mm_{rows}_{cols}_{int(parallel)}")
    check_in_worker(state.dag, [state], [source], FLAGS, f"matmul {rows}x{cols}")


@pytest.mark.parametrize("width", [20, 112])
def test_a_depthwise_conv_with_a_versioned_reduction_matches_numpy(width):
    state = depthwise_relu6(width)
    assert peel_keys(state)
    source = generate_source(state.dag, state, name=f"peel_dw_{width}")
    check_in_worker(state.dag, [state], [source], FLAGS, f"depthwise {width}")


ODD_SHAPES = {"GMM": (1, 67, 41, 32), "DEP": (1, 29, 29, 16, 3, 1, 1), "C2D": (1, 29, 29, 4, 16, 3, 1, 1)}


@pytest.mark.parametrize("name", sorted(ODD_SHAPES))
def test_random_programs_that_peel_match_numpy(name):
    """Random programs of the search space at shapes no tile divides (the smallest listed shapes divide evenly and
    rarely peel): those with a last tile to peel, built and checked."""
    task = SearchTask(workloads.WORKLOADS[name][0](*ODD_SHAPES[name]), hw=HardwareParams(num_cores=2))
    progs = [p for p in sample(task, 400, seed=8) if peel_keys(p)][:8]
    assert progs, f"{name}: no random program peels"
    sources = [generate_source(task.dag, p, name=f"{name.lower()}_rand_peel_{k}") for k, p in enumerate(progs)]
    check_in_worker(task.dag, progs, sources, FLAGS, name)


# odd shapes at which random programs often peel (C1D, T2D, CAP and the smallest listed shapes rarely or never do)
SANITIZED_SHAPES = {**ODD_SHAPES, "DIL": (1, 23, 23, 8, 16, 3, 1, 2), "GRP": (1, 19, 19, 16, 16, 3, 1, 1),
                    "C3D": (1, 3, 11, 11, 4, 16, 3, 1, 1)}


@pytest.mark.parametrize("name", sorted(SANITIZED_SHAPES))
def test_random_programs_that_peel_run_clean_under_asan_and_ubsan(name):
    """The peeled copies index their buffers as the main tiles do, only narrower: an out-of-bounds read there would
    pass a numerical check if it landed in allocated memory, so these run under the sanitizers (bench/
    fuzz_sanitize.py's random programs almost never peel: 0 of 625 with seed 1)."""
    task = SearchTask(workloads.WORKLOADS[name][0](*SANITIZED_SHAPES[name]), hw=HardwareParams(num_cores=2))
    dag = task.dag
    progs = [p for p in sample(task, 300, seed=11) if peel_keys(p)][:2]
    assert progs, f"{name}: no random program peels"
    x = random_inputs(dag.inputs, 3)
    ref = evaluate(list(dag.outputs), x)
    for k, p in enumerate(progs):
        src = generate_source(dag, p, f"asan_peel_{name.lower()}_{k}")
        assert "_tail" in src.code
        check_sanitized(dag, src, x, ref, f"{name} program {k}: {p.steps}")
