"""ONNX operators lowered to te: element-wise and broadcasting arithmetic, activations, comparisons, Cast.
Interface: ops_common.py."""
from __future__ import annotations

OPS: dict = {}  # ONNX op type -> ops_common.OpSpec
