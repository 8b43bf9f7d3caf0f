"""Redo the final side-by-side re-timing of a network's tuning log on a quiet machine.

    python bench/net_retime.py --model bert_tiny --log L [--top 4] [--rounds 3] [--first N --out L2]

--first N --out L2: first copy into L2 the log's records up to its N-th tuning record (with the re-timing records
that follow it), then re-time L2: the log as it stood after N trials, for a checkpoint of a longer run.

Tuning ends by timing each task's top programs (its default program among them) side by side; best() then ranks
that session first. A log tuned while something else ran has that re-timing taken under load, where 2-thread
programs stall at their barriers and serial ones win: re-timing it here, weights cold as tuning times them,
appends a new session that replaces the choice. (Measured: BERT-tiny tuned beside MobileNetV2 ran at 0.79x
onnxruntime after 2000 trials; re-timed quietly, 1.27x; bench/results/net/latency_cold_2026-11-26.md.)
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def first_trials(src: str, n: int, dst: str) -> int:
    """Copy src's lines up to its n-th tuning record (and the re-timing records after it) into dst."""
    import json
    out, seen = [], 0
    for line in Path(src).read_text().splitlines(keepends=True):
        try:
            note = json.loads(line).get("note", "")
        except ValueError:
            continue
        if note != "retime":
            if seen == n:
                break
            seen += 1
        out.append(line)
    Path(dst).write_text("".join(out))
    return seen


def retime_log(model: str, log: str, top: int = 4, rounds: int = 3) -> float:
    from ansorc.measure.record import RecordLog
    from ansorc.net import zoo
    from ansorc.net.fuse import fuse
    from ansorc.net.importer import import_model
    from ansorc.net.tasks import extract_tasks
    from ansorc.net.tune import weight_inputs
    from ansorc.search.task import SearchTask
    from ansorc.search.tuner import local_backend
    from ansorc.search.tuning import TaskTuner, TuneOptions, make_cost_model, retime
    net = import_model(getattr(zoo, model)()) if hasattr(zoo, model) else import_model(model)
    opts = TuneOptions(model="random", progress=False)
    records = RecordLog(log)
    t0 = time.perf_counter()
    backend = None
    try:
        for t in extract_tasks(net, fuse(net)):
            task = SearchTask(t.dag, "native", cold_inputs=weight_inputs(net, t))
            backend = backend or local_backend(task.target, opts)
            tuner = TaskTuner(task, opts, make_cost_model(opts), backend, records)
            chosen = tuner._retime_set(top)
            if len(chosen) > 1:
                out = retime(task, backend, tuner.measure_task, chosen, rounds, tuner.entry_names)
                records.append([rec for _, _, rec in out])
    finally:
        if backend is not None:
            backend.close()
    return time.perf_counter() - t0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True, help="a zoo model name or an .onnx path")
    p.add_argument("--log", required=True)
    p.add_argument("--top", type=int, default=4)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--first", type=int, help="re-time a copy of the log as it stood after this many trials")
    p.add_argument("--out", help="where that copy goes (with --first)")
    args = p.parse_args(argv)
    if args.first is not None:
        if not args.out:
            p.error("--first needs --out")
        print(f"{args.out}: {first_trials(args.log, args.first, args.out)} trials")
        args.log = args.out
    print(f"{args.model}: re-timed in {retime_log(args.model, args.log, args.top, args.rounds):.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
