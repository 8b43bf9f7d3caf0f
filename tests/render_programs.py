"""Programs whose generated C the golden tests pin (tests/unit/test_render_fingerprints.py).

Fingerprints: a SHA-256 per rendered program, for many programs: for every benchmark operator in ansorc.workloads
(its first listed shape), programs sampled with a fixed seed; and the best programs of the logs in
tests/golden/records/render/. Golden C: the full text of a handful of them, one per kind of program, so that a
change shows how the C changed. All are rendered for "avx512" through ansorc.codegen.pipeline.render. The search
task's core count is fixed (2): the sampler's parallel and rfactor choices read it, and the C must not depend on the
machine.
"""
from __future__ import annotations

import dataclasses
import hashlib
import sys
from pathlib import Path

LOGS = Path(__file__).resolve().parent / "golden" / "records" / "render"

TARGET = "avx512"
NUM_CORES = 2
SAMPLES = 20
LOG_BEST = 8
LOG_SHAPES = {"C2D": (1, 56, 56, 64, 64, 3, 1, 1)}  # shapes of the committed logs not listed first in WORKLOADS


def _task(tensors):
    from ansorc.search.task import SearchTask, hardware_params
    return SearchTask(tensors, TARGET, dataclasses.replace(hardware_params(TARGET), num_cores=NUM_CORES))


def _code(task, state, name: str) -> str:
    from ansorc.codegen.pipeline import render
    return render(task.dag, state, name, TARGET).code


def _digest(task, state, name: str) -> str:
    return hashlib.sha256(_code(task, state, name).encode()).hexdigest()


def sampled(ops=None) -> dict:
    from ansorc import workloads
    from ansorc.search.annotate import sample
    out = {}
    for op, (fn, shapes) in workloads.WORKLOADS.items():
        if ops is not None and op not in ops:
            continue
        task = _task(fn(*shapes[0]))
        for k, state in enumerate(sample(task, SAMPLES, seed=1000 + k_seed(op))):
            out[f"{op}/sample{k:02d}"] = _digest(task, state, f"{op.lower()}_{k}")
    return out


def k_seed(op: str) -> int:
    """A fixed per-operator seed (not hash(): that varies between processes)."""
    return sum(ord(c) * 31 ** i for i, c in enumerate(op)) % 10007


def _log_paths() -> list:
    return sorted(LOGS.glob("*.jsonl*"))   # the logs are kept gzipped


def _dags() -> dict:
    from ansorc import workloads
    dags = {}
    for op, (fn, shapes) in workloads.WORKLOADS.items():
        for shape in shapes + ([LOG_SHAPES[op]] if op in LOG_SHAPES else []):
            task = _task(fn(*shape))
            dags.setdefault(task.workload_key, (f"{op}{shape}", task))
    return dags


def from_logs(paths=None, dags=None) -> dict:
    from ansorc.ir.schedule.state import replay
    from ansorc.ir.schedule.steps import steps_from_json
    from ansorc.measure.record import best, load
    dags = dags or _dags()
    out = {}
    for path in _log_paths() if paths is None else paths:
        records = load(path)
        for wk, tgt in sorted({(r.workload_key, r.target) for r in records}):
            if wk not in dags:
                print(f"{path.name}: workload {wk} not among the benchmark shapes, skipped", file=sys.stderr)
                continue
            label, task = dags[wk]
            for k, rec in enumerate(best(records, wk, tgt, k=LOG_BEST)):
                state = replay(task.dag, steps_from_json(rec.steps))
                out[f"{path.name.removesuffix('.gz')}/{tgt}/best{k}"] = _digest(task, state, f"best_{k}")
    return out


_FORKED_DAGS: dict = {}   # what forked workers inherit


def _job(job) -> dict:
    kind, what = job
    return sampled([what]) if kind == "sample" else from_logs([what], _FORKED_DAGS)


def fingerprints(workers: int | None = None) -> dict:
    """{name: sha256}; the programs are rendered by `workers` forked processes (default: this machine's cores,
    at most 4), each job one operator's samples or one log."""
    import multiprocessing

    from ansorc import workloads
    from ansorc.measure.affinity import all_process_cpus, process_cpus
    n = workers or min(4, len(process_cpus()) or 1)   # not this thread's mask: OpenMP may have bound it to one CPU
    jobs = [("sample", op) for op in workloads.WORKLOADS] + [("log", p) for p in _log_paths()]
    if n < 2:
        parts = [sampled(), from_logs()]
    else:
        _FORKED_DAGS.update(_dags())
        with all_process_cpus(), multiprocessing.get_context("fork").Pool(n) as pool:   # the workers on every CPU
            parts = pool.map(_job, jobs, chunksize=1)
    out: dict = {}
    for part in parts:
        out.update(part)
    return dict(sorted(out.items()))


# One program per kind of C the code generator writes: (name, operator, where its steps come from): a log under
# tests/golden/records and the rank of its program there, or "sample" and the index of the fixed-seed sample. A rank
# of None takes the first of the log's best programs whose C peels a last tile (a `_tail` copy of the loop nest).
GOLDEN = (("matmul", "GMM", ("render/gmm.jsonl.gz", 0)), ("conv2d", "C2D", ("render/c2d.jsonl.gz", 0)),
          ("depthwise", "DEP", ("render/dep.jsonl.gz", 0)), ("softmax", "SFM", ("sample", 0)),
          ("peeled_dilated", "DIL", ("peel_best.jsonl.gz", None)), ("transposing_copy", "TBG", ("sample", 0)))


def _logged(op: str, source: str, rank):
    """(task, state, rank) of the rank-th best program of `op` in the log (its first benchmark shape there)."""
    from ansorc.ir.schedule.state import replay
    from ansorc.ir.schedule.steps import steps_from_json
    from ansorc.measure.record import best, load
    records = load(LOGS.parent / source)
    keys = {r.workload_key for r in records}
    wk, task = next((wk, t) for wk, (label, t) in _dags().items() if label.startswith(op + "(") and wk in keys)
    ranked = [replay(task.dag, steps_from_json(r.steps)) for r in best(records, wk, "native", k=8)]
    if rank is not None:
        return task, ranked[rank], rank
    k = next(k for k, st in enumerate(ranked) if "_tail" in _code(task, st, f"best_{k}"))
    return task, ranked[k], k


def golden_c() -> dict:
    """{name: generated C} for the GOLDEN programs, each rendered under the name its fingerprint uses."""
    from ansorc.search.annotate import sample
    first_shape = {label.split("(")[0]: task for label, task in reversed(list(_dags().values()))}
    out = {}
    for name, op, (source, k) in GOLDEN:
        if source == "sample":
            task = first_shape[op]
            out[name] = _code(task, sample(task, SAMPLES, seed=1000 + k_seed(op))[k], f"{op.lower()}_{k}")
        else:
            task, state, k = _logged(op, source, k)
            out[name] = _code(task, state, f"best_{k}")
    return out
