"""onnx's Conv and pooling node cases through the channels-last path (ansorc/net/layout_pass.py).

The Conv cases become ToNHWC -> ConvNHWC -> ToNCHW on their own (their weights are graph inputs: a ToHWIO node
permutes them at run time). A pool is computed channels-last only after an op that already is, so each 2-D pool
case gets a 1x1 identity Conv in front of it here (exact: one product by 1.0 and zeros per output)."""
import dataclasses
import functools

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from ansorc.net.backend import compiled, reference
from ansorc.net.importer import graph_of
from ansorc.net.ops import SUPPORT

from .conformance import node_cases, run_all

POOLS = ("MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool")


def _float_4d(vi) -> bool:
    t = vi.type.tensor_type
    return t.elem_type == onnx.TensorProto.FLOAT and len(t.shape.dim) == 4


def _conv_in_front(model: onnx.ModelProto):
    """The model with x -> 1x1 identity Conv -> the pool, or None when its pool is not a 2-D float one."""
    g = model.graph
    if len(g.node) != 1 or g.node[0].op_type not in POOLS or not _float_4d(g.input[0]):
        return None
    c = g.input[0].type.tensor_type.shape.dim[1].dim_value
    m = onnx.ModelProto()
    m.CopyFrom(model)
    eye = numpy_helper.from_array(np.eye(c, dtype=np.float32).reshape(c, c, 1, 1), "layout_eye")
    m.graph.initializer.append(eye)
    x = m.graph.input[0].name
    m.graph.node.insert(0, helper.make_node("Conv", [x, "layout_eye"], ["layout_x"], name="layout_conv"))
    m.graph.node[1].input[0] = "layout_x"
    return m


@functools.cache
def layout_cases() -> tuple:
    out = []
    for case in node_cases():
        ops = {n.op_type for n in case.model.graph.node}
        if ops == {"Conv"} and _float_4d(case.model.graph.input[0]):
            out.append(case)
        elif ops & set(POOLS):
            m = _conv_in_front(case.model)
            if m is not None:
                out.append(dataclasses.replace(case, model=m, name=case.name + "_after_conv"))
    return tuple(out)


def test_the_cases_run_channels_last():
    cases = layout_cases()
    assert sum("_after_conv" in c.name for c in cases) >= 20 and sum("_after_conv" not in c.name for c in cases) >= 6
    for c in cases:
        ops = [n.op_type for n in graph_of(c.model).nodes]
        assert any(o.endswith("NHWC") for o in ops) and "Conv" not in ops, (c.name, ops)
        if len(c.model.graph.output) == 1:  # MaxPool's Indices output keeps it NCHW
            assert not any(o in POOLS for o in ops), (c.name, ops)


@pytest.mark.slow
@pytest.mark.parametrize("executor", ["reference", "compiled"])
def test_conv_and_pool_cases_pass_channels_last(capsys, executor):
    run = {"reference": reference, "compiled": compiled}[executor]
    report = run_all(SUPPORT, layout_cases(), executor=functools.partial(run, table=SUPPORT))
    with capsys.disabled():
        print("\n" + report.text())
    assert not report.by("failed"), "\n".join(f"{r.name}: {r.detail}" for r in report.by("failed"))
    assert len(report.by("passed")) >= 25
