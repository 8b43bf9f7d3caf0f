"""Whole networks: ONNX import (importer.py), operators as te (ops/), fusion into tasks (fuse.py), one library
per model (library.py, model.py). Imports point one way: net uses ir/codegen/measure/search, never the reverse.

`compile`, `Model` and `from_torch` (PyTorch modules: torch_front.py) load on first use, so that importing the
contract modules (network.py, ops/) does not pull in the compiler and the builder, nor torch."""


def __getattr__(name):
    if name == "compile":
        from .api import compile
        return compile
    if name == "Model":
        from .model import Model
        return Model
    if name in ("from_torch", "TorchModel"):   # torch itself is imported only when a module is compiled
        from . import torch_front
        return getattr(torch_front, name)
    raise AttributeError(f"module 'ansorc.net' has no attribute {name!r}")


__all__ = ["compile", "Model", "from_torch", "TorchModel"]
