"""Peers of the low-precision rows (workloads.LOW_PRECISION): the libraries' own int8 and bf16 paths.

GMM-I8: onnxruntime MatMulInteger (u8 x s8 -> int32, B an initializer, as in a quantized model).
C2D-I8: onnxruntime ConvInteger (NCHW, the weight an initializer; the same function, but a slow generic path) and
QLinearConv (its fast int8 conv, which also requantizes: checked against ours requantized alike).
GMM-BF16: PyTorch's bf16 matmul (oneDNN; a bf16 result, which the check allows for).
lowp_fns(op, args, inputs) -> {name: (call, to_ours[, same])} as peers.peer_fns, `same(ours, to_ours(result))`
the peer's own check where it computes more than ours; {} for a library that is missing.
"""
from __future__ import annotations

import numpy as np

from ansorc.suite.onnx_peers import ort_session
from ansorc.suite.peers import THREADS, _torch

OPSET = 13    # MatMulInteger and ConvInteger are opset 10 ops; 13 is what onnxruntime 1.30 reads for both


def matmul_integer(b: np.ndarray, a_like: np.ndarray, threads: int = THREADS):
    """MatMulInteger(A, B) with B constant: the session, to be fed {"A": a}."""
    from onnx import helper
    node = helper.make_node("MatMulInteger", ["A", "B"], ["out"])
    return ort_session([node], {"A": a_like}, {"B": b}, 2, "int32", OPSET, threads)


def conv_integer(w_hwio: np.ndarray, x_nchw: np.ndarray, stride: int, pad: int, threads: int = THREADS):
    """ConvInteger(X, W) with ansorc's K x K x CI x CO weight made CO x CI x K x K: the session, fed {"X": x}."""
    from onnx import helper
    k = w_hwio.shape[0]
    node = helper.make_node("ConvInteger", ["X", "W"], ["out"], kernel_shape=[k, k], strides=[stride, stride],
                            pads=[pad] * 4)
    weight = np.ascontiguousarray(w_hwio.transpose(3, 2, 0, 1))
    return ort_session([node], {"X": x_nchw}, {"W": weight}, 4, "int32", OPSET, threads)


def qlinear_conv(w_hwio: np.ndarray, x_nchw: np.ndarray, stride: int, pad: int, y_scale: float,
                 threads: int = THREADS):
    """QLinearConv(X, 1, 0, W, 1, 0, y_scale, 128): onnxruntime's fast int8 conv (what a quantized model runs), its
    int32 sums requantized to uint8 by 1 / y_scale around 128. Fed {"X": x}."""
    from onnx import helper
    k = w_hwio.shape[0]
    node = helper.make_node("QLinearConv", ["X", "xs", "xz", "W", "ws", "wz", "ys", "yz"], ["out"],
                            kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4)
    scalars = {"xs": np.float32(1), "xz": np.uint8(0), "ws": np.float32(1), "wz": np.int8(0),
               "ys": np.float32(y_scale), "yz": np.uint8(128)}
    inits = {"W": np.ascontiguousarray(w_hwio.transpose(3, 2, 0, 1)), **{k: np.array(v) for k, v in scalars.items()}}
    return ort_session([node], {"X": x_nchw}, inits, 4, "uint8", OPSET, threads)


def requantized_equal(y_scale: float):
    """The check of a QLinearConv peer against our int32 sums: ours requantized as it does (round half to even,
    saturate to uint8) agrees within one step (its float multiply may round the other way at a half)."""
    def same(ours: np.ndarray, got) -> bool:
        want = np.clip(np.rint(ours.astype(np.float64) / y_scale) + 128, 0, 255)
        return bool(np.abs(np.asarray(got).reshape(ours.shape).astype(np.float64) - want).max() <= 1)
    return same


def _conv_fns(args: tuple, inputs: list) -> dict:
    x = np.ascontiguousarray(inputs[0].transpose(0, 3, 1, 2))
    feed, back = {"X": x}, (lambda r: np.moveaxis(r, 1, -1))
    plain = conv_integer(inputs[1], x, args[6], args[7])
    # sums spread about sqrt(taps * E[x^2] * E[w^2]): that spread maps to +-40 steps, most outputs in range
    taps = inputs[1].size // inputs[1].shape[-1]
    spread = np.sqrt(taps * np.mean(np.square(x, dtype=np.float64)) *
                     np.mean(np.square(inputs[1], dtype=np.float64)))
    y_scale = float(np.float32(spread / 40))
    fast = qlinear_conv(inputs[1], x, args[6], args[7], y_scale)
    return {"onnxruntime": (lambda: plain.run(None, feed)[0], back),
            "onnxruntime_qlinear": (lambda: fast.run(None, feed)[0], back, requantized_equal(y_scale))}


def _ort_fns(op: str, args: tuple, inputs: list) -> dict:
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        return {}
    if op == "GMM-I8":
        sess, feed = matmul_integer(inputs[1], inputs[0]), {"A": inputs[0]}
        return {"onnxruntime": (lambda: sess.run(None, feed)[0], lambda r: r)}
    return _conv_fns(args, inputs)


def _torch_fns(inputs: list) -> dict:
    torch = _torch()
    if torch is None:
        return {}
    from ansorc import from_bfloat16
    a, b = (torch.from_numpy(from_bfloat16(x)).to(torch.bfloat16) for x in inputs)
    return {"torch": (lambda: torch.matmul(a, b), lambda r: r.float().numpy())}


def lowp_fns(op: str, args: tuple, inputs: list) -> dict:
    return _torch_fns(inputs) if op == "GMM-BF16" else _ort_fns(op, args, inputs)
