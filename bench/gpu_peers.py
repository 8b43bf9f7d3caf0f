"""PyTorch (cuBLAS / cuDNN) on the GPU cases of the CUDA backend, timed with CUDA graphs and events.

    python bench/gpu_peers.py [--replays 20] [--out bench/results/gpu_peers.json]   # also writes the .md

fp32 with TF32 off (the column to compare with ansorc's fp32 FFMA kernels), and a TF32-on column for reference.
Convolutions run in NCHW and channels_last; the faster counts. cudnn.benchmark picks cuDNN's best algorithm.
Each time is the median over replays of a graph holding K back-to-back calls (K: one replay >= 1 ms), / K.
`time_torch_case(name, shape)` times one case, so a script can alternate ansorc and torch in one process.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path

CASES = {  # name -> (op, shape)
    "GMM-1024": ("GMM", (1024, 1024, 1024)),                  # M, N, K
    "GMM-2048": ("GMM", (2048, 2048, 2048)),
    "C2D-56x64": ("C2D", (1, 56, 56, 64, 64, 3, 1, 1)),       # N, H, W, CI, CO, kernel, stride, pad
    "C2D-14x256": ("C2D", (1, 14, 14, 256, 256, 3, 1, 1)),
    "C2D-224x3": ("C2D", (1, 224, 224, 3, 64, 7, 2, 3)),
    "DEP-112x32": ("DEP", (1, 112, 112, 32, 3, 1, 1)),        # N, H, W, C, kernel, stride, pad
    "DEP-112x64s2": ("DEP", (1, 112, 112, 64, 3, 2, 1)),
    "softmax-1024": ("softmax", (1024, 1024)),
}


def flops(op: str, shape: tuple) -> float:
    if op == "GMM":
        m, n, k = shape
        return 2.0 * m * n * k
    if op == "C2D":
        n, h, w, ci, co, kk, s, p = shape
        oh, ow = (h + 2 * p - kk) // s + 1, (w + 2 * p - kk) // s + 1
        return 2.0 * n * oh * ow * co * ci * kk * kk
    if op == "DEP":
        n, h, w, c, kk, s, p = shape
        oh, ow = (h + 2 * p - kk) // s + 1, (w + 2 * p - kk) // s + 1
        return 2.0 * n * oh * ow * c * kk * kk
    return math.nan


def time_fn(fn, replays: int = 20, min_replay_seconds: float = 1e-3, max_reps: int = 1000) -> float:
    """Median seconds of one fn() call: graph replays of K calls between CUDA events."""
    import torch
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up off the default stream, as graph capture requires
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        fn()
    end.record()
    end.synchronize()
    once = start.elapsed_time(end) / 5e3
    reps = max(1, min(max_reps, math.ceil(min_replay_seconds / max(once, 1e-7))))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(reps):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(replays):
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / reps)
    del graph
    return statistics.median(times)


def _calls(op: str, shape: tuple, channels_last: bool):
    """fn() running the case on fresh random tensors."""
    import torch
    import torch.nn.functional as F
    dev = "cuda"
    if op == "GMM":
        m, n, k = shape
        a, b = torch.randn(m, k, device=dev), torch.randn(k, n, device=dev)
        c = torch.empty(m, n, device=dev)
        return lambda: torch.mm(a, b, out=c)
    if op == "softmax":
        x = torch.randn(*shape, device=dev)
        return lambda: torch.softmax(x, dim=-1)
    if op == "C2D":
        n, h, w, ci, co, kk, s, p = shape
        x, wt, groups = torch.randn(n, ci, h, w, device=dev), torch.randn(co, ci, kk, kk, device=dev), 1
    else:
        n, h, w, c, kk, s, p = shape
        x, wt, groups = torch.randn(n, c, h, w, device=dev), torch.randn(c, 1, kk, kk, device=dev), c
    if channels_last:
        x, wt = x.to(memory_format=torch.channels_last), wt.to(memory_format=torch.channels_last)
    return lambda: F.conv2d(x, wt, stride=s, padding=p, groups=groups)


def _set_tf32(on: bool) -> None:
    import torch
    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on


def time_torch_case(name: str, shape: tuple | None = None, replays: int = 20) -> dict:
    """One case (a CASES name, or an op "GMM"/"C2D"/"DEP"/"softmax" with its shape): fp32 and TF32 seconds,
    best layout for convolutions, and fp32 GFLOP/s. Leaves TF32 off."""
    import torch
    op, default_shape = CASES.get(name, (name, None))
    shape = tuple(shape or default_shape)
    torch.backends.cudnn.benchmark = True
    layouts = [False, True] if op in ("C2D", "DEP") else [False]
    row = {"name": name, "op": op, "shape": shape}
    for tf32 in (False, True):
        _set_tf32(tf32)
        per_layout = {("channels_last" if cl else "nchw"): time_fn(_calls(op, shape, cl), replays) for cl in layouts}
        best = min(per_layout, key=per_layout.get)
        key = "tf32" if tf32 else "fp32"
        row[f"{key}_seconds"], row[f"{key}_layout"], row[f"{key}_by_layout"] = per_layout[best], best, per_layout
    _set_tf32(False)
    row["fp32_gflops"] = flops(op, shape) / row["fp32_seconds"] / 1e9
    return row


def markdown(rows: list[dict], device: str) -> str:
    lines = [f"PyTorch {__import__('torch').__version__} on {device} (median of graph replays)", "",
             "| case | shape | fp32 us (layout) | fp32 GFLOP/s | TF32 us (layout) |", "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['name']} | {r['shape']} | {r['fp32_seconds'] * 1e6:.1f} ({r['fp32_layout']}) | "
                     f"{r['fp32_gflops']:.0f} | {r['tf32_seconds'] * 1e6:.1f} ({r['tf32_layout']}) |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replays", type=int, default=20)
    ap.add_argument("--cases", nargs="*", default=list(CASES))
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "gpu_peers.json"))
    args = ap.parse_args()
    import torch
    device = torch.cuda.get_device_name()
    rows = [time_torch_case(name, replays=args.replays) for name in args.cases]
    table = markdown(rows, device)
    print(table)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).with_suffix(".md").write_text(table + "\n")
    Path(args.out).write_text(json.dumps({"device": device, "torch": torch.__version__, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
