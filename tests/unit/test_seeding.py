"""Seeding a task's first round from similar tasks (search/seeding.py): re-targeting a history to other shapes,
choosing the nearest donor of the same structure, none where there is none, and the tuner's first round."""
import hashlib
import time
from types import SimpleNamespace

from ansorc import workloads as W
from ansorc.ir.lowering.lower import lower
from ansorc.ir.passes.verify import verify
from ansorc.ir.schedule.canonical import rename_steps
from ansorc.ir.schedule.steps import Split, steps_to_json
from ansorc.measure.builder import BuildResult
from ansorc.measure.errors import MeasureErrorNo
from ansorc.measure.record import Record, steps_key
from ansorc.measure.runner import MeasureResult
from ansorc.search.annotate import sample, state_key
from ansorc.search.seeding import SeedPool, adapt_lengths, distance, retarget, structure_key
from ansorc.search.task import HardwareParams, SearchTask
from ansorc.search.tuning import TaskTuner, TuneOptions, canonical_steps, make_cost_model

HW = HardwareParams(num_cores=2)


def mm(n, m, k):
    return SearchTask(W.matmul_relu(n, m, k), "avx2", hw=HW)


def conv():
    return SearchTask(W.WORKLOADS["C2D"][0](1, 14, 14, 16, 16, 3, 1, 1), "avx2", hw=HW)


def donor(task, n=3, seed=1):
    """A fake tuner that has measured n sampled programs of task (the first the fastest)."""
    return SimpleNamespace(task=task, best_states=[(1e-3 * (k + 1), st) for k, st in
                                                    enumerate(sample(task, n, seed=seed))])


class HashTimed:
    def build(self, sources):
        return [BuildResult(s, f"/fake/{s.key}.so", MeasureErrorNo.NO_ERROR, "", 0.0) for s in sources]

    def run(self, builds, task=None, **kw):
        return [MeasureResult((1e-4 * (1 + int(hashlib.sha256(b.source.code.encode()).hexdigest()[:8], 16) / 2 ** 32),),
                              MeasureErrorNo.NO_ERROR, "", 0.0, time.time()) for b in builds]

    def close(self):
        pass


def test_split_factors_adapt_to_the_new_extent():
    assert adapt_lengths(64, (4, 16, 1)) == (4, 16, 1)      # they divide: kept
    assert adapt_lengths(96, (4, 16, 1)) == (3, 16, 1)      # 96 / 16 = 6: the outer tile shrinks to 3
    assert adapt_lengths(14, (8,)) == (7,)                  # the largest divisor not above it
    assert adapt_lengths(13, (8,)) == (8,)                  # a prime: padded, as the sampler does
    assert adapt_lengths(6, (4, 32)) == (1, 6)              # larger than the extent: all of it


def test_a_history_re_targeted_to_another_shape_replays_and_verifies():
    src, dst = mm(64, 64, 64), mm(48, 96, 40)
    assert structure_key(src.dag) == structure_key(dst.dag) != structure_key(conv().dag)
    for st in sample(src, 6, seed=2):
        new = retarget(dst.dag, rename_steps(src.dag, steps_to_json(st.steps), to_canonical=True))
        assert new is not None and new.is_complete
        verify(lower(new))
        assert any(isinstance(step, Split) for step in new.steps)


def test_the_nearest_donor_of_the_same_structure_is_chosen():
    near, far, other = donor(mm(64, 64, 64)), donor(mm(512, 512, 512)), donor(conv())
    pool = SeedPool([far, other, near])
    got = pool.donors(mm(48, 96, 40))
    assert [d.workload_key for d in got] == [near.task.workload_key, far.task.workload_key]
    assert distance(near.task.dag.signature, "x") == float("inf")
    seeds = pool.seeds(mm(48, 96, 40), 2)
    assert len(seeds) == 2 and len({state_key(s) for s in seeds}) == 2


def test_a_task_without_a_similar_donor_gets_no_seeds():
    pool = SeedPool([donor(mm(64, 64, 64))])
    assert pool.donors(conv()) == [] and pool.seeds(conv(), 4) == []
    recipient = mm(32, 32, 32)
    assert SeedPool([donor(recipient)]).seeds(recipient, 4) == []   # itself is no donor


def test_donors_come_from_the_log_too():
    task = mm(64, 64, 64)
    res = MeasureResult((1e-3,), MeasureErrorNo.NO_ERROR, "", 0.0, time.time())
    recs = [Record.from_measure(task.workload_key, "avx2", canonical_steps(task, st), res, 1.0,
                                signature=task.dag.signature, structure=structure_key(task.dag))
            for st in sample(task, 3, seed=4)]
    recs.append(Record.from_json(recs[0].to_json()))   # the field round-trips
    assert recs[-1].structure == structure_key(task.dag)
    [d] = SeedPool([], recs).donors(mm(48, 96, 40))
    assert d.workload_key == task.workload_key and len(d.steps) == 3


def test_without_a_donor_the_tuner_measures_what_it_did_before():
    opts = TuneOptions(seed=3, model="random", progress=False, retime_top=0, per_round=8, cost_model="none")
    plain = TaskTuner(conv(), opts, make_cost_model(opts), HashTimed())
    pooled = TaskTuner(conv(), opts, make_cost_model(opts), HashTimed(), seeds=SeedPool([donor(mm(64, 64, 64))]))
    for _ in range(2):
        assert [r.steps_json for r in plain.step(8)] == [r.steps_json for r in pooled.step(8)]
    assert pooled.seeded == []


def test_the_first_round_measures_the_seeds_once():
    opts = TuneOptions(seed=3, model="random", progress=False, retime_top=0, per_round=8, cost_model="none")
    near = donor(mm(64, 64, 64), n=6)
    tuner = TaskTuner(mm(48, 96, 40), opts, make_cost_model(opts), HashTimed(), seeds=SeedPool([near]))
    first = {r.steps_json for r in tuner.step(8)}
    assert len(tuner.seeded) == 3            # half the room the default program leaves in a round of 8
    assert {steps_key(canonical_steps(tuner.task, s)) for s in tuner.seeded} <= first
    tuner.step(8)
    assert len(tuner.seeded) == 3            # asked once
    off = TaskTuner(mm(48, 96, 40), TuneOptions(**{**opts.__dict__, "seeding": False}), make_cost_model(opts),
                    HashTimed(), seeds=SeedPool([near]))
    off.step(8)
    assert off.seeded == []
