"""ONNX operators lowered to te: Gather and other data-dependent loads (run-time checked indices).
Interface: ops_common.py."""
from __future__ import annotations

OPS: dict = {}  # ONNX op type -> ops_common.OpSpec
