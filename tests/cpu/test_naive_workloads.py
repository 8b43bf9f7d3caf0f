"""Every benchmark workload, unscheduled, compiles and matches the numpy reference on its smallest shape."""
import pytest

from ansorc import workloads

from .helpers import check_kernel


@pytest.mark.parametrize("name", sorted(workloads.WORKLOADS))
def test_naive_build_matches_reference(name):
    tensors = workloads.smallest(name)
    check_kernel(tensors, None, rtol=1e-4, atol=1e-3)
