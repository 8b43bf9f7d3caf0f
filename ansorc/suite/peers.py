"""Peers for bench/suite.py: for each benchmark operator, the library calls that compute the same function.

peer_fns(op, args, inputs) -> {peer name: (call, to_ours)}: `call()` runs the peer on inputs already laid out the
way it wants (converted once, outside the timing, as a framework user keeps them), `to_ours(result)` turns its
result into ansorc's layout for the equality check. Peers: numpy (matmul family, reductions), PyTorch CPU in NCHW
and channels-last (skipped when torch is not installed), onnxruntime (a one-node model per operator, the
subgraph's nodes for CBR/TBG; 2 intra-op threads). `args` are the workload's parameters (workloads.WORKLOADS).
"""
from __future__ import annotations

import os

import numpy as np

THREADS = int(os.environ.get("OMP_NUM_THREADS", "2"))   # the kernels' OpenMP thread count; peers get the same


def _torch():
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(THREADS)
    return torch


# ----------------------------------------------------------------------------- numpy

def _np_softmax(a):
    e = np.exp(a - a.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


NUMPY = {
    "GMM": lambda x, y: (lambda: np.matmul(x, y)),
    "TBG": lambda q, k: (lambda: np.matmul(q.transpose(0, 2, 1, 3), k.transpose(0, 2, 3, 1))),
    "NRM": lambda a: (lambda: np.sqrt(np.einsum("bij,bij->b", a, a))),
    "SFM": lambda a: (lambda: _np_softmax(a)),
}


# ----------------------------------------------------------------------------- conv parameters

def conv_params(op: str, args: tuple) -> dict:
    """stride/pad/dilation/groups and the number of spatial dims of a conv workload's parameters."""
    if op == "C1D":
        return {"dims": 1, "stride": args[5], "pad": args[6], "dil": 1, "groups": 1}
    if op == "C3D":
        return {"dims": 3, "stride": args[7], "pad": args[8], "dil": 1, "groups": 1}
    if op == "DEP":
        return {"dims": 2, "stride": args[5], "pad": args[6], "dil": 1, "groups": args[3]}
    return {"dims": 2, "stride": args[6], "pad": args[7], "dil": 2 if op == "DIL" else 1,
            "groups": 4 if op == "GRP" else 1}


def _to_first(x, dims: int):
    """channels-last (N, spatial..., C) -> (N, C, spatial...)."""
    return np.ascontiguousarray(np.moveaxis(x, -1, 1))


def _weight_oihw(op: str, w, dims: int):
    """ansorc's conv weight -> (CO, CI/groups, k...) as torch and ONNX want it."""
    if op == "DEP":                               # (1, K, K, C) -> (C, 1, K, K)
        return np.ascontiguousarray(w[0].transpose(2, 0, 1)[:, None])
    if op == "T2D":                               # (K, K, CI, CO) -> (CI, CO, K, K), no flip
        return np.ascontiguousarray(w.transpose(2, 3, 0, 1))
    return np.ascontiguousarray(np.moveaxis(np.moveaxis(w, -1, 0), -1, 1))  # (k..., CI, CO) -> (CO, CI, k...)


def _cap_inputs(data, kernel):
    """Capsule conv as a conv2d with batch N*4 (capsule row i), channels (k, rc) -> (j, co)."""
    n, h, w, c4, _, ci = data.shape
    x = np.ascontiguousarray(data.transpose(0, 3, 4, 5, 1, 2).reshape(n * c4, c4 * ci, h, w))
    k, _, _, _, _, co = kernel.shape
    wt = np.ascontiguousarray(kernel.transpose(3, 5, 2, 4, 0, 1).reshape(c4 * co, c4 * ci, k, k))
    return x, wt


def _cap_back(y, n: int):
    """(N*4, 4*CO, OH, OW) -> (N, OH, OW, 4, 4, CO)."""
    b, jc, oh, ow = y.shape
    return y.reshape(n, 4, 4, jc // 4, oh, ow).transpose(0, 4, 5, 1, 2, 3)


# ----------------------------------------------------------------------------- PyTorch

def _torch_conv_call(torch, op, p, x, w, channels_last: bool):
    F = torch.nn.functional
    fmt = {2: torch.channels_last, 3: torch.channels_last_3d}.get(p["dims"])
    xt, wt = torch.from_numpy(x), torch.from_numpy(w)
    if channels_last:
        xt, wt = xt.contiguous(memory_format=fmt), wt.contiguous(memory_format=fmt)
    if op == "T2D":
        return lambda: F.conv_transpose2d(xt, wt, stride=p["stride"], padding=p["pad"])
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[p["dims"]]
    return lambda: conv(xt, wt, stride=p["stride"], padding=p["pad"], dilation=p["dil"], groups=p["groups"])


def torch_fns(op: str, args: tuple, inputs: list) -> dict:
    torch = _torch()
    if torch is None:
        return {}
    if op in NUMPY and op != "NRM":
        ts = [torch.from_numpy(a) for a in inputs]
        call = {"GMM": lambda: torch.bmm(*ts), "SFM": lambda: torch.softmax(ts[0], 1),
                "TBG": lambda: torch.matmul(ts[0].transpose(1, 2), ts[1].permute(0, 2, 3, 1))}[op]
        return {"torch": (call, lambda r: r.numpy())}
    if op == "NRM":
        a = torch.from_numpy(inputs[0])
        return {"torch": (lambda: torch.linalg.vector_norm(a, dim=(1, 2)), lambda r: r.numpy())}
    return _torch_conv_fns(torch, op, args, inputs)


def _torch_conv_fns(torch, op, args, inputs) -> dict:
    out = {}
    if op == "CAP":
        x, w = _cap_inputs(*inputs[:2])
        p = {"dims": 2, "stride": args[6], "pad": args[7], "dil": 1, "groups": 1}
        back = lambda r, n=inputs[0].shape[0]: _cap_back(r.numpy(), n)  # noqa: E731
    else:
        p = conv_params("C2D" if op in ("CBR", "T2D") else op, args)
        x, w = _to_first(inputs[0], p["dims"]), _weight_oihw(op, inputs[1], p["dims"])
        back = lambda r: np.moveaxis(r.numpy(), 1, -1)  # noqa: E731
    layouts = (False, True) if p["dims"] > 1 else (False,)
    for cl in layouts:
        call = _torch_conv_call(torch, op, p, x, w, cl)
        if op == "CBR":
            bias, scale, offset = (torch.from_numpy(a).reshape(1, -1, 1, 1) for a in inputs[2:5])
            conv = call
            call = lambda conv=conv: torch.relu((conv() + bias) * scale + offset)  # noqa: E731
        out["torch_cl" if cl else "torch"] = (call, back)
    return out
