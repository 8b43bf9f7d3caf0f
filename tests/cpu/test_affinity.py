"""Measurement runs on every CPU of the process even when the calling thread was bound to one (an OpenMP
runtime with OMP_PROC_BIND binds the main thread, and child processes inherit that mask)."""
import os

import pytest

from ansorc.measure import affinity
from ansorc.measure.zygote import WorkerProcess, WORKER_SCRIPT

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                                reason="needs Linux CPU affinity and at least two CPUs")


def _allowed(pid: int) -> set:
    with open(f"/proc/{pid}/status") as f:
        line = next(ln for ln in f if ln.startswith("Cpus_allowed_list:"))
    return affinity._parse(line.partition(":")[2])


@pytest.fixture
def bound_to_one_cpu():
    mine = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(mine)})
    yield mine
    os.sched_setaffinity(0, mine)


def test_the_worker_gets_every_cpu_of_the_process_from_a_thread_bound_to_one(bound_to_one_cpu):
    assert affinity.process_cpus() >= bound_to_one_cpu
    worker = WorkerProcess()
    try:
        reply = worker.control({"op": "no such op"}, timeout=60)   # its main loop runs: the mask is set
        assert reply["ok"] is False
        assert _allowed(worker.proc.pid) == affinity.process_cpus()
    finally:
        worker.kill()


def test_all_process_cpus_widens_the_calling_thread_for_a_block_and_restores_it(bound_to_one_cpu):
    one = os.sched_getaffinity(0)
    with affinity.all_process_cpus():
        assert os.sched_getaffinity(0) == affinity.process_cpus() != one
    assert os.sched_getaffinity(0) == one


def test_the_worker_reads_the_variable_affinity_names():
    assert affinity.ENV in WORKER_SCRIPT.read_text()
