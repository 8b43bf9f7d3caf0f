"""The support table: every ONNX op ansorc lowers, with its dtypes and attributes (docs/networks.md lists it)."""
from __future__ import annotations

from . import ops_elementwise, ops_gather, ops_nn, ops_shape

SUPPORT: dict = {**ops_elementwise.OPS, **ops_shape.OPS, **ops_nn.OPS, **ops_gather.OPS}
