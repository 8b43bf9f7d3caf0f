import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# every program the tests lower is checked by ir/verify.py after every pass (ANSORC_VERIFY=0 to skip)
os.environ.setdefault("ANSORC_VERIFY", "1")
MAX_TEST_PROCESSES = 4


def pytest_xdist_auto_num_workers(config):
    """`-n auto`: a process per CPU, at most MAX_TEST_PROCESSES. Each test's kernels already run an OpenMP
    thread per CPU and its builds a compiler per CPU; beyond a few processes they only wait for each other."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):   # not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(MAX_TEST_PROCESSES, cpus))


@pytest.fixture
def rng():
    return np.random.default_rng(0)
