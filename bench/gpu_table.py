"""Side by side on this machine's GPU, in one process: each case's best logged ansorc program against PyTorch
(cuBLAS/cuDNN, fp32 with TF32 off, the faster of NCHW and channels_last), alternating, with the same timing
for both (CUDA graphs of back-to-back calls between events, median over replays); TF32 as its own column.
ansorc's kernels are launched through the driver API on PyTorch's stream and checked against PyTorch's output.

    python bench/gpu_table.py --cases GMM-1024,C2D-56x64,DEP-112x32 --logs data/records/gpu/h200 [--md OUT.md]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpu_cases import CASES, tensors, torch_reference  # noqa: E402
from gpu_peers import flops, time_fn, time_torch_case  # noqa: E402

from ansorc.codegen.pipeline import render  # noqa: E402
from ansorc.ir.program.dag import ComputeDAG  # noqa: E402
from ansorc.ir.schedule.state import replay  # noqa: E402
from ansorc.ir.schedule.steps import steps_from_json  # noqa: E402
from ansorc.targets.cuda.measure_driver import Device  # noqa: E402
from ansorc.targets.cuda.measure_nvcc import build_cuda  # noqa: E402
from ansorc.measure.record import best, load  # noqa: E402


def ansorc_call(dev, case, log, arch, target):
    """(fn launching the best program on PyTorch's current stream, its outputs, its inputs, trials) or None."""
    import torch
    dag = ComputeDAG(tensors(case))
    records = load(log) if Path(log).exists() else []
    top = best(records, dag.workload_key, target)
    if not top:
        return None
    src = render(dag, replay(dag, steps_from_json(top[0].steps)), f"best_{case.replace('-', '_')}", target)
    [res] = build_cuda([src], arch)
    if not res.ok:
        raise RuntimeError(res.error_msg)
    module = dev.load_module(Path(res.lib_path).read_bytes())
    fns = [(dev.function(module, launch.kernel), launch) for launch in src.launches]
    args = [torch.randn(*a.shape, device="cuda") if not a.is_output else torch.empty(*a.shape, device="cuda")
            for a in src.args] + [torch.empty(w.size, device="cuda") for w in src.workspaces]
    ptrs = [t.data_ptr() for t in args]

    def fn(keep=args):   # `keep` holds every buffer (workspaces too) alive as long as fn is
        stream = dev.ffi.cast("CUstream", torch.cuda.current_stream().cuda_stream)
        for f, launch in fns:
            dev.launch(f, launch.grid, launch.block, launch.shared_bytes, stream, [ptrs[i] for i in launch.args])
    n_in = len(src.inputs)
    trials = sum(1 for r in records if r.workload_key == dag.workload_key and r.note != "retime")
    return fn, args[n_in:n_in + len(src.outputs)], args[:n_in], trials


def compare(case, log, dev, arch, target, rounds) -> dict | None:
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    call = ansorc_call(dev, case, log, arch, target)
    if call is None:
        print(f"{case}: no valid record in {log}")
        return None
    fn, outs, ins, trials = call
    fn()
    torch.cuda.synchronize()
    ref = torch_reference(case, ins)
    err = float((outs[0] - ref).norm() / ref.norm())
    peer = CASES[case][2]
    ours, theirs, tf32 = [], [], None
    for _ in range(rounds):   # alternating, so that clocks and the other's state affect both alike
        ours.append(time_fn(fn))
        row = time_torch_case(peer)
        theirs.append(row["fp32_seconds"])
        tf32 = row["tf32_seconds"] if tf32 is None else min(tf32, row["tf32_seconds"])
    us, them = statistics.median(ours), statistics.median(theirs)
    op, shape = CASES[case][0], CASES[case][1]
    fl = flops("GMM", shape[1:]) if op == "gmm" else 5.0 * shape[0] * shape[1] if op == "sfm" \
        else flops(op.upper(), shape)
    out = {"case": case, "trials": trials, "ansorc_us": us * 1e6, "torch_fp32_us": them * 1e6,
           "speedup": them / us, "ansorc_tflops": fl / us / 1e12, "torch_tf32_us": tf32 * 1e6,
           "torch_layout": row["fp32_layout"], "rel_l2_error": err}
    print(json.dumps(out), flush=True)
    return out


def markdown(rows, device) -> str:
    lines = [f"ansorc vs PyTorch {__import__('torch').__version__} on {device}, fp32 (TF32 off unless named), "
             "one process, alternating, median of CUDA-graph replays", "",
             "| case | trials | ansorc us | TFLOP/s | PyTorch fp32 us (layout) | ansorc speedup | PyTorch TF32 us | "
             "rel. L2 error |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['case']} | {r['trials']} | {r['ansorc_us']:.1f} | {r['ansorc_tflops']:.2f} | "
                     f"{r['torch_fp32_us']:.1f} ({r['torch_layout']}) | {r['speedup']:.2f}x | "
                     f"{r['torch_tf32_us']:.1f} | {r['rel_l2_error']:.1e} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="GMM-1024,C2D-56x64,DEP-112x32")
    ap.add_argument("--logs", default="data/records/gpu/h200")
    ap.add_argument("--target", default="cuda")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--md")
    args = ap.parse_args()
    import torch
    torch.cuda.init()
    dev = Device()
    arch = dev.limits()["arch"]
    rows = []
    for case in (c.partition(":")[0] for c in args.cases.split(",")):
        try:
            row = compare(case, str(Path(args.logs) / f"{case.lower()}.jsonl"), dev, arch, args.target, args.rounds)
        except Exception as e:  # one broken case must not hide the others
            print(f"{case}: {type(e).__name__}: {e}")
            row = None
        if row:
            rows.append(row)
    text = markdown(rows, dev.name)
    print(text)
    if args.md:
        Path(args.md).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
