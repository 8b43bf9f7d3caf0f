"""The whole space is valid: for every benchmark operator (smallest shape) 24 random programs (ANSORC_SWEEP=N:
N of them; 100 took 12 minutes of CI's 2 cores, 40 about 5) compile and match the numpy reference. Built at -O1 in
parallel (quick to build and to run), plus a few at the real -O3 flags. tests/cpu/test_simd.py and test_fuzz_sanitize.py
sweep other random programs of every operator."""
import os

import pytest

from ansorc import workloads
from ansorc.api import generate_source
from ansorc.measure.builder import DEFAULT_CFLAGS
from ansorc.search.annotate import sample
from ansorc.search.task import HardwareParams, SearchTask

from .compilers import COMPILERS
from .helpers import check_in_worker

FAST_FLAGS = ("-O1", "-march=native", "-fopenmp", "-shared", "-fPIC", "-std=c99")
SWEEP = int(os.environ.get("ANSORC_SWEEP", "24"))


def _check(name, n, flags, seed, cc="gcc"):
    """Candidates run in the measurement worker (as in tuning): a crash is a recorded error, not a dead pytest."""
    task = SearchTask(workloads.smallest(name), hw=HardwareParams(num_cores=2))
    progs = sample(task, n, seed=seed)
    assert len(progs) >= min(n, 20), f"{name}: only {len(progs)} distinct programs"
    sources = [generate_source(task.dag, p, name=f"{name.lower()}_{k}") for k, p in enumerate(progs)]
    # validity, not speed: big unrolled bodies build slowly
    check_in_worker(task.dag, progs, sources, flags, name, cc=cc)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(workloads.WORKLOADS))
def test_random_programs_match(name):
    _check(name, SWEEP, FAST_FLAGS, seed=11)


@pytest.mark.parametrize("cc", COMPILERS)
@pytest.mark.parametrize("name", ["GMM", "C2D", "NRM", "SFM", "DEP", "T2D"])
def test_random_programs_match_at_o3(name, cc):
    _check(name, 6, DEFAULT_CFLAGS, seed=5, cc=cc)
