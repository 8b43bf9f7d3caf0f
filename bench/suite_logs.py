"""Assemble the log set a committed table was timed from, so that its timing can be repeated in one command.

    python bench/suite_logs.py t300 D     # the 300-trial table (suite_zen3/t300_s51): 52 logs into D
    python bench/suite_logs.py t64 D      # the 64-trial column (suite_zen3/t64_s44)
    python bench/suite.py --trials 0 --log-dir D --out R    # time every row's best program against its peers

The tables were built over many sessions: each folder of bench/results/suite_zen3 holds only the logs that session
tuned, so a row's log is the one in the latest folder that has it (folders in the order of LAYERS). The set is
checked against the table: every row's count of measured programs must equal the table's `trials` column, and a
row whose log is missing or differs is named (exit code 1).
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from peers import working_log  # noqa: E402
from suite import row_trials  # noqa: E402
from suite_timing import row_dag  # noqa: E402

ZEN3 = Path(__file__).resolve().parent / "results" / "suite_zen3"
# folders of logs, earliest first (a later folder's <op>_<idx>.jsonl.gz replaces an earlier one), and the table
LAYERS = {
    "t300": (["t300_s31", "t300_s32", "t300_s33", "t300_s34", "t300_s35", "t300_s36", "t300_s39", "t300_s40",
              "t300_s41", "t300_s42", "t300_s43"], "t300_s51"),
    "t64": (["t64_s37", "t64_s40", "t64_s41", "t64_s42", "t64_s43", "t64_s44"], "t64_s44"),
}


def assemble(layers: list, out: Path) -> dict:
    """Copy every layer's logs into out, later layers over earlier ones; {log name: the folder it came from}."""
    source = {}
    for layer in layers:
        for log in sorted((ZEN3 / layer).glob("*.jsonl.gz")):
            source[log.name] = layer
    # an unpacked working copy would be read instead of the gathered log (peers.working_log), and it may hold
    # someone's own tuning: refuse rather than overwrite or delete it
    held = sorted(n[:-len(".gz")] for n in source if (out / n[:-len(".gz")]).exists())
    if held:
        raise SystemExit(f"suite_logs: {out} already holds {', '.join(held[:3])}{' ...' if len(held) > 3 else ''}: "
                         "gather into a new folder")
    out.mkdir(parents=True, exist_ok=True)
    for name, layer in source.items():
        shutil.copyfile(ZEN3 / layer / name, out / name)
    return source


def mismatches(table: list, out: Path) -> list:
    """Rows of the table whose assembled log does not hold the table's count of measured programs."""
    bad = []
    for row in table:
        log = working_log(out, f"{row['op'].lower()}_{row['idx']}")
        got = row_trials(log, row_dag(row["op"], row["idx"])) if log.exists() else None
        if got != row["trials"]:
            bad.append(f"{row['op']} {tuple(row['args'])}: table {row['trials']} trials, log {got}")
    return bad


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("table", choices=sorted(LAYERS), help="which committed table's log set")
    ap.add_argument("out", help="folder to write the logs into (use it as bench/suite.py --log-dir)")
    args = ap.parse_args(argv)
    layers, table_dir = LAYERS[args.table]
    out = Path(args.out)
    source = assemble(layers, out)
    table = json.loads((ZEN3 / table_dir / "suite.json").read_text())
    bad = mismatches(table, out)
    for line in bad:
        print(f"suite_logs: {line}", file=sys.stderr)
    print(f"{len(source)} logs from {len(set(source.values()))} folders into {out}; "
          f"{len(table) - len(bad)} of {len(table)} rows hold the trials of {table_dir}/suite.md")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
