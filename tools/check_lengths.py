"""Fail when a tracked Python file is longer than the house limit (small files: the guide says ~400 lines).

    python tools/check_lengths.py [--max 450]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def tracked_python_files() -> list:
    try:
        out = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True)
        return [ROOT / p for p in out.stdout.split()]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout (an unpacked archive): every .py
        return [p for p in ROOT.rglob("*.py") if ".venv" not in p.parts and "build" not in p.parts]


def too_long(files, limit: int) -> list:
    counts = ((f, len(f.read_text(errors="replace").splitlines())) for f in files if f.exists())
    return sorted(((f, n) for f, n in counts if n > limit), key=lambda x: -x[1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--max", type=int, default=450)
    args = ap.parse_args(argv)
    bad = too_long(tracked_python_files(), args.max)
    for f, n in bad:
        print(f"{f.relative_to(ROOT)}: {n} lines (limit {args.max}); split it", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
