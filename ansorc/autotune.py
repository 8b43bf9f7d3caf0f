"""compile = tune + build the best; apply_best = rebuild the best recorded program by replay."""
from __future__ import annotations

import warnings

from .api import build, build_spec
from .codegen.target import Target
from .targets import plugin
from .errors import AnsorcError
from .ir.program.dag import ComputeDAG
from .ir.schedule.state import replay
from .ir.schedule.steps import steps_from_json
from .measure import record as records_module
from .measure.builder import BuildResult
from .measure.errors import MeasureErrorNo
from .measure.record import load as load_records
from .measure.runner import Runner
from .search.plausible import ImplausibleRecordWarning, claim, gflops, plausible
from .search.task import SearchTask
from .search.tuner import tune
from .search.tuning import TuneOptions, best_logged, default_state, tune_options
from .spec import KernelSpec


OTHERS_NAMED = 3   # other workloads of a log that an error about it names


class NoRecordError(AnsorcError, LookupError):
    """No usable program: the log holds no successful record, or tuning measured none."""


class LogReplayError(NoRecordError):
    """The log's best record of this workload does not replay on it (a log edited, or of another ansorc)."""


class LogFallbackWarning(UserWarning):
    """compile(trials=0, log=...) found a record that does not replay: it builds the default program instead."""


def _provenance(dag, target: str, seconds: float, trials: int | None = None) -> dict:
    out = {"workload key": dag.workload_key, "target": target}
    if trials is not None:
        out["trials"] = trials
    out["measured seconds (median)"] = f"{seconds:.6g}"
    # 4 digits: a tiny kernel is not 0.0; GOP/s for integer work (an int8 GEMM)
    out[dag.rate_unit] = f"{dag.flop_count / seconds / 1e9:.4g}"
    return out


def apply_best(log, tensors, target: str = "native", name: str = "kernel"):
    """The Kernel of the fastest error-free record of this workload in `log` (rebuilt by replaying its steps).
    A DAG with constant inputs falls back on the programs logged for it without them (tuned with the weights
    passed per call): every one of them is valid with constants too."""
    dag = tensors if isinstance(tensors, ComputeDAG) else ComputeDAG(tensors)
    records = load_records(log)
    recs = best_logged(records, dag, target)
    if not recs:
        raise NoRecordError(f"{log}: no successful record for workload {dag.workload_key} on target {target!r}"
                            + _elsewhere(records, dag, target))
    rec = recs[0]
    try:
        state = replay(dag, steps_from_json(rec.steps))
    except (ValueError, KeyError, IndexError, TypeError) as e:  # what net/api.py's _from_log catches too
        why = (str(e).splitlines() or [type(e).__name__])[0]
        raise LogReplayError(f"{log}: the best logged program of workload {dag.workload_key} does not replay "
                             f"({why})") from None
    tgt = Target.from_name(target)
    spec = KernelSpec.of(dag, state, tgt)
    kernel = build_spec(spec, name)
    seconds, prov = rec.median, {}
    if not plausible(dag, tgt, seconds):
        seconds = _retime(kernel, log)
        warnings.warn(f"{claim(log, rec, dag, tgt)} (its best): not believed; re-timed here {seconds:.3g} s "
                      f"({gflops(dag, seconds)} GFLOP/s)", ImplausibleRecordWarning, stacklevel=3)
        prov["logged seconds (above the machine's peak, not believed)"] = f"{rec.median:.6g}"
    prov = {**_provenance(dag, target, seconds), **prov}
    if rec.workload_key != dag.workload_key:
        prov["measured as"] = f"workload {rec.workload_key} (its inputs all passed per call)"
    kernel.spec = spec.with_provenance(prov)
    return kernel


def _retime(kernel, log) -> float:
    """The median seconds of `kernel`, timed as the tuner times candidates (a worker process, random inputs)."""
    with Runner(args=kernel.args) as runner:
        [res] = runner.run([BuildResult(kernel.source_obj, kernel.lib_path, MeasureErrorNo.NO_ERROR, "", 0.0)],
                           early_cut=False)
    if not res.ok:
        raise NoRecordError(f"{log}: re-timing its best program failed: {res.error_msg.splitlines()[0]}")
    return res.median


def _elsewhere(records, dag, target: str) -> str:
    """Why the log serves none of this workload here: its records were measured on another ISA, or they are all of
    other workloads (a user who changed a shape or the expression sees why the log they tuned does not apply)."""
    keys = {dag.workload_key, dag.with_constants(()).workload_key}
    mine = records_module.for_target(target)
    isas = sorted({r.isa for r in records if r.workload_key in keys and r.target == target and r.ok and not mine(r)})
    if isas:
        return f" here (its records were measured on a machine with {', '.join(isas)}; tune it on this one)"
    others: dict = {}   # workload key -> its arguments, where its records name them
    for r in records:
        if r.workload_key not in keys and r.ok:
            others[r.workload_key] = others.get(r.workload_key) or r.signature
    if not others or any(r.workload_key in keys for r in records):
        return ""
    named = [sig for sig in others.values() if sig][:OTHERS_NAMED]
    which = "another workload" if len(others) == 1 else f"{len(others)} other workloads"
    if named:
        which += f" ({'; '.join(named)}{'; ...' if len(others) > len(named) else ''})"
    return (f" (the log's {len(records)} records are of {which}, this one is {dag.signature}: a different shape, "
            "expression or set of constant inputs is a different workload; tune this one first, with trials > 0)")


def compile(tensors, trials: int = 64, log: str | None = None, target: str = "native", seed: int | None = None,
            name: str = "kernel", constants=(), options: TuneOptions | None = None):  # noqa: A001 - the verb
    """Tune for `trials` measured programs (resuming `log`), then build the best program as a Kernel.
    With trials=0 and a log, rebuild the best recorded program without tuning; with trials=0 and no log, build
    the untuned default program (search/default_schedule.py; on "cuda" targets gpu_policy's), not the naive loop
    nest that ansorc.build makes without a schedule. For target "cuda" (or "cuda:sm_80", ...) the result is a
    CudaKernel. `constants`: inputs (tensors or names) whose values stay the same from call to call, such as
    weights; what the kernel computes from them alone (a blocked copy of the weights) it computes once and keeps
    (ir/lowering/prepared.py), and makes again for another array; call Kernel.constants_changed() after changing one in
    place. options: how to tune (a TuneOptions; `seed`, when given, replaces its seed)."""
    dag = tensors if isinstance(tensors, ComputeDAG) else ComputeDAG(tensors)
    if constants:
        dag = dag.with_constants(set(dag.constants) | {getattr(c, "name", c) for c in constants})
    kind = plugin(target)
    if dag.constants and not kind.constants:
        raise AnsorcError(f"constant inputs {sorted(dag.constants)}: not supported on {kind.kind.upper()} targets "
                          "yet")
    return kind.compile(dag, trials, log, target, name, tune_options(options, seed=seed))


def compile_cpu(dag, trials: int, log, target: str, name: str, options: TuneOptions):
    """compile() on a CPU target (its plug-in's kernel loader): a Kernel, with its provenance."""
    if trials <= 0:
        if log is None:
            return build(dag, default_state(SearchTask(dag, target)), target=target, name=name)
        try:
            return apply_best(log, dag, target, name)
        except LogReplayError as e:  # the same as a model compile: one warning naming the log, then the default
            warnings.warn(f"{e}; using the default program", LogFallbackWarning, stacklevel=2)
            return build(dag, default_state(SearchTask(dag, target)), target=target, name=name)
    res = tune(SearchTask(dag, target), trials=trials, log=log, options=options)
    if res.best_state is None:
        raise NoRecordError("tuning measured no valid program; see the log for the errors")
    spec = KernelSpec.of(dag, res.best_state, Target.from_name(target))
    return build_spec(spec.with_provenance(_provenance(dag, target, res.best_seconds, res.trials)), name)
