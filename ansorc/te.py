"""`import ansorc.te as te` and `from ansorc import te`: the tensor expression DSL (defined in ansorc.ir.program.te),
importable as a module path the way TVM users write `import tvm.te as te`."""
from .ir.program.te import *  # noqa: F401,F403 - this module is the public face of ir.te
from .ir.program.te import __all__  # noqa: F401
