import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# every program the tests lower is checked by ir/verify.py after every pass (ANSORC_VERIFY=0 to skip)
os.environ.setdefault("ANSORC_VERIFY", "1")


@pytest.fixture
def rng():
    return np.random.default_rng(0)
