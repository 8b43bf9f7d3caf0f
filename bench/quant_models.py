"""Quantized corpus models: each float32 model quantized by onnxruntime.quantization (--mode static: QDQ,
uint8 activations, per-channel int8 weights, calibrated on random inputs; --mode dynamic: quantize_dynamic's
MatMulInteger; --format qoperator: static quantization written as QLinearConv and onnxruntime's com.microsoft
QLinearAdd, QLinearGlobalAveragePool, QGemm instead of QDQ nodes), compiled by ansorc, checked against
onnxruntime's run of the same quantized model, and timed alternating in one process against it and against
onnxruntime's float32 run of the float32 model.

    python bench/quant_models.py [--models resnet50 mobilenet_v2] [--mode static] [--format qdq] [--rounds 10]
        [--trials 2000 | --tune-minutes M] [--log-dir D]

Agreement is printed in output quantization steps (static: the scale of the output's DequantizeLinear) or as a
relative L2 error (dynamic, whose outputs are float). The quantized models are cached beside the corpus's.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ansorc.net.profile import alternate, ort_session  # noqa: E402
from bench.corpus_bench import rel_l2, tune_model  # noqa: E402
from tests.corpus import example_inputs, export  # noqa: E402


FORMATS = ("qdq", "qoperator")


def quantized(name: str, mode: str, calibration: int = 8, pre_process: bool = True, fmt: str = "qdq") -> Path:
    from onnxruntime import quantization as q
    src = export(name)
    tag = "" if fmt == "qdq" or mode == "dynamic" else ".qop"   # (quantize_dynamic has one format)
    dst = src.with_name(f"{name}.{mode}{tag}{'' if pre_process else '.raw'}.onnx")
    if dst.exists():
        return dst
    if mode == "dynamic":
        q.quantize_dynamic(str(src), str(dst), weight_type=q.QuantType.QInt8)
        return dst
    feeds = [example_inputs(name, seed=s) for s in range(calibration)]
    pre = src.with_name(f"{name}.pre.onnx")   # shape inference and constant folding first, as ort's docs advise
    if not pre_process:
        pre = src
    elif not pre.exists():   # (the same for every format: made once)
        q.quant_pre_process(str(src), str(pre))

    class Reader(q.CalibrationDataReader):
        def __init__(self):
            self.it = iter(feeds)

        def get_next(self):
            return next(self.it, None)
    quant_format = q.QuantFormat.QOperator if fmt == "qoperator" else q.QuantFormat.QDQ
    q.quantize_static(str(pre), str(dst), Reader(), quant_format=quant_format, per_channel=True,
                      activation_type=q.QuantType.QUInt8, weight_type=q.QuantType.QInt8)
    return dst


def output_step(path: Path) -> float:
    """The scale of the model's first output's DequantizeLinear (0: none): the quantized output's step."""
    import onnx
    from onnx import numpy_helper
    m = onnx.load(str(path))
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    out = m.graph.output[0].name
    dq = [n for n in m.graph.node if n.op_type == "DequantizeLinear" and n.output[0] == out]
    return float(inits[dq[0].input[1]].reshape(-1)[0]) if dq and dq[0].input[1] in inits else 0.0


def _tuned(name: str, mode: str, path: Path, args):
    """The model compiled from its log in --log-dir, tuned first (--trials programs, or --tune-minutes of wall
    time) when that log is not there yet."""
    import ansorc.net
    from ansorc.net.tune import tune_network
    from ansorc.search.tuning import TuneOptions
    if not args.trials:
        return tune_model(f"{name}.{mode}" if args.format == "qdq" else path.stem, path, args.tune_minutes,
                          args.log_dir, {})
    log = Path(args.log_dir) / f"{path.stem}.t{args.trials}.jsonl"
    if not log.exists():
        t0 = time.perf_counter()
        tune_network(str(path), args.trials, str(log), options=TuneOptions(progress=False))
        print(f"{name}: tuned {args.trials} trials in {time.perf_counter() - t0:.0f} s", flush=True)
    return ansorc.net.compile(str(path), trials=0, log=str(log))


def bench(name: str, mode: str, args) -> dict:
    import ansorc.net
    path, fpath = quantized(name, mode, pre_process=not args.no_pre_process, fmt=args.format), export(name)
    feeds = example_inputs(name, seed=100)   # not a calibration input
    sess, fsess = ort_session(str(path), args.threads), ort_session(str(fpath), args.threads)
    want = sess.run(None, feeds)[0]
    model = _tuned(name, mode, path, args) if args.trials or args.tune_minutes else \
        ansorc.net.compile(str(path), trials=0)
    inputs = [feeds[n] for n in model.input_names]
    got = model(*inputs)[0]
    step = output_step(path)
    row = {"model": name, "mode": mode, "format": args.format, "tasks": len(model.tasks)}
    if step:
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64)) / step
        row["steps_max"], row["exact"] = float(diff.max()), float(np.mean(diff < 1e-3))
    row["rel_l2"] = rel_l2(got, want)
    times = alternate({"ours": lambda: model(*inputs), "ort_q": lambda: sess.run(None, feeds),
                       "ort_f32": lambda: fsess.run(None, feeds)}, args.rounds)
    row.update({k + "_ms": round(v * 1e3, 2) for k, v in times.items()})
    row["vs_ort_q"], row["vs_ort_f32"] = times["ort_q"] / times["ours"], times["ort_f32"] / times["ours"]
    model.close()
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=["resnet50", "mobilenet_v2"])
    ap.add_argument("--mode", choices=("static", "dynamic"), default="static")
    ap.add_argument("--format", choices=FORMATS, default="qdq",
                    help="--mode static's output: QDQ nodes, or QOperator ops (QLinearConv, QLinearAdd, ...)")
    ap.add_argument("--no-pre-process", action="store_true",
                    help="quantize the exported model as it is (its biases then stay float)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--trials", type=int, default=0, help="tune this many programs first (a log kept)")
    ap.add_argument("--tune-minutes", type=float, default=0.0)
    ap.add_argument("--log-dir", default="/tmp/quant_logs")
    args = ap.parse_args(argv)
    if args.format == "qoperator" and args.no_pre_process:   # (onnxruntime 1.30; the QDQ quantizer copes)
        ap.error("--format qoperator needs the pre-processing: onnxruntime's QOperator quantizer fails on the "
                 "exported model as it is (a conv bias that is not an initializer)")
    Path(args.log_dir).mkdir(parents=True, exist_ok=True)
    for name in args.models:
        row = bench(name, args.mode, args)
        print(" ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()),
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
