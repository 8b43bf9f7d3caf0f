"""The GPU benchmark cases of the CUDA issue: ansorc's tensors for each, PyTorch's equivalent call, and how to
compare the two outputs (ansorc's convolutions are NHWC with KxKxCIxCO weights; PyTorch's are NCHW)."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ansorc import workloads  # noqa: E402

# name -> (ansorc workload, its arguments, the PyTorch case in gpu_peers.CASES)
CASES = {
    "GMM-1024": ("gmm", (1, 1024, 1024, 1024), "GMM-1024"),
    "C2D-56x64": ("c2d", (1, 56, 56, 64, 64, 3, 1, 1), "C2D-56x64"),
    "DEP-112x32": ("dep", (1, 112, 112, 32, 3, 1, 1), "DEP-112x32"),
    "C2D-14x256": ("c2d", (1, 14, 14, 256, 256, 3, 1, 1), "C2D-14x256"),
    "GMM-2048": ("gmm", (1, 2048, 2048, 2048), "GMM-2048"),
    "SFM-1024": ("sfm", (1024, 1024), "softmax-1024"),
}


def tensors(case: str) -> list:
    fn, args, _ = CASES[case]
    return getattr(workloads, fn)(*args)


def torch_reference(case: str, inputs: list):
    """PyTorch's output for ansorc's input layout (torch tensors on the GPU), in ansorc's output layout."""
    import torch
    import torch.nn.functional as F
    fn, args, _ = CASES[case]
    if fn == "gmm":
        return torch.bmm(inputs[0], inputs[1])
    if fn == "c2d":
        n, h, w, ci, co, k, s, p = args
        out = F.conv2d(inputs[0].permute(0, 3, 1, 2), inputs[1].permute(3, 2, 0, 1), stride=s, padding=p)
        return out.permute(0, 2, 3, 1)
    if fn == "sfm":
        return torch.softmax(inputs[0], dim=-1)
    n, h, w, c, k, s, p = args
    out = F.conv2d(inputs[0].permute(0, 3, 1, 2), inputs[1].permute(3, 0, 1, 2), stride=s, padding=p, groups=c)
    return out.permute(0, 2, 3, 1)
