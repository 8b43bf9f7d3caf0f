"""ansorc: a standalone tensor compiler in the Ansor design."""
from . import te
from .ir.dag import ComputeDAG
from .ir.state import State, replay
from .api import build, generate_source
from .kernel import AlignmentWarning, Kernel, array, empty
from .export import load
from .autotune import apply_best, compile  # noqa: A004
from .search.tuner import tune

__all__ = ["te", "ComputeDAG", "State", "replay", "build", "generate_source", "Kernel", "load", "apply_best",
           "compile", "tune", "empty", "array", "AlignmentWarning"]
