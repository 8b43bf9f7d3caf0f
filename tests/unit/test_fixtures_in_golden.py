"""Tests read their fixtures from tests/golden/ only: no test opens bench/ (its results are summaries that come and
go with benchmark runs) nor loads a bench script (the pieces tests exercise live in the package, ansorc.suite)."""
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
# a path into bench/ built or named in code, or a bench script loaded as a module
READS_BENCH = re.compile(r"""["']bench["']\s*[/,)]|["']bench/|sys\.path.*bench|from bench\b|import bench\b""")


def bench_reads(text: str) -> list:
    return [line.strip() for line in text.splitlines() if READS_BENCH.search(line)]


def test_no_test_reads_bench():
    found = {str(p.relative_to(TESTS)): hits for p in sorted(TESTS.rglob("*.py")) if p.name != Path(__file__).name
             for hits in [bench_reads(p.read_text())] if hits}
    assert not found, f"tests reading bench/ (move the fixture to tests/golden/): {found}"


def test_the_check_sees_each_way_of_reading_bench():
    for line in ('LOG = ROOT / "bench" / "results" / "c2d.jsonl.gz"', 'load_script("bench/suite.py")',
                 'sys.path.insert(0, str(ROOT / "bench"))', "from bench import suite",
                 "Path(ROOT, 'bench', 'results')"):
        assert bench_reads(line), line
    assert not bench_reads("The long run (2,000 programs) is bench/fuzz_sanitize.py.")   # prose naming a script
