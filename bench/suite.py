"""The paper's table: every workload of ansorc.workloads at every listed shape, tuned, then timed side by side
against every peer that computes the same thing, results checked equal (ansorc/suite/table.py says how).

    python bench/suite.py --trials 300 --log-dir /tmp/suite     # the full table (hours on 2 cores)
    python bench/suite.py --quick --ops SFM NRM --log-dir /tmp/suite      # smoke test: smallest shapes
    python bench/suite.py --merge A/suite.json B/suite.json --pool --out D  # one table from several runs
"""
import os
import sys
from pathlib import Path

# Before any OpenMP runtime loads (ansorc/suite/table.py says why): threads bound to cores.
os.environ.setdefault("OMP_PROC_BIND", "true")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ansorc.suite.table import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
