"""ONNX operators lowered to te: Conv, Gemm, MatMul, pooling, normalization, Softmax, reductions.
Interface: ops_common.py."""
from __future__ import annotations

OPS: dict = {}  # ONNX op type -> ops_common.OpSpec
