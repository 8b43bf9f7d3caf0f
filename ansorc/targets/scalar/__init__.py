"""The scalar target plug-in: the CPU plug-in's stages for a ScalarTarget (codegen_target.py): one thread,
plain C, no OpenMP runtime linked."""
from __future__ import annotations

from ..cpu import CpuPlugin


class ScalarPlugin(CpuPlugin):
    kind = "scalar"
    names = ("scalar",)
    networks = False   # a network library is built with OpenMP (net/library_c.py)

    def parse(self, name, cc=None):
        from .codegen_target import ScalarTarget
        return ScalarTarget.parse(name, cc)


PLUGIN = ScalarPlugin()
