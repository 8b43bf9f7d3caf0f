"""Evolutionary operators: mutations keep programs valid and change only decisions; crossover mixes parents."""
import random

from ansorc import workloads
from ansorc.ir.schedule.steps import Pragma, Split
from ansorc.search.annotate import sample, state_key
from ansorc.search.mutate import crossover, mutate_compute_location, mutate_parallel, mutate_tile_size, \
    mutate_unroll
from ansorc.search.task import HardwareParams, SearchTask

TASK = SearchTask(workloads.matmul(512, 512, 512), hw=HardwareParams(num_cores=2))


def _splits(state):
    return [s for s in state.steps if isinstance(s, Split)]


def test_tile_size_mutation_keeps_products_and_explores():
    rng = random.Random(0)
    parent = next(s for s in sample(TASK, 50, seed=3) if all(512 % _prod(x.lengths) == 0 for x in _splits(s)))
    seen = set()
    for _ in range(300):
        child = mutate_tile_size(TASK, parent, rng)
        if child is None:
            continue
        assert [type(s) for s in child.steps] == [type(s) for s in parent.steps]  # structure unchanged
        for sp in _splits(child):
            assert 512 % _prod(sp.lengths) == 0 and sp.lengths[-1] <= 64
        seen.add(state_key(child))
    assert len(seen) > 15


def _prod(xs):
    p = 1
    for x in xs:
        p *= x
    return p


def test_unroll_mutation_changes_only_the_pragma():
    rng = random.Random(1)
    parent = next(s for s in sample(TASK, 20, seed=1) if any(isinstance(x, Pragma) for x in s.steps))
    child = mutate_unroll(TASK, parent, rng)
    diff = [(a, b) for a, b in zip(parent.steps, child.steps) if a != b]
    assert len(diff) == 1 and isinstance(diff[0][1], Pragma) and diff[0][0].value != diff[0][1].value


def test_parallel_and_compute_location_mutations_replay():
    rng = random.Random(2)
    progs = sample(SearchTask(workloads.c2d(1, 14, 14, 16, 32, 3, 1, 1), hw=TASK.hw), 40, seed=4)
    task = SearchTask(workloads.c2d(1, 14, 14, 16, 32, 3, 1, 1), hw=TASK.hw)
    par = [c for c in (mutate_parallel(task, p, rng) for p in progs) if c is not None]
    loc = [c for c in (mutate_compute_location(task, p, rng) for p in progs) if c is not None]
    assert par and loc
    for c in par + loc:
        assert c.is_complete


def test_crossover_takes_decisions_from_both_parents():
    rng = random.Random(3)
    progs = sample(TASK, 200, seed=5)
    groups = {}
    for p in progs:
        groups.setdefault(tuple((type(s).__name__, getattr(s, "stage", "")) for s in p.steps), []).append(p)
    a, b = next(g for g in groups.values() if len(g) >= 2)[:2]
    children = [crossover(TASK, a, b, rng) for _ in range(20)]
    children = [c for c in children if c is not None]
    assert children
    for c in children:
        for x, pa, pb in zip(c.steps, a.steps, b.steps):
            assert x in (pa, pb)
