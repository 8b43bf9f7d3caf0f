"""The `ansorc` command on ONNX models: compile, tune, show and profile, called by ansorc/cli.py when the file
given is a model (.onnx). Every error is one line (NetError and the other AnsorcErrors), exit code 2 for bad input."""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from ..cli_checks import check_log, significant
from ..ir.program.te import MAX_ELEMENTS
from .network import NetError

_SHAPE = re.compile(r"^([^=]+)=([0-9]+(?:[x,][0-9]+)*)$", re.ASCII)


def is_model_path(path: str) -> bool:
    return str(path).lower().endswith(".onnx")


def parse_input_shapes(items) -> dict | None:
    """`--input-shape NAME=1x3x224x224` (repeatable) -> {NAME: (1, 3, 224, 224)}."""
    out: dict = {}
    for item in items or ():
        m = _SHAPE.match(item)
        if not m:
            raise NetError(f"--input-shape {item!r}: expected NAME=D1xD2x... with positive integers, "
                           "e.g. input=1x3x224x224")
        name, dims = m.group(1), tuple(int(d) for d in re.split("[x,]", m.group(2)))
        if any(d <= 0 for d in dims):
            raise NetError(f"--input-shape {item!r}: every dimension must be positive")
        if max(dims) > MAX_ELEMENTS:   # (protobuf refuses dims past int64 with a ValueError traceback)
            raise NetError(f"--input-shape {item!r}: a dimension above {MAX_ELEMENTS} (kernels index with 32-bit "
                           "integers)")
        if name in out:
            raise NetError(f"--input-shape {name!r} given twice")
        out[name] = dims
    return out or None


def _model_file(path: str) -> str:
    p = Path(path)
    if not p.is_file():
        raise NetError(f"{path}: no such model file" if not p.exists() else f"{path}: not a file")
    return str(p)


def compile_model(args) -> dict:
    """`ansorc compile model.onnx -o OUT [--trials N --log L]`: tune (optionally), then write the model library."""
    from .api import compile as compile_net
    path = _model_file(args.file)
    shapes = parse_input_shapes(getattr(args, "input_shape", None))
    if args.trials > 0 and not args.log:
        raise NetError("--trials > 0 on a model needs --log (the tuning log, resumable)")
    from ..search.tuning import TuneOptions
    opts = TuneOptions(seed=args.seed, progress=not args.quiet, cost_model=getattr(args, "cost_model", "pretrained"))
    model = compile_net(path, trials=args.trials, log=args.log, input_shapes=shapes, target=args.target,
                        name=args.name or Path(path).stem, options=opts)
    files = model.export(args.output)
    tuned = sum(1 for t in model.tasks if t.schedule == "log")
    return {"name": model.name, "files": {k: str(v) for k, v in files.items()}, "tasks": len(model.tasks),
            "tuned_tasks": tuned}


def tune_model(args) -> dict:
    """`ansorc tune model.onnx --trials N --log L`: tune the model's tasks with the task scheduler."""
    from ..search.tuning import TuneOptions
    from .tune import tune_network
    path = _model_file(args.file)
    shapes = parse_input_shapes(getattr(args, "input_shape", None))
    backend = None
    if getattr(args, "cluster", None):   # measure on a Ray cluster (docs/distributed.md)
        from ..measure.ray_backend import RayBackend
        backend = RayBackend(args.cluster, args.target)
    try:
        run = tune_network(path, args.trials, args.log, input_shapes=shapes, target=args.target,
                           options=TuneOptions(seed=args.seed, progress=not args.quiet,
                                               cost_model=getattr(args, "cost_model", "pretrained")),
                           backend=backend, time_budget=args.minutes * 60 if getattr(args, "minutes", None) else None)
    finally:
        if backend is not None:
            backend.close()
    est = run.estimated_latency
    best = [r.best_gflops for r in run.result.results]
    plot = _latency_plot(run, args.log)
    return {"log": args.log, "trials": sum(r.trials for r in run.result.results),
            "best_gflops": significant(max(best)) if best else 0.0, "tasks": len(run.tasks),
            "estimated_latency_ms": round(est * 1e3, 4) if est < 1e9 else None, "plot": plot,
            "default_faster_in_model": len(run.in_model)}


def _latency_plot(run, log: str) -> str | None:
    """The estimated latency against trials, as a PNG next to the log; None without matplotlib (an optional
    dependency: the dev extra brings it) or without a curve."""
    if not run.result.curve:
        return None
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return None
    from .tune import curve_png
    return curve_png({run.net.name: run.result.curve}, str(Path(log).with_suffix(".latency.png")),
                     title=f"{run.net.name}: estimated end-to-end latency while tuning")


def show_model(args) -> dict:
    """`ansorc show model.onnx [--log L]`: the model's tasks (name, weight, FLOPs, tuned or not)."""
    from .tasks import plan_network, task_table
    from .tune import network_of
    path = _model_file(args.log_or_model)
    net = network_of(path, parse_input_shapes(getattr(args, "input_shape", None)))
    tasks = plan_network(net).tasks
    return {"model": path, "tasks": [{"name": t.name, "weight": t.weight, "flops": t.flops,
                                      "workload_key": t.dag.workload_key} for t in tasks],
            "table": task_table(tasks, getattr(args, "model_log", None))}


def check_png(path: str) -> None:
    """--png names a file in a folder that exists and is writable, checked before the work starts."""
    p = Path(path)
    if p.is_dir():
        raise NetError(f"--png {path}: is a directory (expected a file name, e.g. {p / 'profile.png'})")
    parent = p.parent
    if not parent.is_dir():
        raise NetError(f"--png {path}: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise NetError(f"--png {path}: {parent} is not writable")


def _profile_files(args) -> tuple:
    """(model path, chart path) of `ansorc profile`, each checked before any work."""
    if not is_model_path(args.file):
        raise NetError(f"{args.file}: not an ONNX model (expected a .onnx file)")
    if args.rounds < 1 or args.top < 1:
        raise NetError("--rounds and --top must be >= 1")
    if args.log:
        check_log(args.log, must_exist=True)
    path = _model_file(args.file)
    png = args.png or f"{Path(path).stem}_profile.png"
    check_png(png)
    return path, png


def profile_model(args) -> dict:
    """`ansorc profile model.onnx [--log L]`: compile (trials 0), then time each task inside the model next to
    onnxruntime's nodes (net/profile.py); the terminal table and a PNG bar chart (net/profile_report.py)."""
    from ..codegen.pipeline import resolve_target
    from .api import compile as compile_net
    from .profile import profile, random_inputs
    from .profile_report import chart, table
    from .tune import network_of
    path, png = _profile_files(args)
    note = (lambda msg: None) if args.quiet else (lambda msg: print(f"ansorc: {msg}", file=sys.stderr))
    net = network_of(path, parse_input_shapes(args.input_shape))   # a bad model fails before any progress line
    note(f"compiling {path}" + (f" with the programs of {args.log}" if args.log else " (default programs)"))
    with compile_net(net, trials=0, log=args.log, target=args.target, name=Path(path).stem) as model:
        note(f"timing {args.rounds} profiled runs of the model and of onnxruntime, alternating")
        result = profile(model, path, random_inputs(model), args.rounds, args.log, resolve_target(args.target).name)
    result["file"] = path
    result["png"] = chart(result, png, args.top)
    result["table"] = table(result, args.top)
    return result


__all__ = ["is_model_path", "parse_input_shapes", "compile_model", "tune_model", "show_model", "profile_model"]
