"""What an operator's lowering receives and returns (the interface of the ops/ modules, used by importer.py).

    def lower_relu(node: Node, ins: list, ctx: LowerContext) -> list

`ins` holds one value per ONNX input: a te Tensor (computed at run time), an np.ndarray (a constant known at import
time: initializer or folded), or None (an omitted optional input). A lowering returns one value per ONNX output
(te Tensors; an np.ndarray where the result is a compile-time constant, e.g. Shape). Constants that the computation
reads become weight placeholders through `ctx.weight(array)`. Rank-0 ONNX tensors are held as shape (1,) tensors;
`Node.out_shapes` has the true ONNX shapes.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from ..network import UnsupportedError, c_name


@dataclass(frozen=True)
class Node:
    op_type: str
    name: str               # the ONNX node name ("" replaced by "<op_type>_<index>")
    attrs: dict             # attribute name -> python value (onnx.helper.get_attribute_value, decoded strings)
    in_shapes: tuple        # ONNX shapes of the inputs (None for omitted optional inputs)
    in_dtypes: tuple        # numpy dtype names ("float32", "int64", ...) of the inputs, None when omitted
    out_shapes: tuple       # ONNX shapes of the outputs after shape inference
    out_dtypes: tuple
    model: str = ""         # the model's name, for error messages

    def where(self) -> str:
        return f"node {self.name!r} ({self.op_type}) of model {self.model!r}"

    def unsupported(self, what: str) -> UnsupportedError:
        return UnsupportedError(f"{self.where()}: {what}")


@dataclass
class LowerContext:
    """Mutable per-import state: unique C-safe tensor names and the weights registered so far."""
    weights: dict = field(default_factory=dict)      # placeholder name -> np.ndarray
    _counter: itertools.count = field(default_factory=itertools.count)

    def name(self, hint: str) -> str:
        """A fresh, unique, C-safe te tensor name derived from `hint` (an ONNX node or tensor name)."""
        return f"{c_name(hint, 'n')}_{next(self._counter)}"

    def weight(self, array: np.ndarray, hint: str = "w"):
        """A te placeholder whose value is the constant `array` (kept in the model's weight file)."""
        from ... import te
        arr = np.ascontiguousarray(array)
        shape = arr.shape if arr.ndim else (1,)
        t = te.placeholder(shape, str(arr.dtype), name=self.name(hint))
        self.weights[t.name] = arr.reshape(shape)
        return t


@dataclass(frozen=True)
class OpSpec:
    """One row of the support table: how to lower the op, which input dtypes, which attributes are understood."""
    lower: object                      # callable(node, ins, ctx) -> list of outputs
    dtypes: tuple = ("float32",)       # accepted dtypes of the first input
    attrs: tuple = ()                  # attribute names the lowering understands (others -> UnsupportedError)
    note: str = ""                     # limits, shown in docs/networks.md's table
