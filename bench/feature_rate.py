"""CPU time of the cost model's feature extraction (lowering + features) over the programs a real search scored.

    python bench/feature_rate.py --dump states.json --trials 64   # tune C2D 56x56x64 3x3, keep every scored program
    python bench/feature_rate.py --states states.json             # time extracting them all in this process

The dump is the step histories (JSON) of every program the evolutionary search passed to the cost model. Timing
prints the CPU seconds of one pass in a fresh process (a search scores each program about once, so a warm second
pass would flatter caches), the SHA-256 of all feature rows (the same bytes before and after a speed change) and
the index memo's size. Compare two checkouts by alternating their runs on the same dump (session s47:
17.5 -> 15.8 s median of 5 for 1984 programs).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

C2D_ARGS = (1, 56, 56, 64, 64, 3, 1, 1)


def dump(path: str, trials: int, seed: int) -> int:
    os.environ.setdefault("ANSORC_CACHE_DIR", tempfile.mkdtemp(prefix="ansorc-feat-"))
    import ansorc
    import ansorc.search.features as features
    from ansorc import workloads
    from ansorc.ir.steps import steps_to_json
    seen: list = []
    extract = features.extract_states

    def recording(states, *args, **kwargs):
        seen.extend(steps_to_json(s.steps) for s in states)
        return extract(states, *args, **kwargs)

    features.extract_states = recording
    with tempfile.TemporaryDirectory() as tmp:
        ansorc.tune(workloads.WORKLOADS["C2D"][0](*C2D_ARGS), trials=trials, log=os.path.join(tmp, "log.jsonl"),
                    seed=seed, progress=False)
    Path(path).write_text(json.dumps(seen))
    print(f"{len(seen)} programs -> {path}")
    return 0


def timed(path: str) -> int:
    import numpy as np

    import ansorc.ir.simplify as simplify
    from ansorc import workloads
    from ansorc.ir.state import replay
    from ansorc.ir.steps import steps_from_json
    from ansorc.search.features import extract_states
    from ansorc.search.task import SearchTask
    task = SearchTask(workloads.WORKLOADS["C2D"][0](*C2D_ARGS))
    states = [replay(task.dag, steps_from_json(s)) for s in json.loads(Path(path).read_text())]
    start = time.process_time()
    feats = extract_states(states, hw=task.hw)
    cpu = time.process_time() - start
    digest = hashlib.sha256()
    for f in feats:
        digest.update(np.ascontiguousarray(f).tobytes())
    print(json.dumps({"programs": len(states), "cpu_s": round(cpu, 2), "features_sha256": digest.hexdigest()[:16],
                      "index_memo_entries": len(simplify._INDEX_MEMO)}))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dump", help="tune and write the scored programs here")
    ap.add_argument("--states", help="time feature extraction of these programs")
    ap.add_argument("--trials", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    if bool(a.dump) == bool(a.states):
        ap.error("give exactly one of --dump and --states")
    return dump(a.dump, a.trials, a.seed) if a.dump else timed(a.states)


if __name__ == "__main__":
    raise SystemExit(main())
