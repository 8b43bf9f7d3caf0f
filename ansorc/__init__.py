"""ansorc: a standalone tensor compiler in the Ansor design."""
from .ir import te
from .ir.dag import ComputeDAG
from .ir.state import State, replay
from .api import build, generate_source
from .kernel import Kernel

__all__ = ["te", "ComputeDAG", "State", "replay", "build", "generate_source", "Kernel"]
