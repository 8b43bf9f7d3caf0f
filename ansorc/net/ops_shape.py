"""ONNX operators lowered to te: Reshape, Transpose, Concat, Slice, Pad, Squeeze, Flatten, Expand, ...
Interface: ops_common.py."""
from __future__ import annotations

OPS: dict = {}  # ONNX op type -> ops_common.OpSpec
