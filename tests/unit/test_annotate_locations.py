"""Compute locations and vectorization of untiled stages (issue 16, softmax): a stage with several consumers can
live inside their common root, a producer can sit beside its attached consumer, and a long loop of an untiled
stage is vectorized (in pieces) instead of left scalar."""
import random

from ansorc import workloads
from ansorc.ir.lowering.lower import lower
from ansorc.ir.schedule.state import State
from ansorc.ir.schedule.steps import ComputeAt, ComputeInline, ComputeRoot
from ansorc.search import annotate as an
from ansorc.search.sketch import generate_sketches
from ansorc.search.task import HardwareParams, SearchTask


def _sfm_task(m=64, n=64):
    return SearchTask(workloads.sfm(m, n), "generic", HardwareParams(num_cores=2, max_vectorize_elems=16))


def test_multi_consumer_stage_attaches_inside_the_common_root():
    task = _sfm_task()
    st = State.initial(task.dag)
    assert an.attach_target(st, "exp") is None          # row_sum and softmax are separate roots
    assert an.location_options(st, "exp") == []
    st = st.apply(ComputeAt("row_sum", "softmax", "i"))
    assert an.attach_target(st, "exp") == "softmax"
    opts = an.location_options(st, "exp")
    # softmax.i holds row_sum: exp may go there but not below it (row_sum reads the whole row)
    assert ComputeAt("exp", "softmax", "i") in opts and ComputeAt("exp", "softmax", "j") not in opts
    assert ComputeRoot("exp") in opts and ComputeInline("exp") in opts


def test_producer_of_an_attached_stage_may_sit_beside_it():
    task = _sfm_task()
    st = State.initial(task.dag)
    for name in ("row_sum", "exp"):
        st = st.apply(ComputeAt(name, "softmax", "i"))
    opts = an.location_options(st, "row_max")
    assert ComputeAt("row_max", "softmax", "i") in opts     # exp's own attach point
    st = st.apply(ComputeAt("row_max", "softmax", "i"))
    func = lower(st)                                        # row_max is read by exp, not by softmax: still lowers
    assert "softmax" in str(func.body)


def test_sampled_softmax_programs_put_exp_inside_the_output_loop():
    task = _sfm_task()
    progs = an.sample(task, 40, seed=3)
    inside = [p for p in progs if p.stage("exp").compute_at == "attached"]
    assert inside, "no sampled program computes exp inside another stage's loop"
    assert all(p.stage("exp").attach[0] == "softmax" for p in inside)


def test_long_loop_of_an_untiled_stage_is_vectorized():
    task = _sfm_task(8, 512)                                # j (512) > max_vectorize_elems (16)
    st = an.vectorize(task, State.initial(task.dag), random.Random(0))
    ann = {it.name: it.annotation for it in st.stage("exp").iters}
    assert ann["j"] == "vectorize"
    assert ann["i"] == ""
    # an untiled reduction vectorizes its innermost reduce loop (pieces + one horizontal reduction each)
    assert [it.annotation for it in st.stage("row_sum").iters] == ["", "vectorize"]


def test_long_vectorized_loop_is_not_taken_for_tiled_stages():
    task = SearchTask(workloads.gmm(1, 8, 256, 8), "generic", HardwareParams(num_cores=2, max_vectorize_elems=16))
    sk = generate_sketches(task)[0]
    st = an.fill_tile_sizes(task, sk, random.Random(0))
    st = an.vectorize(task, st, random.Random(0))
    for s in st.stages:
        for it in s.iters:
            if it.annotation == "vectorize":
                assert it.extent <= 16, (s.name, it.name, it.extent)
