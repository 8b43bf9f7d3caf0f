"""Rebuild this folder from the tuning logs once tracked under bench/results (commit 8487490):

    git worktree add /tmp/old 8487490
    python data/records/make_records.py /tmp/old/bench/results data/records

table/t300, table/t64: for each row of the paper's table (README.md), the log it was timed from (the latest session
folder holding <op>_<idx>.jsonl.gz, as bench/suite_logs.py gathered them), cut to the best TABLE_BEST programs of
each workload and target with their re-timings: `bench/suite.py --trials 0` on a copy times the same programs.
gpu/<device>: the logs bench/gpu_check.sh resumes, cut the same way (GPU_BEST programs).
corpus.jsonl.gz: every measured program of every log, deduplicated by (workload, target, steps, isa), kept per
workload: the best CORPUS_BEST and CORPUS_SPREAD more spread evenly over the rest by rank (training data with slow
programs as well as fast ones, for a pretrained cost model). A record without an "isa" gets its machine's:
suite_zen3/ was measured on the Zen 3 (avx2), suite/, net/ and the top-level logs on the Xeon (avx512);
`python data/records/make_records.py --tag-isa 8487490 data/records/corpus.jsonl.gz` tags a corpus built before
that rule from the logs of that commit (matched by workload and timestamp).
"""
from __future__ import annotations

import gzip
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ansorc.measure.record import best, load  # noqa: E402

TABLE_BEST, GPU_BEST, CORPUS_BEST, CORPUS_SPREAD = 4, 16, 16, 32
LAYERS = {   # session folders of suite_zen3, earliest first: a later folder's log replaces an earlier one
    "t300": ["t300_s31", "t300_s32", "t300_s33", "t300_s34", "t300_s35", "t300_s36", "t300_s39", "t300_s40",
             "t300_s41", "t300_s42", "t300_s43"],
    "t64": ["t64_s37", "t64_s40", "t64_s41", "t64_s42", "t64_s43", "t64_s44"],
}


def _lines(path: Path) -> list:
    with (gzip.open(path, "rt") if path.suffix == ".gz" else open(path)) as f:
        return [json.loads(line) for line in f if line.strip()]


def _key(d: dict) -> tuple:
    return d.get("workload_key"), d.get("target"), json.dumps(d.get("steps"), separators=(",", ":"))


def _write(path: Path, rows: list) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(d, separators=(",", ":")) + "\n" for d in rows)
    path.write_bytes(gzip.compress(text.encode(), mtime=0))


def cut(src: Path, dst: Path, k: int) -> None:
    """dst: the lines of src that hold its best k programs per workload and target (re-timings included)."""
    def ranked(records, wk, tgt, k=1):   # target None: every ISA's records (a log may come from another machine)
        return best([r for r in records if r.target == tgt], wk, None, k=k)
    records = load(src)
    groups = {(r.workload_key, r.target) for r in records}
    keep = {(wk, tgt, r.steps_json) for wk, tgt in groups for r in ranked(records, wk, tgt, k)}
    _write(dst, [d for d in _lines(src) if _key(d)[:2] + (_steps_json(d),) in keep])
    for wk, tgt in groups:   # the program each log serves is unchanged
        a, b = ranked(records, wk, tgt), ranked(load(dst), wk, tgt)
        assert [r.steps_json for r in a] == [r.steps_json for r in b], (src, wk, tgt)


def _steps_json(d: dict) -> str:
    from ansorc.measure.record import steps_key
    return steps_key(d.get("steps"))


def corpus(logs: list, dst: Path) -> int:
    groups: dict = defaultdict(dict)
    for path in logs:
        for d in _lines(path):
            if d.get("error_code") or not d.get("costs") or d.get("note") == "retime" or d.get("lower_bound"):
                continue
            if d.get("target") == "native" and not d.get("isa"):
                d = dict(d, isa=machine_isa(str(path)))
            key = (d.get("workload_key"), d.get("target"), d.get("isa"))
            median = sorted(d["costs"])[len(d["costs"]) // 2]
            steps = _key(d)[2]
            if steps not in groups[key] or median < groups[key][steps][0]:
                groups[key][steps] = (median, d)
    rows = []
    for key in sorted(groups, key=str):
        ranked = [d for _, d in sorted(groups[key].values(), key=lambda m: m[0])]
        rest = ranked[CORPUS_BEST:]
        step = max(1, len(rest) // CORPUS_SPREAD)
        rows += ranked[:CORPUS_BEST] + rest[::step][:CORPUS_SPREAD]
    _write(dst, rows)
    return len(rows)


def machine_isa(path: str) -> str:
    """The ISA of the machine a log under bench/results was measured on (perf-notes.md names the machines)."""
    return "avx2" if "suite_zen3" in path else "avx512"


def tag_isa(commit: str, corpus_path: Path) -> int:
    """Give the corpus's native records without an isa their machine's, found in the logs of `commit`."""
    import subprocess
    ls = subprocess.run(["git", "ls-tree", "-r", "--name-only", commit, "bench/results"], capture_output=True,
                        text=True, check=True).stdout.split()
    where = {}
    for f in (f for f in ls if ".jsonl" in f and "/gpu/" not in f):
        data = subprocess.run(["git", "show", f"{commit}:{f}"], capture_output=True, check=True).stdout
        for line in (gzip.decompress(data) if f.endswith(".gz") else data).decode().splitlines():
            if line.strip():
                d = json.loads(line)
                where[(d.get("workload_key"), d.get("timestamp"))] = machine_isa(f)
    rows = _lines(corpus_path)
    for d in rows:
        if d.get("target") == "native" and not d.get("isa"):
            d["isa"] = where[(d["workload_key"], d["timestamp"])]
    _write(corpus_path, rows)
    return len(rows)


def main(src: Path, out: Path) -> int:
    for table, layers in LAYERS.items():
        chosen = {}
        for layer in layers:
            chosen |= {p.name: p for p in sorted((src / "suite_zen3" / layer).glob("*.jsonl.gz"))}
        for name, path in sorted(chosen.items()):
            cut(path, out / "table" / table / name, TABLE_BEST)
    for path in sorted(src.glob("gpu/*/*.jsonl.gz")):
        cut(path, out / "gpu" / path.parent.name / path.name, GPU_BEST)
    n = corpus(sorted(src.rglob("*.jsonl.gz")), out / "corpus.jsonl.gz")
    print(f"corpus: {n} programs")
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "--tag-isa":
        sys.exit(print(f"tagged {tag_isa(sys.argv[2], Path(sys.argv[3]))} rows") or 0)
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
