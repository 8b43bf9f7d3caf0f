"""An onnx backend (onnx.backend.base) over ansorc, for onnx's backend tests and anyone who drives ONNX backends.

    rep = AnsorcBackend.prepare(model)           # or backend.prepare(model)
    outputs = rep.run([x])

A rep runs through an *executor*: a callable `executor(model: onnx.ModelProto) -> run`, `run(list of arrays) ->
list of arrays`. The default is the numpy reference (`reference`: import_model + run_reference); `compiled` runs
the model's generated library (ansorc.net.compile). Switch per call (`prepare(model, executor=compiled)`), per
backend class (`backend_with(compiled)`), or for the module (`set_default_executor(compiled)`).

Inputs that real models always give as constants (shapes, axes, pads, clip bounds, normalization statistics) may
be graph inputs in onnx's node tests; the rep binds them to their run-time values (one prepared model per distinct
set of values) so that the importer sees constants, as it would in an exported model.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper
from onnx.backend.base import Backend, BackendRep, Device, DeviceType

from .network import NetError

# op type -> indices of inputs that exported models give as constants
PARAM_INPUTS = {
    "Reshape": (1,), "Expand": (1,), "Tile": (1,), "Slice": (1, 2, 3, 4), "Pad": (1, 2, 3), "Unsqueeze": (1,),
    "Squeeze": (1,), "Split": (1,), "ConstantOfShape": (0,), "TopK": (1,), "Resize": (1, 2, 3), "Upsample": (1,),
    "OneHot": (1, 2), "Range": (0, 1, 2), "CumSum": (1,), "Trilu": (1,), "Clip": (1, 2), "Dropout": (1, 2),
    "ReduceSum": (1,), "ReduceMean": (1,), "ReduceMax": (1,), "ReduceMin": (1,), "ReduceProd": (1,),
    "ReduceL1": (1,), "ReduceL2": (1,), "ReduceLogSum": (1,), "ReduceLogSumExp": (1,), "ReduceSumSquare": (1,),
    "BatchNormalization": (1, 2, 3, 4), "InstanceNormalization": (1, 2), "LayerNormalization": (1, 2),
}


def reference(model: onnx.ModelProto, table: dict | None = None):
    """The numpy reference executor: the te graph of the model evaluated by ansorc.ir.program.evaluate."""
    from .importer import import_model, run_reference
    net = import_model(model, table=table)
    return lambda inputs: run_reference(net, inputs)


def compiled(model: onnx.ModelProto, table: dict | None = None):
    """The compiled executor: the model's C library (untuned default schedules) through ansorc.net.compile."""
    from . import compile as compile_model  # api.py: ansorc.net.compile accepts an imported Network
    from .importer import import_model
    m = compile_model(import_model(model, table=table))

    def run(inputs):
        out = m(*inputs)
        return list(out) if isinstance(out, (list, tuple)) else [out]
    return run


_default = {"executor": reference}


def set_default_executor(executor) -> None:
    """The executor used by reps prepared without one (module-wide)."""
    _default["executor"] = executor


def param_inputs(model: onnx.ModelProto) -> list:
    """Names of run-time graph inputs read at a PARAM_INPUTS position (bound to constants at run time)."""
    inits = {t.name for t in model.graph.initializer}
    runtime = [vi.name for vi in model.graph.input if vi.name not in inits]
    used = {n.input[i] for n in model.graph.node for i in PARAM_INPUTS.get(n.op_type, ()) if i < len(n.input)}
    return [n for n in runtime if n in used]


def bind(model: onnx.ModelProto, values: dict) -> onnx.ModelProto:
    """A copy of the model whose inputs `values` (name -> array) are initializers."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    keep = [vi for vi in out.graph.input if vi.name not in values]
    del out.graph.input[:]
    out.graph.input.extend(keep)
    out.graph.initializer.extend(numpy_helper.from_array(np.asarray(v), k) for k, v in values.items())
    return out


class AnsorcRep(BackendRep):
    def __init__(self, model: onnx.ModelProto, executor=None):
        self.model = model
        self.executor = executor or _default["executor"]
        inits = {t.name for t in model.graph.initializer}
        self.input_names = [vi.name for vi in model.graph.input if vi.name not in inits]
        self.params = param_inputs(model)
        self._prepared: dict = {}
        if not self.params:
            self._prepared[()] = self.executor(model)

    def run(self, inputs, **kwargs) -> tuple:  # noqa: ARG002 - onnx's signature
        if isinstance(inputs, dict):
            missing = [n for n in self.input_names if n not in inputs]
            if missing:
                raise NetError(f"model {self.model.graph.name!r}: no value for input {missing[0]!r}")
            inputs = [inputs[n] for n in self.input_names]
        elif not isinstance(inputs, (list, tuple)):
            inputs = [inputs]
        if len(inputs) != len(self.input_names):
            raise NetError(f"model {self.model.graph.name!r} takes {len(self.input_names)} inputs, got {len(inputs)}")
        values = {n: np.asarray(a) for n, a in zip(self.input_names, inputs) if n in self.params}
        key = tuple((n, v.dtype.str, v.shape, v.tobytes()) for n, v in values.items())
        if key not in self._prepared:
            self._prepared[key] = self.executor(bind(self.model, values))
        rest = [a for n, a in zip(self.input_names, inputs) if n not in self.params]
        return tuple(self._prepared[key](rest))


class AnsorcBackend(Backend):
    executor = None  # None: the module default (set_default_executor)

    @classmethod
    def prepare(cls, model, device: str = "CPU", executor=None, **kwargs) -> AnsorcRep:  # noqa: ARG003
        if not isinstance(model, onnx.ModelProto):
            from .importer import load
            model = load(model)[0]
        return AnsorcRep(model, executor or cls.executor)

    @classmethod
    def run_node(cls, node, inputs, device: str = "CPU", outputs_info=None, **kwargs) -> tuple:  # noqa: ARG003
        """One node run as a one-node model (types from the input arrays, default opset unless `opset_version`)."""
        arrays = [np.asarray(a) for a in inputs]
        ins = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
               for n, a in zip(node.input, arrays) if n]
        outs = [helper.make_empty_tensor_value_info(o) for o in node.output if o]
        opsets = [helper.make_opsetid("", kwargs.get("opset_version", onnx.defs.onnx_opset_version()))]
        model = helper.make_model(helper.make_graph([node], "node", ins, outs), opset_imports=opsets)
        model = onnx.shape_inference.infer_shapes(model)  # output types, which the checker requires
        return cls.prepare(model, device, executor=kwargs.get("executor")).run(
            [a for n, a in zip(node.input, arrays) if n])

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return Device(device).type == DeviceType.CPU


def backend_with(executor) -> type:
    """A backend class whose reps run through `executor`."""
    return type("AnsorcBackend_" + getattr(executor, "__name__", "custom"), (AnsorcBackend,),
                {"executor": staticmethod(executor)})


def supported(model, table: dict | None = None, input_shapes: dict | None = None, inputs=None) -> tuple:
    """(True, "") when every op, dtype and attribute the model needs after constant folding is in the table, else
    (False, one line naming the first missing op/dtype/attribute, its node and the model). With `inputs` (the
    run-time arrays, graph-input order) the PARAM_INPUTS are bound first, as a rep does."""
    from .importer import graph_of, load
    from .lowering import check_graph
    if table is None:
        from .ops import SUPPORT as table
    try:
        model = model if isinstance(model, onnx.ModelProto) else load(model)[0]
        if inputs is not None:
            names = [vi.name for vi in model.graph.input if vi.name not in {t.name for t in model.graph.initializer}]
            params = set(param_inputs(model))
            model = bind(model, {n: a for n, a in zip(names, inputs) if n in params})
        check_graph(graph_of(model, input_shapes), table)
    except NetError as e:
        return False, str(e)
    return True, ""


prepare = AnsorcBackend.prepare
run_model = AnsorcBackend.run_model
run_node = AnsorcBackend.run_node
supports_device = AnsorcBackend.supports_device
