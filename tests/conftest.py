import contextlib
import fcntl
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# every program the tests lower is checked by ir/passes/verify.py after every pass (ANSORC_VERIFY=0 to skip)
os.environ.setdefault("ANSORC_VERIFY", "1")
# the search's worker pool (search/parallel.py) is off: the test processes already fill the CPUs, and the short
# searches of tests would spend more on forking it than it saves (tests/*/test_search_pool*.py turn it on)
os.environ.setdefault("ANSORC_SEARCH_WORKERS", "0")
MAX_TEST_PROCESSES = 4


def pytest_xdist_auto_num_workers(config):
    """`-n auto`: a process per CPU, at most MAX_TEST_PROCESSES. Each test's kernels already run an OpenMP
    thread per CPU and its builds a compiler per CPU; beyond a few processes they only wait for each other."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):   # not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(MAX_TEST_PROCESSES, cpus))


@contextlib.contextmanager
def _locked(root, alone: bool):
    """A shared lock for a test, an exclusive one for a test marked alone; a test waiting to run alone holds the
    gate, so that the other processes' next tests wait behind it instead of starving it."""
    with open(root / "tests.gate", "a") as gate, open(root / "tests.lock", "a") as lock:
        fcntl.flock(gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            if not alone:
                fcntl.flock(gate, fcntl.LOCK_UN)
        yield   # closing the files releases both locks


@pytest.fixture(autouse=True)
def _alone_when_marked(request, tmp_path_factory):
    """Under pytest-xdist (make test), a test marked alone runs while no other test process runs a test: beside
    another one, a 20 ns kernel's first call ran 4.4x its best, so timing assertions meant nothing there."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        yield
        return
    root = tmp_path_factory.getbasetemp().parent   # the run's folder, shared by its worker processes
    with _locked(root, request.node.get_closest_marker("alone") is not None):
        yield


@pytest.fixture
def rng():
    return np.random.default_rng(0)
