"""Tests that need a CUDA GPU: every test in this folder is marked `gpu` and skipped where none can be used."""
from pathlib import Path

import pytest

from ansorc.targets.cuda import measure_driver as cuda_driver

HERE = Path(__file__).parent


def pytest_collection_modifyitems(config, items):
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.gpu)


def pytest_runtest_setup(item):
    if not cuda_driver.available():  # cached: probed once, in a child process
        pytest.skip("needs a CUDA GPU (libcuda.so.1 and a device)")
