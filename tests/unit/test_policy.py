"""The search space comes from the task's policy: its sketch rules and its init rules, not hard-coded ones."""
from ansorc import workloads
from ansorc.ir.schedule.steps import Annotate, Pragma
from ansorc.search.annotate import CPU_INIT_RULES, fill_tile_sizes, sample
from ansorc.search.policy import CpuPolicy
from ansorc.search.rules import default_cpu_rules
from ansorc.search.sketch import generate_sketches
from ansorc.search.task import HardwareParams, SearchTask

HW = HardwareParams(num_cores=2)


class TilesOnly(CpuPolicy):
    """The CPU sketches, annotated with tile sizes only: no parallel, unroll or vector annotations."""

    def init_rules(self):
        return (fill_tile_sizes,)


class OneRule:
    """Only the last sketch rule (skip the stage): every sketch is the naive loop nest."""

    def sketch_rules(self):
        return default_cpu_rules()[-1:]

    def init_rules(self):
        return CPU_INIT_RULES


def test_default_policy_is_the_cpu_one():
    task = SearchTask(workloads.matmul(64, 64, 64), hw=HW)
    assert isinstance(task.policy, CpuPolicy)
    assert [s.steps for s in generate_sketches(task)] == \
        [s.steps for s in generate_sketches(task, rules=default_cpu_rules())]


def test_init_rules_come_from_the_policy():
    tensors = workloads.matmul(64, 64, 64)
    plain = sample(SearchTask(tensors, hw=HW, policy=TilesOnly()), 10, seed=1)
    full = sample(SearchTask(tensors, hw=HW), 10, seed=1)
    assert plain and not any(isinstance(st, (Annotate, Pragma)) for s in plain for st in s.steps)
    assert any(isinstance(st, (Annotate, Pragma)) for s in full for st in s.steps)


def test_sketch_rules_come_from_the_policy():
    task = SearchTask(workloads.matmul(64, 64, 64), hw=HW, policy=OneRule())
    sketches = generate_sketches(task)
    assert len(sketches) == 1 and sketches[0].steps == ()
    assert len(generate_sketches(SearchTask(workloads.matmul(64, 64, 64), hw=HW))) > 1
