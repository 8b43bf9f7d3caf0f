"""ansorc: a standalone tensor compiler in the Ansor design."""
from . import te
from .ir.program.dag import ComputeDAG, DagError
from .ir.schedule.state import ScheduleError, State, replay
from .api import BuildError, build, generate_source
from .errors import AnsorcError
from .ir.program.convert import from_bfloat16, to_bfloat16
from .kernel import AlignmentWarning, Kernel, KernelError, array, empty, load
from .export import ExportError
from .spec import KernelSpec
from .autotune import NoRecordError, apply_best, compile  # noqa: A004
from .search.tuner import tune
from .search.tuning import TuneOptions
from .search.multi import tune_tasks

__all__ = ["te", "ComputeDAG", "State", "replay", "build", "generate_source", "Kernel", "load", "apply_best",
           "compile", "tune", "tune_tasks", "TuneOptions", "empty", "array", "AlignmentWarning", "KernelSpec",
           "AnsorcError", "to_bfloat16", "from_bfloat16",
           "BuildError", "ExportError", "KernelError", "NoRecordError", "DagError", "ScheduleError"]
