"""ONNX neural-network operators lowered to te: Conv, ConvTranspose (ops_conv), pooling (ops_pool), normalization
and softmax (ops_norm), reductions (ops_reduce), Gemm and MatMul (here). Interface: ops_common.py."""
from __future__ import annotations

from . import ops_conv, ops_norm, ops_pool, ops_reduce

OPS: dict = {**ops_conv.OPS, **ops_pool.OPS, **ops_reduce.OPS, **ops_norm.OPS}  # ONNX op type -> ops_common.OpSpec
