"""onnxruntime peers for bench/suite.py: a one-node model per operator (the subgraph's nodes for CBR and TBG),
weights as initializers, 2 intra-op threads. ort_fns(op, args, inputs) -> {"onnxruntime": (call, to_ours)}, or
{} when onnx/onnxruntime are missing or the operator has no ONNX form here."""
from __future__ import annotations

import numpy as np

from ansorc.suite.peers import THREADS, _cap_back, _cap_inputs, _to_first, _weight_oihw, conv_params

OPSET = 17
IR_VERSION = 8


def ort_session(nodes, feeds: dict, inits: dict, out_rank: int, out_type: str = "float32", opset: int = OPSET,
                threads: int = THREADS):
    """An onnxruntime session of `nodes`: inputs named and typed as `feeds`' arrays, initializers `inits`, one
    output "out" of `out_type`; `threads` intra-op threads that do not spin when idle."""
    import onnx
    import onnxruntime as ort
    from onnx import helper, numpy_helper
    ins = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape))
           for k, v in feeds.items()]
    out = helper.make_tensor_value_info("out", helper.np_dtype_to_tensor_dtype(np.dtype(out_type)), [None] * out_rank)
    graph = helper.make_graph(nodes, "peer", ins, [out], [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = IR_VERSION   # onnx 1.23 writes IR 14 by default, newer than onnxruntime 1.30 reads
    opts = ort.SessionOptions()
    opts.intra_op_num_threads, opts.inter_op_num_threads = threads, 1
    # idle pool threads must not spin: they would take a core from the contender timed next (alternating rounds)
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    onnx.checker.check_model(model)
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def _session(nodes, feeds: dict, inits: dict, out_rank: int):
    sess = ort_session(nodes, feeds, inits, out_rank)
    return lambda: sess.run(None, feeds)[0]


def _conv_node(op: str, p: dict, k: int, inputs=("x", "w"), output="out"):
    from onnx import helper
    d = p["dims"]
    attrs = {"strides": [p["stride"]] * d, "pads": [p["pad"]] * (2 * d), "kernel_shape": [k] * d}
    if op == "T2D":
        return helper.make_node("ConvTranspose", list(inputs), [output], **attrs)
    return helper.make_node("Conv", list(inputs), [output], dilations=[p["dil"]] * d, group=p["groups"], **attrs)


def _simple(op: str, inputs: list):
    from onnx import helper
    if op == "GMM":
        return [helper.make_node("MatMul", ["a", "b"], ["out"])], {"a": inputs[0], "b": inputs[1]}, 3
    if op == "SFM":
        return [helper.make_node("Softmax", ["a"], ["out"], axis=1)], {"a": inputs[0]}, 2
    if op == "NRM":
        return [helper.make_node("ReduceL2", ["a"], ["out"], axes=[1, 2], keepdims=0)], {"a": inputs[0]}, 1
    nodes = [helper.make_node("Transpose", ["q"], ["qt"], perm=[0, 2, 1, 3]),
             helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 3, 1]),
             helper.make_node("MatMul", ["qt", "kt"], ["out"])]
    return nodes, {"q": inputs[0], "k": inputs[1]}, 4


def ort_fns(op: str, args: tuple, inputs: list) -> dict:
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        return {}
    if op in ("GMM", "SFM", "NRM", "TBG"):
        nodes, feeds, rank = _simple(op, inputs)
        return {"onnxruntime": (_session(nodes, feeds, {}, rank), lambda r: r)}
    return _ort_conv(op, args, inputs)


def _ort_conv(op: str, args: tuple, inputs: list) -> dict:
    from onnx import helper
    if op == "CAP":
        x, w = _cap_inputs(*inputs[:2])
        p = {"dims": 2, "stride": args[6], "pad": args[7], "dil": 1, "groups": 1}
        back = lambda r, n=inputs[0].shape[0]: _cap_back(r, n)  # noqa: E731
    else:
        p = conv_params("C2D" if op in ("CBR", "T2D") else op, args)
        x, w = _to_first(inputs[0], p["dims"]), _weight_oihw(op, inputs[1], p["dims"])
        back = lambda r: np.moveaxis(r, 1, -1)  # noqa: E731
    k = w.shape[-1]
    inits = {"w": w}
    if op == "CBR":
        co = w.shape[0]
        inits.update({"bias": inputs[2], "scale": inputs[3].reshape(co, 1, 1), "offset": inputs[4].reshape(co, 1, 1)})
        nodes = [_conv_node(op, p, k, ("x", "w", "bias"), "c"), helper.make_node("Mul", ["c", "scale"], ["m"]),
                 helper.make_node("Add", ["m", "offset"], ["a"]), helper.make_node("Relu", ["a"], ["out"])]
    else:
        nodes = [_conv_node(op, p, k)]
    call = _session(nodes, {"x": x}, inits, x.ndim)
    return {"onnxruntime": (call, back)}
