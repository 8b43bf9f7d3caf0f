"""ONNX neural-network operators lowered to te: Conv, ConvTranspose (ops_conv), pooling (ops_pool), normalization
and softmax (ops_norm), reductions (ops_reduce), Gemm and MatMul (here). Interface: ops_common.py."""
from __future__ import annotations

from . import ops_conv, ops_pool

OPS: dict = {**ops_conv.OPS, **ops_pool.OPS}  # ONNX op type -> ops_common.OpSpec
