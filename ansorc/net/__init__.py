"""Whole networks: ONNX import (importer.py), operators as te (ops/), fusion into tasks (fuse.py), one library
per model (library.py, model.py). Imports point one way: net uses ir/codegen/measure/search, never the reverse.

`compile` and `Model` load on first use, so that importing the contract modules (network.py, ops/) does not
pull in the compiler and the builder."""


def __getattr__(name):
    if name == "compile":
        from .api import compile
        return compile
    if name == "Model":
        from .model import Model
        return Model
    raise AttributeError(f"module 'ansorc.net' has no attribute {name!r}")


__all__ = ["compile", "Model"]
