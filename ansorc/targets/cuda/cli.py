"""`ansorc compile --target cuda`: lib<name>.so, <name>.h and <name>.cu (the plug-in's exporter)."""
from __future__ import annotations


def compile_cuda_command(args, prog, name) -> dict:
    """lib<name>.so, <name>.h and <name>.cu: tuned on this machine's GPU (--trials N), the best program of
    --log (--trials 0), or the untuned default GPU program."""
    from ...autotune import NoRecordError
    from ...cli import EXIT_FAILED, CliError
    from ...codegen.pipeline import render
    from ...ir.program.dag import ComputeDAG
    from .codegen_target import CudaTarget
    from .export import export_cuda
    from ...search.tuning import TuneOptions
    from .kernel import cuda_schedule
    dag = ComputeDAG(prog.tensors)
    try:
        state = cuda_schedule(dag, args.trials, args.log, args.target,
                              TuneOptions(seed=args.seed, progress=not args.quiet and args.trials > 0))
    except NoRecordError as e:
        raise CliError(str(e), EXIT_FAILED) from None
    except ValueError as e:   # no GPU to tune on
        raise CliError(str(e).splitlines()[0], EXIT_FAILED) from None
    tgt = CudaTarget.from_name(args.target)
    try:
        paths = export_cuda(render(dag, state, name, tgt), args.output, tgt.arch,
                            f"Workload {dag.workload_key}, target {tgt.name}.")
    except RuntimeError as e:
        raise CliError(str(e).splitlines()[0], EXIT_FAILED) from None
    return {"name": name, "files": {k: str(v) for k, v in paths.items()}, "target": tgt.name,
            "workload_key": dag.workload_key}
