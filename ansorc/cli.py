"""The `ansorc` command: compile / tune / show / profile.

Exit codes scripts can rely on: 0 success, 1 the work failed (no valid program, build error),
2 bad input (command line, expression file, log), 130 interrupted.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import sys
import warnings
from pathlib import Path

from .cli_train import add_cost_model_option, add_parsers as add_train_parsers, check_cost_model, cmd_train, \
    print_train
from .cli_checks import (CliError, check_compiler, check_kernel_name, check_log, check_output_dir, gflops_text,
                         printable, significant)
from .errors import AnsorcError
from .targets import known_names

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130
TARGETS = known_names()   # every target plug-in's names (ansorc/targets/)
TRIALS_PER_MINUTE = 120   # sizes the rounds of a --minutes run: about what a 2-core machine measures a minute


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line (argparse prints the whole usage first); subcommand parsers are of this class too."""

    def error(self, message: str):
        raise CliError(f"{printable(message)} (see '{self.prog} --help')")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="ansorc", description="Compile and auto-tune tensor expressions (Ansor design).")
    sub = p.add_subparsers(dest="command", required=True)

    def common(sp, need_log: bool):
        sp.add_argument("file", help="expression file (.te) or ONNX model (.onnx)")
        sp.add_argument("--trials", type=int, default=None,
                        help="measured programs in all, the log's included (default 64; for an ONNX model "
                             "compile, 0: untuned)")
        sp.add_argument("--log", required=need_log, help="tuning log (JSON lines); resumed if it exists")
        sp.add_argument("--target", choices=TARGETS, default="native")
        sp.add_argument("--arch", help="GPU architecture for --target cuda (sm_80, sm_90, ...; default sm_90)")
        sp.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=VALUE",
                        help="override a size parameter of the file")
        sp.add_argument("--seed", type=int, default=0)
        sp.add_argument("--cc", help="C compiler for the kernels: gcc (default) or clang; default $CC")
        sp.add_argument("--quiet", action="store_true", help="no progress display")
        sp.add_argument("--input-shape", dest="input_shape", action="append", default=[], metavar="NAME=1x3x224x224",
                        help="static shape of a model input whose shape the .onnx file leaves open")
        sp.add_argument("--json", action="store_true", help="print one JSON object with the result")
        sp.add_argument("--constant", dest="constants", action="append", default=[], metavar="NAME",
                        help="an input of the expression file whose values stay the same from call to call "
                             "(weights): what the kernel computes from it alone is made once and kept")
        add_cost_model_option(sp)

    c = sub.add_parser("compile", help="tune (optionally) and write lib<name>.so, <name>.h, <name>.c")
    common(c, need_log=False)
    c.add_argument("-o", "--output", required=True, help="output directory")
    c.add_argument("--name", help="kernel name (a C identifier; default: the file's stem)")
    t = sub.add_parser("tune", help="tune and append the measurements to the log")
    common(t, need_log=True)
    t.add_argument("--minutes", type=float, default=None,
                   help="an ONNX model: finish within this much wall time, import and final re-timing included "
                        "(default --trials: minutes x 120, what this 2-core class of machine measures in that "
                        "time, to size rounds)")
    t.add_argument("--cluster", metavar="ADDRESS", help="measure on a Ray cluster: ray://HOST:PORT, HOST:PORT or "
                   "auto (docs/distributed.md)")
    s = sub.add_parser("show", help="best program per workload in a log, or the tasks of an ONNX model")
    s.add_argument("log", help="tuning log, or an ONNX model (.onnx)")
    s.add_argument("--log", dest="model_log", help="with a model: the log that says which tasks are tuned")
    s.add_argument("--input-shape", dest="input_shape", action="append", default=[], metavar="NAME=1x3x224x224")
    s.add_argument("--json", action="store_true")
    _profile_parser(sub)
    add_train_parsers(sub)
    return p


def _profile_parser(sub) -> None:
    pr = sub.add_parser("profile", help="where an ONNX model's time goes: per task, beside onnxruntime's nodes")
    pr.add_argument("file", help="ONNX model (.onnx)")
    pr.add_argument("--log", help="tuning log: run its best programs (default programs without)")
    pr.add_argument("--input-shape", dest="input_shape", action="append", default=[], metavar="NAME=1x3x224x224")
    pr.add_argument("--rounds", type=int, default=10, help="profiled runs of each (default 10)")
    pr.add_argument("--top", type=int, default=15, help="rows per table and chart (default 15)")
    pr.add_argument("--png", help="the bar chart's file (default <model>_profile.png here)")
    pr.add_argument("--target", choices=TARGETS, default="native")
    pr.add_argument("--quiet", action="store_true", help="no progress lines")
    pr.add_argument("--json", action="store_true", help="print one JSON object with the result")


def _load_program(args):
    from .frontend import TeError, load, parse_defines
    try:
        prog = load(args.file, parse_defines(args.defines))
    except TeError as e:
        raise CliError(str(e)) from None
    except OSError as e:
        raise CliError(f"{args.file}: {e.strerror or e}") from None
    if args.trials > 0:   # the numpy reference of every target is computed in host memory
        from .ir.program.dag import ComputeDAG
        from .measure.memory import NotEnoughMemoryError, check_fits
        try:
            check_fits(ComputeDAG(prog.tensors))
        except NotEnoughMemoryError as e:
            raise CliError(str(e)) from None
    return prog


def _dag(args, prog):
    """The program's ComputeDAG with the --constant inputs declared."""
    from .ir.program.dag import ComputeDAG, DagError
    try:
        return ComputeDAG(prog.tensors, args.constants)
    except DagError as e:
        raise CliError(f"--constant: {e}") from None


def _target_name(args) -> str:
    """--target, with --arch folded in for CUDA ("cuda:sm_80")."""
    if not args.arch:
        return args.target
    from .targets import parse
    try:
        return parse(f"{args.target}:{args.arch}").name
    except ValueError as e:
        raise CliError(f"--arch {args.arch}: {e} (--arch is only for --target cuda)") from None


def _check_target(target: str):
    if target not in ("native",):
        try:
            from .codegen.target import Target
            Target.from_name(target)
        except Exception as e:  # noqa: BLE001 - a clear message beats a traceback
            raise CliError(f"--target {target}: not available here ({e})", EXIT_FAILED) from None


def _model_command(fn, args) -> dict:
    """A command on an ONNX model (ansorc/net/cli.py): its NetErrors are bad input (exit 2)."""
    from .net.network import NetError
    try:
        return fn(args)
    except NetError as e:
        raise CliError((str(e).splitlines() or ["bad model"])[0]) from None


def cmd_compile(args) -> dict:
    from .net.cli import compile_model, is_model_path
    if args.trials is None:
        args.trials = 0 if is_model_path(args.file) else 64
    if args.trials < 0:
        raise CliError("--trials must be >= 0")
    args.target = _target_name(args)   # --arch applies to models too
    if is_model_path(args.file):
        _no_constants(args)
        check_output_dir(args.output)
        if args.log:
            check_log(args.log, writes=args.trials > 0)
        return _model_command(compile_model, args)
    from .ir.program.names import c_ident
    name = args.name or c_ident(Path(args.file).stem)
    check_kernel_name(name)
    check_output_dir(args.output)
    if args.log:
        check_log(args.log, writes=args.trials > 0)
    prog = _load_program(args)
    _check_target(args.target)
    from .targets import plugin
    kind = plugin(args.target)
    if args.constants and not kind.constants:
        raise CliError(f"--constant: not supported on {kind.kind.upper()} targets yet")
    return kind.cli_compile(args, prog, name)


def compile_cpu_command(args, prog, name: str) -> dict:
    """`ansorc compile` on a CPU target (its plug-in's exporter): lib<name>.so and <name>.h."""
    from .autotune import NoRecordError, compile as compile_kernel
    from .search.tuning import TuneOptions
    from .codegen.target import Target
    from .export import export
    tgt = Target.from_name(args.target)
    if not tgt.runs_here():
        return _cross_compile(args, prog, name, tgt)
    try:
        kern = compile_kernel(_dag(args, prog), trials=args.trials, log=args.log, target=args.target, seed=args.seed,
                              name=name, options=TuneOptions(progress=not args.quiet and args.trials > 0,
                                                             cost_model=args.cost_model))
    except NoRecordError as e:
        raise CliError(str(e), EXIT_FAILED) from None
    spec = kern.spec.with_expression(prog.text)
    paths = export(spec, args.output, name)
    return {"name": name, "files": paths, **{k.replace(" ", "_"): v for k, v in spec.provenance_dict.items()}}


def _cross_compile(args, prog, name, tgt) -> dict:
    """A target this machine cannot run (e.g. neon on x86): no tuning here; export the best logged program (or
    the untuned default one) built with the target's cross compiler."""
    from .export import ExportError, export
    from .ir.schedule.state import replay
    from .ir.schedule.steps import steps_from_json
    from .measure.record import load
    from .search.task import SearchTask
    from .search.tuning import best_logged, default_state
    from .spec import KernelSpec
    if args.trials > 0:
        raise CliError(f"--target {args.target}: cannot be measured on this machine; tune on the target and "
                       "pass its log with --trials 0 to cross-compile here", EXIT_FAILED)
    dag = _dag(args, prog)
    recs = best_logged(load(args.log), dag, args.target) if args.log else []
    schedule = replay(dag, steps_from_json(recs[0].steps)) if recs else default_state(SearchTask(dag, args.target))
    untuned = "untuned (default program)" if schedule is not None else "untuned (naive loop nest)"
    prov = {"target": f"{tgt.name} ({tgt.isa}, {tgt.arch})", "workload key": dag.workload_key,
            "schedule": "best logged" if recs else untuned}
    try:
        spec = KernelSpec.of(dag, schedule, tgt).with_provenance(prov).with_expression(prog.text)
        paths = export(spec, args.output, name)
    except ExportError as e:
        raise CliError(str(e).splitlines()[0], EXIT_FAILED) from None
    return {"name": name, "files": paths, **{k.replace(" ", "_"): v for k, v in prov.items()}}


def _no_constants(args) -> None:
    if args.constants:
        raise CliError("--constant applies to expression files; a model's weights are its initializers")


def cmd_tune(args) -> dict:
    from .net.cli import is_model_path, tune_model
    from .search.task import SearchTask
    from .search.tuner import TuneOptions, tune
    check_log(args.log, writes=True)
    if args.minutes is not None and not (math.isfinite(args.minutes) and args.minutes > 0):
        raise CliError(f"--minutes must be a positive number, got {args.minutes:g}")
    if args.minutes is not None and not is_model_path(args.file):
        raise CliError("--minutes applies to ONNX models (the task scheduler); give a .te file --trials")
    args.trials = (64 if args.minutes is None else max(64, round(args.minutes * TRIALS_PER_MINUTE))) \
        if args.trials is None else args.trials
    if args.trials < 1:
        raise CliError("--trials must be >= 1 for tune")
    args.target = _target_name(args)
    if is_model_path(args.file):
        _no_constants(args)
        return _model_command(tune_model, args)
    prog = _load_program(args)
    _check_target(args.target)
    backend = None
    if args.cluster:   # ClusterError (an AnsorcError) reaches the user as one line
        from .measure.ray_backend import RayBackend
        backend = RayBackend(args.cluster, args.target)
    dag = _dag(args, prog)
    try:
        res = tune(SearchTask(dag, args.target), trials=args.trials, log=args.log,
                   options=TuneOptions(seed=args.seed, progress=not args.quiet, cost_model=args.cost_model),
                   backend=backend)
    finally:
        if backend is not None:
            backend.close()
    if res.best_state is None:
        raise CliError("no valid program was measured; see the log for the errors", EXIT_FAILED)
    return {"log": args.log, "trials": res.trials, "best_seconds": res.best_seconds,
            "best_gflops": significant(res.best_gflops), "unit": dag.rate_unit}


def cmd_show(args) -> dict:
    from .measure.record import RETIME_NOTE, best, load
    from .net.cli import is_model_path, show_model
    if is_model_path(args.log):
        args.log_or_model = args.log
        if args.model_log:
            check_log(args.model_log, must_exist=True)
        return _model_command(show_model, args)
    if args.model_log:
        raise CliError("show --log is for a model: ansorc show model.onnx --log tuning.jsonl")
    check_log(args.log, must_exist=True)
    rows: dict = {}
    records = load(args.log)
    for r in records:
        row = rows.setdefault((r.workload_key, r.target), {"workload_key": r.workload_key, "target": r.target,
                                                          "trials": 0, "errors": 0, "best_seconds": math.inf,
                                                          "flop": r.flop, "signature": ""})
        row["signature"] = row["signature"] or r.signature
        if r.note == RETIME_NOTE:  # a re-timing of a program already counted
            continue
        row["trials"] += 1
        if not r.ok:
            row["errors"] += 1
    for (wk, target), row in rows.items():
        top = best(records, wk, target)
        if top:
            row["best_seconds"] = top[0].median
            row["implausible"] = _implausible(args.log, top[0], row["flop"])
    out = []
    for row in rows.values():
        ok = math.isfinite(row["best_seconds"]) and not row.get("implausible")
        row["best_gflops"] = significant(row["flop"] / row["best_seconds"] / 1e9) if ok and row["flop"] else None
        row["unit"] = rate_unit_of(row["signature"])
        row["best_seconds"] = row["best_seconds"] if ok else None
        out.append(row)
    return {"workloads": out}


def cmd_profile(args) -> dict:
    from .net.cli import profile_model
    return _model_command(profile_model, args)


def rate_unit_of(signature: str) -> str:
    """A logged workload's rate unit from its signature ("A[8,8]:uint8 B[8,8]:int8 const -> C[8,8]:int32"):
    GOP/s where every argument is an integer, as ComputeDAG.rate_unit says of an int8 GEMM; else GFLOP/s."""
    dtypes = re.findall(r"\[[^\]]*\](?::([a-z0-9]+))?", signature or "")   # float32 is left unwritten: ""
    return "GOP/s" if dtypes and all(d.startswith(("int", "uint", "bool")) for d in dtypes) else "GFLOP/s"


def _implausible(log, rec, flop) -> bool:
    """Whether the best record claims more than this machine could do (search/plausible.py); warns, naming it."""
    import warnings

    from .search.plausible import ImplausibleRecordWarning, cpu_target, line_of
    try:
        tgt = cpu_target(rec.target)
    except (AnsorcError, ValueError, KeyError):   # a target this ansorc does not know: no bound to hold it to
        return False
    if tgt is None or not flop:   # a GPU target, or a record without its flop count: no bound to hold it to
        return False
    bound = tgt.peak_flops_bound(1)   # lanes of one byte, the most: the record does not say its dtypes
    if rec.median > 0 and flop / rec.median <= bound:
        return False
    warnings.warn(f"{log}:{line_of(log, rec)}: the best record of workload {printable(rec.workload_key)} claims "
                  f"{rec.median:.3g} s, above this machine's bound of {bound / 1e9:.4g} GFLOP/s: not believed "
                  "(no GFLOP/s shown)", ImplausibleRecordWarning, stacklevel=2)
    return True


def _print_human(command: str, result: dict) -> None:
    if command == "train-cost-model":
        print_train(result)
    elif command in ("show", "profile") and "table" in result:
        print(result["table"])
    elif command == "show":
        print(f"{'workload':34} {'target':8} {'trials':>6} {'errors':>6} {'best ms':>9} {'rate':>14}  arguments")
        for r in result["workloads"]:
            ms = f"{r['best_seconds'] * 1e3:.3f}" if r["best_seconds"] else "-"
            gf = f"{gflops_text(r['best_gflops'])} {r['unit']}" if r["best_gflops"] else "-"
            wk, target = printable(r["workload_key"]), printable(r["target"])  # a log may hold escape sequences
            sig = printable(r["signature"]) or "-"   # "-": a log written before records named their arguments
            print(f"{wk:34} {target:8} {r['trials']:6d} {r['errors']:6d} {ms:>9} {gf:>14}  {sig}")
    elif command == "compile":
        print(f"wrote {', '.join(result['files'].values())}")
        if "tasks" in result:
            print(f"{result['tuned_tasks']} of {result['tasks']} tasks ran a tuned program from the log")
        for unit in ("GFLOP/s", "GOP/s"):   # the provenance's rate, in the kernel's own unit (autotune.py)
            if unit in result:
                print(f"best: {result[unit]} {unit}")
    elif "estimated_latency_ms" in result:
        print(f"{result['trials']} trials over {result['tasks']} tasks in {result['log']}; estimated latency "
              f"{result['estimated_latency_ms']} ms")
    else:
        print(f"{result['trials']} trials in {result['log']}; best {result['best_gflops']} "
              f"{result.get('unit', 'GFLOP/s')}")


@contextlib.contextmanager
def _compiler(cc: str | None):
    """--cc for the command's duration, through $CC (what Target.from_name reads); $CC itself is checked too."""
    cc = check_compiler(cc)
    old = os.environ.get("CC")
    if cc:
        os.environ["CC"] = cc
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("CC", None)
        else:
            os.environ["CC"] = old


def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning as the user's one line: no Python file path, no source line (warnings.showwarning's signature)."""
    print(f"ansorc: warning: {printable((str(message).splitlines() or [category.__name__])[0])}", file=sys.stderr)


def main(argv=None) -> int:
    with warnings.catch_warnings():   # (restores the caller's warnings.showwarning: main() is called in tests)
        warnings.showwarning = _one_line_warning
        return _main(argv)


def _main(argv) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse: 0 for --help
        return int(e.code or 0)
    except CliError as e:
        print(f"ansorc: error: {e}", file=sys.stderr)
        return e.code
    try:
        if getattr(args, "cost_model", None):
            args.cost_model = check_cost_model(args.cost_model)
        with _compiler(getattr(args, "cc", None)):
            result = {"compile": cmd_compile, "tune": cmd_tune, "show": cmd_show, "profile": cmd_profile,
                      "train-cost-model": cmd_train}[args.command](args)
    except CliError as e:
        print(f"ansorc: error: {e}", file=sys.stderr)
        return e.code
    except AnsorcError as e:  # any other error ansorc raises for its input or a failed build: one line
        print(f"ansorc: error: {(str(e).splitlines() or [type(e).__name__])[0]}", file=sys.stderr)
        return EXIT_FAILED
    except OSError as e:  # a file the work writes (disk full, permissions changed meanwhile): one line
        print(f"ansorc: error: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("ansorc: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    if args.json:
        print(json.dumps(result, default=str))
    else:
        _print_human(args.command, result)
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
