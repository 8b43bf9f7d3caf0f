"""Whole networks: ONNX import (importer.py), operators as te (ops_*.py), fusion into tasks (fuse.py), one library
per model (library.py, model.py). Imports point one way: net uses ir/codegen/measure/search, never the reverse."""
