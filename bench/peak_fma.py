"""Peak float32 FMA throughput of this machine (ansorc/suite/peak.py): the ceiling for ansorc's kernels.

    python bench/peak_fma.py [--threads 2] [--chains 12] [--isa native] [--wait-idle SECONDS]
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ansorc.suite.peak import main  # noqa: E402

if __name__ == "__main__":
    main()
