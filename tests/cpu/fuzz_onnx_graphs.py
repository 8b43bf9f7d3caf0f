"""Seeded random small ONNX graphs (opset 17) for the ONNX sanitizer fuzz test (test_fuzz_onnx.py) and its long
run (bench/fuzz_onnx.py): 1-4 nodes drawn from the support table's ops (fuzz_onnx_ops.py), random shapes of a
few hundred to a few thousand elements, random attributes mostly within what the op allows and sometimes just
outside it (an axis past the rank, a size that does not divide, an index out of range): bad attributes are how
defects are found. Inputs are float32 (int64 for indices and shapes, mostly constant initializers). Every tensor
no node consumes is a graph output. `Chooser` (fuzz_programs.py) is the only source of randomness.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from tests.cpu.fuzz_onnx_nn import RECIPES
from tests.cpu.fuzz_onnx_ops import LOOSE
from tests.cpu.fuzz_programs import Chooser

OPSET = 17
ELEM = {"float32": TensorProto.FLOAT, "int64": TensorProto.INT64, "bool": TensorProto.BOOL,
        "int32": TensorProto.INT32, "float64": TensorProto.DOUBLE}


@dataclass
class GraphBuilder:
    """A graph being drawn: nodes, initializers, graph inputs with their random feeds, and the tensors made so
    far with their shapes (None: shape inference could not tell, so no later node reads it)."""
    c: Chooser
    nodes: list = field(default_factory=list)
    inits: list = field(default_factory=list)
    inputs: list = field(default_factory=list)
    feeds: dict = field(default_factory=dict)
    shapes: dict = field(default_factory=dict)    # tensor name -> shape tuple (float32 tensors only)
    dtypes: dict = field(default_factory=dict)    # tensor name -> dtype
    ops: list = field(default_factory=list)
    n: int = 0

    def name(self, hint: str) -> str:
        self.n += 1
        return f"{hint}{self.n}"

    def const(self, value, dtype="int64", hint="c") -> str:
        name = self.name(hint)
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def rand(self, shape) -> np.ndarray:
        rng = np.random.default_rng(self.c.randint(0, 1 << 30))
        return rng.standard_normal(shape).astype(np.float32)

    def weight(self, shape, hint="w") -> str:
        return self.const(self.rand(shape), "float32", hint)

    def input(self, shape, hint="x") -> str:
        name = self.name(hint)
        self.inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape)))
        self.feeds[name] = self.rand(shape)
        self.shapes[name], self.dtypes[name] = tuple(shape), "float32"
        return name

    def operand(self, shape, hint="y") -> str:
        """A second operand: a graph input or a constant."""
        return self.input(shape, hint) if self.c.coin(0.5) else self.weight(shape, hint)

    def node(self, op: str, ins: list, n_out: int = 1, dtype: str = "float32", **attrs) -> list:
        outs = [self.name(op.lower()[:6]) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op, ins, outs, **attrs))
        self.ops.append(op)
        for o in outs:
            self.dtypes[o] = dtype
        return outs


def random_shape(c: Chooser, max_elems: int = 2048) -> tuple:
    while True:
        shape = tuple(c.randint(1, 8) for _ in range(c.randint(1, 4)))
        if 16 <= int(np.prod(shape)) <= max_elems or len(shape) == 1:
            return shape


def _infer(g: GraphBuilder, outputs: list):
    model = _model(g, [helper.make_tensor_value_info(o, ELEM[g.dtypes[o]], None) for o in outputs])
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    except Exception:  # noqa: BLE001 - the node's attributes are invalid: it ends the graph
        return None
    found = {v.name: v for v in (*inferred.graph.value_info, *inferred.graph.output)}
    return found


def _known_shape(vi) -> tuple | None:
    t = vi.type.tensor_type
    if not t.HasField("shape") or any(not d.HasField("dim_value") for d in t.shape.dim):
        return None
    return tuple(d.dim_value for d in t.shape.dim)


def _model(g: GraphBuilder, outputs: list):
    graph = helper.make_graph(g.nodes, "fz", g.inputs, outputs, initializer=g.inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=8)


@dataclass(frozen=True)
class FuzzGraph:
    model: onnx.ModelProto
    feeds: dict
    ops: tuple
    loose: bool          # reductions and normalizations: float32 sums in another order

    def describe(self) -> str:
        ins = ", ".join(f"{i.name}{list(self.feeds[i.name].shape)}" for i in self.model.graph.input)
        return f"inputs {ins}: " + "; ".join(helper.printable_node(n) for n in self.model.graph.node)

    def text(self) -> str:
        return helper.printable_graph(self.model.graph)


def random_graph(c: Chooser) -> FuzzGraph:
    g = GraphBuilder(c)
    g.input(random_shape(c))
    for _ in range(c.randint(1, 4)):
        live = [t for t, s in g.shapes.items() if s and min(s) > 0 and g.dtypes[t] == "float32"]
        if not live:
            break
        x = c.choice(live[-3:])
        op = c.choice(sorted(RECIPES))
        outs = RECIPES[op](c, g, x, g.shapes[x])
        found = _infer(g, outs)
        for o in outs:
            g.shapes[o] = _known_shape(found[o]) if found and o in found else None
        for name, vi in (found or {}).items():   # tensors a recipe added on the way (reshapes)
            g.shapes.setdefault(name, _known_shape(vi))
        if found is None:
            break
    consumed = {i for n in g.nodes for i in n.input}
    made = [o for n in g.nodes for o in n.output if o and o not in consumed]
    # the checker wants a shape on every output; one shape inference could not tell gets a symbolic dim
    outputs = [helper.make_tensor_value_info(o, ELEM[g.dtypes[o]], g.shapes.get(o) or ["n"]) for o in made]
    return FuzzGraph(_model(g, outputs), g.feeds, tuple(g.ops), any(op in LOOSE for op in g.ops))


def graph_for_seed(seed: int) -> FuzzGraph:
    return random_graph(Chooser(random.Random(seed)))


def tolerances(graph: FuzzGraph) -> tuple:
    """(rtol, atol): float32 reductions and normalizations sum in another order than onnxruntime."""
    return (2e-3, 2e-4) if graph.loose else (1e-4, 1e-5)
