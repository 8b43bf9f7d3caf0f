"""The C compilers generated kernels are checked with: gcc always, clang where it is installed (with libomp for
-fopenmp; CI installs both). Tests parametrized over COMPILERS run once per compiler."""
import shutil

import pytest

COMPILERS = [pytest.param("gcc", id="gcc"),
             pytest.param("clang", id="clang",
                          marks=pytest.mark.skipif(shutil.which("clang") is None, reason="clang is not installed"))]
