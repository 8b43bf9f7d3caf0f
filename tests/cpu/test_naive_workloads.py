"""Every benchmark workload, unscheduled, compiles (with gcc and with clang) and matches the numpy reference on its
smallest shape."""
import pytest

from ansorc import workloads

from .compilers import COMPILERS
from .helpers import check_kernel


@pytest.mark.parametrize("cc", COMPILERS)
@pytest.mark.parametrize("name", sorted(workloads.WORKLOADS))
def test_naive_build_matches_reference(name, cc, monkeypatch):
    monkeypatch.setenv("CC", cc)  # the target's compiler: $CC, else gcc
    tensors = workloads.smallest(name)
    check_kernel(tensors, None, rtol=1e-4, atol=1e-3)
