"""Whole networks on the GPU: PyTorch models exported to ONNX, compiled by ansorc for CUDA, checked against
PyTorch and timed side by side with it in one process (alternating, medians), fp32 with TF32 off, batch 1.

    python bench/gpu_net.py --models resnet50,mobilenet_v2,bert_base --logs bench/results/gpu/h200 \
        --tune-seconds 0 --md table.md

Each model runs from its log (`<logs>/<model>.jsonl`) where one exists, else the default GPU programs; with
--tune-seconds S the model's tasks are tuned for about S seconds first (the task scheduler, resuming the log).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


class TimeUp(Exception):
    pass


def torch_model(name: str):
    """(module, example inputs) with random weights, eval mode."""
    import torch
    torch.manual_seed(0)
    if name in ("resnet50", "mobilenet_v2", "resnet18"):
        import torchvision
        return getattr(torchvision.models, name)(weights=None).eval(), (torch.randn(1, 3, 224, 224),)
    if name == "bert_base":
        from transformers import BertConfig, BertModel
        cfg = BertConfig()
        model = BertModel(cfg, add_pooling_layer=False).eval()
        ids = torch.randint(0, cfg.vocab_size, (1, 128))
        return model, (ids, torch.ones(1, 128, dtype=torch.int64))
    raise SystemExit(f"unknown model {name}")


def export(name: str, module, inputs, path: Path) -> None:
    import torch
    names = ["input_ids", "attention_mask"] if name == "bert_base" else ["x"]
    try:
        torch.onnx.export(module, inputs, str(path), opset_version=17, dynamo=False, input_names=names)
    except Exception as e:  # noqa: BLE001 - the other exporter
        print(f"  {name}: TorchScript exporter failed ({type(e).__name__}: {str(e)[:200]}); trying dynamo", flush=True)
        torch.onnx.export(module, inputs, str(path), opset_version=18, dynamo=True, input_names=names)


def tune(path: Path, log: Path, seconds: float) -> None:
    from ansorc.net.tune import tune_network
    from ansorc.search.tuning import TuneOptions
    t0 = time.time()

    def stop(_scheduler, _task):
        if time.time() - t0 > seconds:
            raise TimeUp

    try:
        tune_network(str(path), 100000, str(log), target="cuda", on_round=stop,
                     options=TuneOptions(per_round=16, retime_top=0, progress=False))
    except TimeUp:
        pass
    print(f"  tuned {time.time() - t0:.0f} s", flush=True)


def median_ms(fn, sync, reps: int) -> float:
    fn()
    sync()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        sync()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e3


def run_model(name: str, args, work: Path) -> dict:
    import numpy as np
    import torch
    import ansorc.net
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    module, inputs = torch_model(name)
    path = work / f"{name}.onnx"
    t0 = time.time()
    export(name, module, inputs, path)
    row = {"model": name, "export_s": round(time.time() - t0, 1)}
    log = Path(args.logs) / f"{name}.jsonl"
    if args.tune_seconds > 0:
        tune(path, log, args.tune_seconds)
    t0 = time.time()
    model = ansorc.net.compile(str(path), target="cuda", log=str(log) if log.exists() else None)
    row["compile_s"] = round(time.time() - t0, 1)
    row["tuned_tasks"] = sum(t.schedule == "log" for t in model.tasks)
    row["tasks"] = len(model.tasks)
    row["groups"] = model.signature["groups"]
    row["launches"] = model.signature["launches"]
    dev = [x.cuda() for x in inputs]
    module = module.cuda()
    with torch.no_grad():
        ref = module(*dev)
        ref = ref if isinstance(ref, torch.Tensor) else ref[0]
        out = model(*dev)
        got = out[0]
        host = model(*[x.numpy() for x in inputs])[0]
        err = (got.float() - ref.float()).norm().item() / max(ref.float().norm().item(), 1e-30)
        row["rel_l2"] = float(f"{err:.2e}")
        row["host_matches_device"] = bool(np.allclose(host, got.cpu().numpy(), rtol=1e-5, atol=1e-6))
        sync = torch.cuda.synchronize
        ours, theirs = [], []
        for _ in range(args.rounds):   # alternating
            ours.append(median_ms(lambda: model(*dev, out=out), sync, args.reps))
            theirs.append(median_ms(lambda: module(*dev), sync, args.reps))
    row["ansorc_ms"] = round(statistics.median(ours), 3)
    row["torch_ms"] = round(statistics.median(theirs), 3)
    row["speedup"] = round(row["torch_ms"] / row["ansorc_ms"], 3)
    print(json.dumps(row), flush=True)
    return row


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="resnet50,mobilenet_v2,bert_base")
    ap.add_argument("--logs", default="bench/results/gpu/h200")
    ap.add_argument("--tune-seconds", type=float, default=0.0)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--work", default="/tmp/gpu_net")
    ap.add_argument("--md")
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    Path(args.logs).mkdir(parents=True, exist_ok=True)
    rows = []
    for name in args.models.split(","):
        try:
            rows.append(run_model(name, args, work))
        except Exception as e:  # noqa: BLE001 - report and go on with the next model
            import traceback
            traceback.print_exc(limit=4)
            rows.append({"model": name, "error": f"{type(e).__name__}: {str(e)[:300]}"})
            print(json.dumps(rows[-1]), flush=True)
    if args.md:
        import torch
        head = (f"ansorc (CUDA, one graph per run) vs PyTorch {torch.__version__} eager on "
                f"{torch.cuda.get_device_name()}, fp32, TF32 off, batch 1, one process, alternating, medians\n\n")
        cols = ["model", "tasks", "tuned_tasks", "launches", "ansorc_ms", "torch_ms", "speedup", "rel_l2", "error"]
        lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        lines += ["| " + " | ".join(str(r.get(c, "")) for c in cols) + " |" for r in rows]
        Path(args.md).write_text(head + "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
