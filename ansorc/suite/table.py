"""The paper's table: every workload of ansorc.workloads at every listed shape, tuned, then timed side by side
(alternating rounds in one fresh process per row, over several placements of the arrays, medians) against every peer
that computes the same thing, results checked equal (ansorc/suite/timing.py). bench/suite.py is its command line.

    python bench/suite.py --trials 300 --log-dir bench/results/suite          # the full table (hours on 2 cores)
    python bench/suite.py --quick --ops SFM NRM --log-dir /tmp/suite           # smoke test: smallest shapes
    python bench/suite.py --ops SFM --shapes 1 --trials 64

Logs: <log-dir>/<op>_<shape index>.jsonl, resumed (the trials budget is a total); a committed <name>.jsonl.gz
seeds the working copy and is rewritten after tuning (ansorc/suite/logs.py). Output in --out (default the log
dir): suite.md (ours, each peer in microseconds, ratio best peer / ours, % of the fp32 FMA peak for compute-bound
rows counting useful FLOPs only, trials, tuning seconds, geometric mean) and suite.png (ratios, log scale).
Peers: ansorc/suite/peers.py (numpy, PyTorch NCHW and channels-last: the faster counts) and ansorc/suite/onnx_peers.py.
Threads: OMP_NUM_THREADS (default 2) for ansorc's kernels, PyTorch and onnxruntime; numpy's BLAS reads its own
OPENBLAS_NUM_THREADS. On a loaded machine 2-thread figures swing widely (a descheduled thread stalls every
barrier): compare ratios, or run with OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

# Before any OpenMP runtime loads: threads bound to cores. Unbound, after this process had kept a core busy (tuning,
# the peak microbenchmark), our two OpenMP threads were often placed on one core and every spin barrier stalled:
# small kernels timed many times slower, in every run (docs/perf-notes.md). PyTorch's libgomp reads the same
# setting; onnxruntime's pool is made on every CPU (timing.peer_calls), else its worker inherits the one core this
# binds the main thread to.
os.environ.setdefault("OMP_PROC_BIND", "true")

import numpy as np  # noqa: E402


from ansorc import workloads  # noqa: E402
from ansorc.errors import AnsorcError  # noqa: E402
from ansorc.measure.affinity import all_process_cpus  # noqa: E402
from ansorc.measure.record import RETIME_NOTE, load, records_for  # noqa: E402
from ansorc.search.task import SearchTask  # noqa: E402
from ansorc.search.tuner import TuneOptions, tune  # noqa: E402
from ansorc.suite.logs import pack_log, working_log  # noqa: E402
from ansorc.suite.report import _us, chart, geomean, kind_of, markdown  # noqa: E402,F401 - geomean: the tests'
from ansorc.suite.timing import PEAK, PEAK_KIND, row_dag, time_row_fresh  # noqa: E402

MEMORY_BOUND = ("DEP", "NRM", "SFM")    # no % of peak for these: bandwidth, not FMAs, limits them
PEER_COLUMNS = ("numpy", "torch", "onnxruntime")


def rows(ops, shapes, quick: bool) -> list:
    """(op, shape index, args) for every selected row; quick: each op's smallest shape."""
    out = []
    for op in ops:
        fn, listed = workloads.ALL_WORKLOADS[op]
        idxs = [listed.index(workloads.smallest_args(op))] if quick else (shapes or range(len(listed)))
        out += [(op, i, listed[i]) for i in idxs if i < len(listed)]
    return out


def tune_row(op: str, idx: int, dag, log_dir: Path, trials: int, quiet: bool) -> tuple:
    """(working log, seconds spent tuning this row over every run that tuned into this log dir)."""
    log = working_log(log_dir, f"{op.lower()}_{idx}")
    spent_file = log_dir / "tuning_seconds.json"   # a resumed run adds to what earlier runs spent
    spent = json.loads(spent_file.read_text()) if spent_file.exists() else {}
    t0 = time.time()
    if trials:
        with all_process_cpus():   # the peers' OpenMP bound this thread to one core; gcc and workers inherit it
            tune(SearchTask(dag), trials=trials, log=str(log), options=TuneOptions(progress=not quiet))
        pack_log(log)
    key = log.stem
    spent[key] = spent.get(key, 0.0) + time.time() - t0
    spent_file.write_text(json.dumps(spent, indent=1, sort_keys=True) + "\n")
    return log, spent[key]


# the padded spatial axes of each convolution: their positions in the workload's arguments as (size, kernel,
# stride, pad), and the dilation
_CONV_AXES = {"C1D": ([1], (4, 5, 6), 1), "C2D": ([1, 2], (5, 6, 7), 1), "GRP": ([1, 2], (5, 6, 7), 1),
              "CBR": ([1, 2], (5, 6, 7), 1), "DIL": ([1, 2], (5, 6, 7), 2), "C3D": ([1, 2, 3], (6, 7, 8), 1),
              "DEP": ([1, 2], (4, 5, 6), 1), "CAP": ([1, 2], (5, 6, 7), 1), "C2D-I8": ([1, 2], (5, 6, 7), 1)}


def useful_fraction(op: str, args: tuple) -> float:
    """The share of a convolution's taps that read the input, not its zero padding: the FLOPs a library that
    skips the border taps does (oneDNN) and the only ones % of peak counts (C3D 7x7x512: 0.78)."""
    if op not in _CONV_AXES:
        return 1.0
    sizes, (k, s, p), dil = _CONV_AXES[op]
    frac = 1.0
    for a in sizes:
        n, kk, st, pad = args[a], args[k], args[s], args[p]
        out = (n + 2 * pad - dil * (kk - 1) - 1) // st + 1
        taps = np.arange(out)[:, None] * st - pad + np.arange(kk)[None, :] * dil
        frac *= float(((taps >= 0) & (taps < n)).mean())
    return frac


def timing_fields(op: str, med: dict, useful_flops: float, peak, peak_flops=None) -> dict:
    """The row's figures from each contender's median seconds ("ours", peer names, and PEAK where the FMA peak loop
    doing `peak_flops` per call was timed alongside). % of peak is against the higher of `peak` and the loop's
    GFLOP/s in this row's rounds: in a degraded stretch of the VM the loop can run far slower (both threads on
    one physical core?) while a kernel that waits on memory loses less, and a % above 100 would say nothing
    (docs/measurement.md)."""
    peers = {k: v for k, v in med.items() if k not in ("ours", PEAK)}
    row_peak = peak_flops / med[PEAK] / 1e9 if peak_flops and PEAK in med else None
    peak = max((p for p in (row_peak, peak) if p), default=None)
    cols = {c: min((v for k, v in peers.items() if k.split("_")[0] == c), default=None) for c in PEER_COLUMNS}
    best = min(peers.values()) if peers else None
    gflops = useful_flops / med["ours"] / 1e9
    return {"ours_s": med["ours"], "peers_s": cols,
            "torch_layout": min((k for k in peers if k.startswith("torch")), key=peers.get, default=None),
            "ratio": best / med["ours"] if best else None, "gflops": gflops, "useful": True,
            "peak_pct": 100 * gflops / peak if peak and op not in MEMORY_BOUND else None, "peak_gflops": peak,
            "peak_flops": peak_flops if row_peak else None, "row_peak_gflops": row_peak}


def row_trials(log: Path, dag) -> int:
    """Programs measured for the row's DAG (re-timings not counted); a constant-mode row without records of its
    own counts its per-call ones, whose best program it then runs (search/tuning.best_logged). A log may hold
    both kinds: only the row's own count."""
    recs = load(log) if log.exists() else []
    for key in (dag.workload_key, dag.with_constants(()).workload_key):
        n = sum(r.note != RETIME_NOTE for r in records_for(recs, key))
        if n:
            return n
    return 0


def summarize(op: str, idx: int, args: tuple, timing: dict, log: Path, tuning_s: float, peak, dag) -> dict:
    return {"op": op, "idx": idx, "args": list(args), "peak_kind": PEAK_KIND.get(op, "fp32"),
            **timing_fields(op, timing["med"], timing["flops"] * useful_fraction(op, args), peak,
                            timing.get("peak_flops")),
            "mismatch": timing["mismatch"], "tuning_s": tuning_s, "placements_s": timing.get("placements"),
            "cpus": timing.get("cpus"), "trials": row_trials(log, dag)}


def _peaks(skip: bool, ops) -> dict:
    """{kind: peak G-operations/s} of the peak loops the selected rows are set against: fp32 FMA, int8, bf16."""
    peaks = {}
    if skip:
        return peaks
    try:
        from ansorc.suite.peak import measure_peak
        from ansorc.suite.peak_dot import measure_dot_peak
        for kind in dict.fromkeys(PEAK_KIND.get(op, "fp32") for op in ops):
            peaks[kind] = measure_peak() if kind == "fp32" else measure_dot_peak(kind)[1] or None
    except Exception as e:  # noqa: BLE001 - the peak is context, not the result
        print(f"peak microbenchmark unavailable: {e}")
    return peaks


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=300, help="total measured programs per row (0: use the logs)")
    ap.add_argument("--ops", nargs="*", default=list(workloads.ALL_WORKLOADS), type=str.upper)
    ap.add_argument("--shapes", nargs="*", type=int, help="shape indices (default all four)")
    ap.add_argument("--quick", action="store_true", help="smallest shape per op, 8 trials, short timing")
    ap.add_argument("--log-dir", default="bench/results/suite")
    ap.add_argument("--out", help="where suite.md, suite.json and suite.png go (default --log-dir)")
    ap.add_argument("--placements", type=int, default=3,
                    help="timings per row on fresh arrays (the median counts); --quick: 1")
    ap.add_argument("--pool", action="store_true",
                    help="with --merge: a row in several files gets each contender's median over all their placements")
    ap.add_argument("--per-call-weights", action="store_true",
                    help="convolutions' weights not declared constant: ours packs them on every call (the tables "
                         "before session s34; onnxruntime's initializers are packed once either way)")
    ap.add_argument("--no-peak", action="store_true")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--merge", nargs="+", metavar="SUITE_JSON",
                    help="no tuning or timing: render one table from these suite.json files (a later file's row "
                         "replaces an earlier one's for the same op and shape) into --out")
    args = ap.parse_args(argv)
    unknown = [o for o in args.ops if o not in workloads.ALL_WORKLOADS]
    if unknown:
        ap.error(f"unknown ops {unknown}; known: {', '.join(workloads.ALL_WORKLOADS)}")
    if args.quick and args.trials == ap.get_default("trials"):
        args.trials = 8
    if args.quick and args.placements == ap.get_default("placements"):
        args.placements = 1
    return args


def merged(paths: list, pool: bool = False) -> list:
    """One row per op and shape: the last file's, or with `pool` every file's placements of it pooled."""
    rows_by_key: dict = {}
    for p in paths:
        for r in json.loads(Path(p).read_text()):
            if not r.get("useful"):   # a table from before useful FLOPs: its GFLOP/s counted the padding taps
                r["gflops"], r["useful"] = r["gflops"] * useful_fraction(r["op"], tuple(r["args"])), True
            rows_by_key.setdefault((r["op"], r["idx"]), []).append(r)
    order = list(workloads.ALL_WORKLOADS)
    rows = [pooled(rs) if pool else rs[-1] for rs in rows_by_key.values()]
    return sorted(rows, key=lambda r: (order.index(r["op"]), r["idx"]))


def pooled(rs: list) -> dict:
    """A row timed in several runs: each contender's time is the median over all runs' placements (a contender
    missing from a run, or differing in one, is left out)."""
    r = dict(rs[-1])
    if len(rs) == 1 or not all(x.get("placements_s") for x in rs):
        return r
    bad = sorted({m for x in rs for m in x["mismatch"]})
    names = set.intersection(*(set(x["placements_s"]) for x in rs)) - set(bad)
    per = {k: [t * _per_gflop(x, k) for x in rs for t in x["placements_s"][k]] for k in sorted(names)}
    flops = 1e9 if PEAK in per and all(x.get("peak_flops") for x in rs) else None
    r.update(timing_fields(r["op"], {k: float(np.median(v)) for k, v in per.items()}, r["gflops"] * r["ours_s"] * 1e9,
                           r.get("peak_gflops"), flops))
    r.update(placements_s=per, mismatch=bad, runs=len(rs))
    return r


def _per_gflop(row: dict, name: str) -> float:
    """The factor that makes `name`'s times in `row` seconds per 1e9 FLOPs when it is the peak loop, whose FLOPs per
    call each timing process calibrates for itself (else 1): so that runs pool."""
    return 1e9 / row["peak_flops"] if name == PEAK and row.get("peak_flops") else 1.0


def one_peak(results: list, peaks: dict | None = None) -> dict:
    """Per peak kind (fp32, int8, bf16), the highest peak measured (at the start of a run, or in a row's rounds, in
    any merged run); every row's % of peak set against its kind's. Returns {kind: peak}."""
    out = {}
    for kind in dict.fromkeys(kind_of(r) for r in results):
        rs = [r for r in results if kind_of(r) == kind]
        seen = [r.get("peak_gflops") or r["gflops"] * 100 / r["peak_pct"] for r in rs if r.get("peak_pct")]
        peak = out[kind] = max(seen + [(peaks or {}).get(kind) or 0]) or None
        for r in rs:
            r["peak_pct"] = 100 * r["gflops"] / peak if peak and r["peak_pct"] is not None else None
            r["peak_gflops"] = peak if r["peak_pct"] is not None else r.get("peak_gflops")
    return out


def write_outputs(results: list, peaks: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "suite.md").write_text(markdown(results, peaks))
    (out / "suite.json").write_text(json.dumps(results, indent=1) + "\n")
    chart(results, out / "suite.png")
    print(markdown(results, peaks))


def main(argv=None) -> int:
    args = parse(argv)
    if args.merge:
        results = merged(args.merge, args.pool)
        write_outputs(results, one_peak(results), Path(args.out or "."))
        return 0
    log_dir, out = Path(args.log_dir), Path(args.out or args.log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    selected = rows(args.ops, args.shapes, args.quick)
    peaks = _peaks(args.no_peak or args.quick, [op for op, _, _ in selected])
    rounds, min_time = (5, 0.02) if args.quick else (5, 0.05)
    results = []
    for op, idx, wargs in selected:
        constant = not args.per_call_weights
        dag = row_dag(op, idx, constant)
        log, spent = tune_row(op, idx, dag, log_dir, args.trials, args.quiet)
        try:
            timing = time_row_fresh(op, idx, log, rounds, min_time, args.placements, constant,
                                    peak=not (args.no_peak or args.quick) and op not in MEMORY_BOUND)
        except AnsorcError as e:   # e.g. --trials 0 and no record for this row yet
            print(f"{op} {tuple(wargs)}: skipped: {e}", flush=True)
            continue
        r = summarize(op, idx, wargs, timing, log, spent, peaks.get(PEAK_KIND.get(op, "fp32")), dag)
        results.append(r)
        print(f"{op} {tuple(wargs)}: ours {_us(r['ours_s'])} us, ratio "
              f"{'-' if r['ratio'] is None else round(r['ratio'], 2)}", flush=True)
    write_outputs(results, one_peak(results, peaks), out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
