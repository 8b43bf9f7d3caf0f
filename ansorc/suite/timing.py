"""One row of the table (bench/suite.py) timed: ours and every peer that computes the same thing, alternating
round by round in one process, checked equal, over several placements of the arrays; run in a process of its own.

    python -m ansorc.suite.timing OP IDX LOG OUT_JSON [--rounds 5] [--min-time 0.05] [--placements 3] [--peak]

Why a fresh process and several placements (measured: docs/perf-notes.md): a row timed in the process that had
just tuned it ran slower than in a new one, and one program on the same values ran at a speed that depended only on
where its arrays landed. Each placement here gives every
contender new arrays (new pages, a random 64-byte offset in the first page); a contender's time is the median over
placements of its median over rounds, so no one is judged on one lucky or unlucky layout.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path

os.environ.setdefault("OMP_PROC_BIND", "true")   # before any OpenMP runtime loads (see table.py)
# the CPUs this process started with, which its OpenMP runtimes spread their threads over (they later bind the main
# thread to one of them)
START_CPUS = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None

import numpy as np  # noqa: E402


import ansorc  # noqa: E402
from ansorc import workloads  # noqa: E402
from ansorc.errors import AnsorcError  # noqa: E402
from ansorc.ir.program.dag import ComputeDAG  # noqa: E402
from ansorc.measure.affinity import all_process_cpus  # noqa: E402
from ansorc.measure.alternate import median_alternating  # noqa: E402
from ansorc.ir.program.convert import storage  # noqa: E402
from ansorc.suite.lowp_peers import lowp_fns  # noqa: E402
from ansorc.suite.peak import peak_call  # noqa: E402
from ansorc.suite.peak_dot import dot_call, loop_for  # noqa: E402
from ansorc.suite.onnx_peers import ort_fns  # noqa: E402
from ansorc.suite.peers import NUMPY, torch_fns  # noqa: E402

WARM = 0.25    # seconds of untimed calls before each timed block (ansorc/measure/alternate.py says why)
PEAK = "fma_peak"   # the contender that times the peak loop alongside a compute-bound row (not a peer)
# the peak loop of a low-precision row: its dot-product instruction's (suite/peak_dot.py); others: the FMA's
PEAK_KIND = {"GMM-I8": "int8", "C2D-I8": "int8", "GMM-BF16": "bf16"}


def peer_calls(op: str, args: tuple, inputs: list) -> dict:
    out = {}
    if op in NUMPY:
        out["numpy"] = (NUMPY[op](*inputs), lambda r: r)
    for make in ((lowp_fns,) if op in workloads.LOW_PRECISION else (torch_fns, ort_fns)):
        try:
            # a peer's thread pool is made here and inherits this thread's CPUs: after our OpenMP bound this
            # thread to one core, onnxruntime's worker shared that core with its caller (docs/measurement.md)
            with all_process_cpus():
                out.update(make(op, args, inputs))
        except Exception as e:  # noqa: BLE001 - a peer library that cannot express this row is reported, not fatal
            print(f"  {op}: {make.__name__}: {type(e).__name__}: {str(e)[:160]}", flush=True)
    return out


def check(ours: np.ndarray, got, rtol: float = 2e-3) -> bool:
    """Equal for integer results; float ones within `rtol` (and as much of the largest output in absolute)."""
    if ours.dtype.kind in "iu":
        return bool(np.array_equal(np.asarray(got).reshape(ours.shape), ours))
    got = np.asarray(got, dtype=np.float32).reshape(ours.shape)
    return bool(np.allclose(got, ours, rtol=rtol, atol=rtol * max(1.0, float(np.abs(ours).max()))))


# a bf16 result (PyTorch's bf16 matmul) is rounded to 8 significant bits: up to 2^-9 of each value
CHECK_RTOL = {"GMM-BF16": 8e-3}


def row_values(dag: ComputeDAG, rng) -> list:
    """Random inputs: float32 normal, bfloat16 the same rounded, integers over their whole range (u8 x s8 products
    that saturate an int16 pair sum are what the AVX2 sequence must get right)."""
    out = []
    for t in dag.inputs:
        if t.dtype in ("float32", "bfloat16"):
            out.append(storage(rng.standard_normal(t.shape, dtype=np.float32), t.dtype))
        else:
            info = np.iinfo(t.dtype)
            out.append(rng.integers(info.min, info.max, t.shape, dtype=t.dtype, endpoint=True))
    return out


def row_peak_call(op: str) -> tuple:
    """(fn, operations a call) of the row's peak loop, (None, None) where this CPU has no such instruction."""
    if op not in PEAK_KIND:
        return peak_call()
    loop = loop_for(PEAK_KIND[op])
    return dot_call(loop) if loop else (None, None)


def placed(values: np.ndarray, rng) -> np.ndarray:
    """A fresh copy of `values` on new pages, starting at a random 64-byte boundary within its first page."""
    n = values.size
    raw = ansorc.empty((n + 4096 // values.itemsize,), values.dtype)   # room for an offset of up to a page
    off = int(rng.integers(0, 64)) * 64 // values.itemsize
    out = raw[off:off + n].reshape(values.shape)
    out[...] = values
    return out


def row_parser(doc: str) -> argparse.ArgumentParser:
    """The command line of a script that works on one tuned row: OP IDX LOG (its own options added after)."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("op", type=str.upper)
    ap.add_argument("idx", type=int)
    ap.add_argument("log")
    return ap


def row_dag(op: str, idx: int, constant_weights: bool = True) -> ComputeDAG:
    """The row's DAG; with constant_weights its weights are declared constant (ComputeDAG.constants), as the
    table's onnxruntime peer holds them as initializers and a deployed model's kernels see them."""
    tensors = workloads.make(op, idx)
    return ComputeDAG(tensors, workloads.weights(tensors, op) if constant_weights else ())


def tuned_row(op: str, idx: int, log, constant_weights: bool = True) -> tuple:
    """(the row's kernel rebuilt from the best program in `log`, its DAG, the workload's parameters, random input
    values, zero outputs): what every bench script that times a tuned row starts from."""
    dag = row_dag(op, idx, constant_weights)
    kern = ansorc.compile(dag, trials=0, log=str(log), name=f"{op.lower()}_{idx}")
    values = row_values(dag, np.random.default_rng(0))
    zeros = [np.zeros(t.shape, t.dtype) for t in dag.outputs]
    return kern, dag, tuple(workloads.ALL_WORKLOADS[op][1][idx]), values, zeros


def time_row(op: str, idx: int, log: Path, rounds: int, min_time: float, placements: int,
             constant_weights: bool = True, peak: bool = False) -> dict:
    """Median seconds of ours and of every peer whose result equals ours in every placement; the others listed.
    The first call on each placement makes what ours keeps of constant weights; the timed calls reuse it. With
    `peak`, the FMA peak loop (ansorc/suite/peak.py) is one more contender, PEAK, doing "peak_flops" per call."""
    kern, dag, args, values, zeros = tuned_row(op, idx, log, constant_weights)
    rng, per, bad = np.random.default_rng(1), {}, []
    peak_fn, peak_flops = row_peak_call(op) if peak else (None, None)
    for _ in range(placements):
        inputs, outs = [placed(v, rng) for v in values], [placed(z, rng) for z in zeros]
        kern(*inputs, *outs)
        fns = {"ours": lambda i=inputs, o=outs: kern(*i, *o)}
        for name, (call, to_ours, *own_check) in peer_calls(op, args, inputs).items():
            if name in bad:
                continue
            same = own_check[0] if own_check else partial(check, rtol=CHECK_RTOL.get(op, 2e-3))
            try:
                ok = same(outs[0], to_ours(call()))
            except Exception as e:  # noqa: BLE001 - a peer that cannot run this shape is reported, not fatal
                print(f"  {op} {name}: {type(e).__name__}: {str(e)[:120]}", flush=True)
                ok = False
            if ok:
                fns[name] = call
            else:
                bad.append(name)
        if peak_fn:
            fns[PEAK] = peak_fn
        for name, seconds in median_alternating(fns, rounds=rounds, min_time=min_time, warm=WARM).items():
            per.setdefault(name, []).append(seconds)
    per = {k: v for k, v in per.items() if k not in bad}   # a peer that differed once: none of its times count
    return {"med": {k: float(np.median(v)) for k, v in per.items()}, "placements": per, "mismatch": bad,
            "flops": dag.flop_count, "cpus": START_CPUS, "peak_flops": peak_flops}


def _child_env() -> dict:
    """This process's environment with this checkout's package first on the path (not another installed copy)."""
    root = str(Path(__file__).resolve().parents[2])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}


def time_row_fresh(op: str, idx: int, log: Path, rounds: int, min_time: float, placements: int,
                   constant_weights: bool = True, peak: bool = False) -> dict:
    """time_row in a new Python process (its output passes through); AnsorcError when the row cannot be timed."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "timing.json"
        cmd = [sys.executable, "-m", "ansorc.suite.timing", op, str(idx), str(log), str(out),
               "--rounds", str(rounds), "--min-time", str(min_time), "--placements", str(placements)]
        cmd += ([] if constant_weights else ["--per-call-weights"]) + (["--peak"] if peak else [])
        # started from a thread that an OpenMP runtime bound to one core (the peak microbenchmark, a peer), the
        # child would inherit that one-CPU mask and time ours and PyTorch alike slower (docs/perf-notes.md)
        with all_process_cpus():
            rc = subprocess.run(cmd, check=False, env=_child_env()).returncode
        if not out.exists():
            raise AnsorcError(f"timing {op} {idx} exited with code {rc} and no result (command: {' '.join(cmd)})")
        got = json.loads(out.read_text())
    if "error" in got:
        raise AnsorcError(got["error"])
    return got


def main(argv=None) -> int:
    ap = row_parser(__doc__)
    ap.add_argument("out", help="where the result goes as JSON")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.05)
    ap.add_argument("--placements", type=int, default=3)
    ap.add_argument("--per-call-weights", action="store_true", help="weights not declared constant")
    ap.add_argument("--peak", action="store_true", help="time the FMA peak loop alongside (contender fma_peak)")
    a = ap.parse_args(argv)
    try:
        got = time_row(a.op, a.idx, Path(a.log), a.rounds, a.min_time, a.placements, not a.per_call_weights, a.peak)
    except AnsorcError as e:   # e.g. no record for this row yet: the suite skips it
        got = {"error": str(e)}
    Path(a.out).write_text(json.dumps(got))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
