"""ansorc against TVM MetaSchedule on one corpus model (issue 52): TVM's Relax ONNX frontend, tuned by
MetaSchedule for a wall-time budget, against ansorc's task scheduler tuned for its own budget; both end to end,
2 threads, alternating in one process with onnxruntime (medians), outputs checked against onnxruntime.

    pip install -e '.[tvm]'        # apache-tvm (pinned) and xgboost-cpu, MetaSchedule's cost model
    python bench/tvm_compare.py tune --model resnet18 --minutes 60 --snapshots 10 --work-dir ~/tvm-resnet18
    python bench/corpus_bench.py --models resnet18 --tune-minutes 10 --log-dir ~/corpus-logs
    python bench/tvm_compare.py compare --model resnet18 --work-dir ~/tvm-resnet18 \\
        --ansorc-log ~/corpus-logs/resnet18.jsonl --out bench/results/tvm_resnet18.md

`tune` runs MetaSchedule (gradient task scheduler, XGBoost model, 64 trials a round) in a child process with a
trial budget it cannot reach, copies its database at each snapshot minute and stops it at --minutes: snap_<m>/
holds the records measured in the first m minutes. `compare` applies each snapshot to the legalized module as
TVM's static-shape tuning pipeline does, builds it, and times it beside ansorc and onnxruntime.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.corpus import example_inputs, export  # noqa: E402

DB_FILES = ("database_workload.json", "database_tuning_record.json")


def tvm_target(threads: int):
    """The host as LLVM sees it (its CPU name and features), `threads` cores."""
    import tvm
    from tvm.target import codegen
    cpu = codegen.llvm_get_system_cpu()
    return tvm.target.Target({"kind": "llvm", "mcpu": cpu, "num-cores": threads})


def relax_module(name: str):
    """The corpus model through TVM's Relax ONNX frontend, weights bound as constants."""
    import onnx
    from tvm.relax.frontend.onnx import from_onnx
    return from_onnx(onnx.load(str(export(name))), keep_params_in_input=False)


def legalized(mod, target):
    """TVM's static-shape tuning pipeline up to the tuning: ops legalized to TIR and fused, the tasks' form."""
    import tvm
    from tvm import relax
    from tvm.relax import transform
    with target:
        return tvm.transform.Sequential([transform.DecomposeOpsForInference(), transform.CanonicalizeBindings(),
                                         relax.pipeline.zero_pipeline()])(mod)


def tune_child(args) -> int:
    from tvm.s_tir import meta_schedule as ms
    target = tvm_target(args.threads)
    ms.relax_integration.tune_relax(legalized(relax_module(args.model), target), {}, target, args.work_dir,
                                    max_trials_global=1_000_000)
    return 0


def tune(args) -> int:
    """MetaSchedule for --minutes of wall time; snap_<m>/ holds the database at each snapshot minute and the end."""
    work = Path(args.work_dir).expanduser()
    work.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, __file__, "_tune_child", "--model", args.model, "--work-dir", str(work),
           "--threads", str(args.threads)]
    env = dict(os.environ, TVM_NUM_THREADS=str(args.threads))
    start = time.perf_counter()
    with open(work / "tune.log", "w") as out:
        child = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        marks = sorted({m for m in args.snapshots if m < args.minutes} | {args.minutes})
        for m in marks:
            while time.perf_counter() - start < 60 * m and child.poll() is None:
                time.sleep(1)
            snapshot(work, m)
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)   # its builder and runner pools too
            child.wait()
    print(json.dumps({"work_dir": str(work), "minutes": args.minutes, "snapshots": marks,
                      "records": {m: records(work / f"snap_{m:g}") for m in marks}}))
    return 0


def snapshot(work: Path, minute: float) -> None:
    snap = work / f"snap_{minute:g}"
    snap.mkdir(exist_ok=True)
    for f in DB_FILES:
        if (work / f).exists():
            shutil.copy(work / f, snap / f)
    (snap / "records").write_text(str(records(snap)))


def records(snap: Path) -> int:
    f = snap / DB_FILES[1]
    return sum(1 for _ in open(f)) if f.exists() else 0


def tvm_runner(mod, target, work_dir: str, feeds: dict):
    """A callable running the model built from one snapshot: the legalized module (the tasks' form) with the
    database's programs applied, as TVM's static-shape tuning pipeline does, then built; and its first output."""
    import tvm
    from tvm import relax
    from tvm.s_tir import meta_schedule as ms
    database = ms.database.JSONDatabase(*(str(Path(work_dir) / f) for f in DB_FILES))
    with target, database, tvm.transform.PassContext(opt_level=3):
        applied = relax.transform.MetaScheduleApplyDatabase(enable_warning=False)(mod)
        vm = relax.VirtualMachine(tvm.compile(applied, target=target), tvm.cpu())
    args = [tvm.runtime.tensor(v) for v in feeds.values()]

    def run():
        return vm["main"](*args)
    out = run()
    return run, (out if hasattr(out, "numpy") else out[0]).numpy()


def compare(args) -> int:
    import ansorc.net
    from ansorc.net.profile import alternate, ort_session
    os.environ.setdefault("TVM_NUM_THREADS", str(args.threads))
    # TVM pins the calling thread to a core unless told not to, and the threads ansorc's pool starts later
    # inherit that one core
    os.environ.setdefault("TVM_BIND_THREADS", "0")
    # and its idle pool threads spin on those cores after each call (onnxruntime's are told not to spin)
    os.environ.setdefault("TVM_THREAD_POOL_SPIN_COUNT", "0")
    path, feeds = export(args.model), example_inputs(args.model)
    sess = ort_session(str(path), args.threads)
    want = sess.run(None, feeds)[0]
    fns, errors = {"onnxruntime": lambda: sess.run(None, feeds)}, {}
    for log in args.ansorc_log:   # each log's programs: "ansorc" alone, else "ansorc <file stem>"
        key = "ansorc" if len(args.ansorc_log) == 1 else f"ansorc {Path(log).stem}"
        model = ansorc.net.compile(str(path), trials=0, log=log)
        fns[key] = lambda m=model: m(*feeds.values())
        ours = model(*feeds.values())
        errors[key] = rel_l2(ours[0] if isinstance(ours, (list, tuple)) else ours, want)
    target = tvm_target(args.threads)
    mod = legalized(relax_module(args.model), target)
    work = Path(args.work_dir).expanduser()
    snaps = sorted((p for p in work.glob("snap_*")), key=lambda p: float(p.name[5:]))
    counts = {}
    for snap in snaps:
        key = f"tvm {snap.name[5:]} min"
        fns[key], got = tvm_runner(mod, target, str(snap), feeds)
        errors[key], counts[key] = rel_l2(got, want), records(snap)
    times = alternate(fns, args.rounds, gap=0.1)   # TVM's pool threads spin a while after a call
    print(json.dumps({"ms": {k: round(1e3 * v, 3) for k, v in times.items()}, "rel_l2": errors,
                      "tvm_records": counts}))
    if args.out:
        write_table(args, times, errors, counts)
    return 0


def rel_l2(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def write_table(args, times: dict, errors: dict, counts: dict) -> None:
    ours = min(v for k, v in times.items() if k.startswith("ansorc"))
    lines = [f"# {args.model}: ansorc against TVM MetaSchedule", "",
             f"{args.threads} threads, end to end, {args.rounds} alternating rounds in one process, medians; "
             f"ansorc's programs from {', '.join(f'`{Path(g).name}`' for g in args.ansorc_log)}; TVM "
             f"{tvm_version()} snapshots of one MetaSchedule run. Ratio: that contender's time / the best ansorc "
             "row's.", "",
             "| contender | ms | ratio | MetaSchedule records | rel. L2 vs onnxruntime |",
             "| --- | --- | --- | --- | --- |"]
    for k, v in times.items():
        lines.append(f"| {k} | {1e3 * v:.2f} | {v / ours:.2f} | {counts.get(k, '')} | "
                     f"{errors.get(k, 0.0):.1e} |")
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


def tvm_version() -> str:
    import tvm
    return tvm.__version__


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("command", choices=("tune", "compare", "_tune_child"))
    p.add_argument("--model", default="resnet18")
    p.add_argument("--work-dir", required=True, help="MetaSchedule's database and snapshots")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--minutes", type=float, default=60.0)
    p.add_argument("--snapshots", type=float, nargs="*", default=[10.0], help="minutes at which to copy the database")
    p.add_argument("--ansorc-log", nargs="+", help="ansorc's tuning logs of the model (compare): a row each")
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--out", help="markdown table (compare)")
    a = p.parse_args(argv)
    if a.command == "compare" and not a.ansorc_log:
        p.error("compare needs --ansorc-log")
    return {"tune": tune, "compare": compare, "_tune_child": tune_child}[a.command](a)


if __name__ == "__main__":
    sys.exit(main())
