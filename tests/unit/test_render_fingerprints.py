"""Generated C is unchanged: every program of bench/render_fingerprint.py renders to the C whose SHA-256 is in
tests/golden/render_fingerprints.json. ANSORC_UPDATE_GOLDEN=1 rewrites the golden file (after a deliberate
change to the generated code); without it, a missing golden file is a failure."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.scripts import load_script

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "render_fingerprints.json"


def _script():
    return load_script("bench/render_fingerprint.py")


def test_rendered_c_matches_the_golden_fingerprints():
    got = _script().fingerprints()
    if os.environ.get("ANSORC_UPDATE_GOLDEN") == "1":
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    if not GOLDEN.exists():
        pytest.fail(f"{GOLDEN} is missing; run with ANSORC_UPDATE_GOLDEN=1 to create it")
    want = json.loads(GOLDEN.read_text())
    logs = {p.name.removesuffix(".gz") for p in (ROOT / "bench" / "results").glob("*.jsonl*")}
    # A log that is no longer in bench/results (renamed, compressed) cannot be rendered; its entries are skipped.
    want = {k: v for k, v in want.items() if "/sample" in k or k.split("/")[0] in logs}
    assert any("/sample" in k for k in want)
    changed = sorted(k for k, v in want.items() if got.get(k) != v)
    assert not changed, f"{len(changed)} programs render to different C (or no longer render): {changed[:10]}"
