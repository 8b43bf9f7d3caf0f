"""Generated C is unchanged. Golden C: a handful of programs (tests/render_programs.py's GOLDEN, one per kind)
render to the text in tests/golden/render/NAME.c, and a change shows as a diff of the C. Fingerprints: every
program of tests/render_programs.py renders to the C whose SHA-256 is in tests/golden/render_fingerprints.json.

After a deliberate change to the generated code, `ANSORC_UPDATE_GOLDEN=1 make test` (or this file alone) rewrites
both; review the golden C's diff before committing it. Without it, a missing golden file is a failure."""
from __future__ import annotations

import difflib
import json
import os
from pathlib import Path

import pytest

from tests import render_programs

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
FINGERPRINTS = GOLDEN / "render_fingerprints.json"
RENDER = GOLDEN / "render"
UPDATE = os.environ.get("ANSORC_UPDATE_GOLDEN") == "1"
MAX_DIFF_LINES = 80


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture(scope="module")
def golden_c() -> dict:
    return render_programs.golden_c()


@pytest.mark.parametrize("name", [g[0] for g in render_programs.GOLDEN])
def test_rendered_c_matches_the_golden_c(name, golden_c):
    path, got = RENDER / f"{name}.c", golden_c[name]
    if UPDATE:
        _write(path, got)
    if not path.exists():
        pytest.fail(f"{path} is missing; run with ANSORC_UPDATE_GOLDEN=1 to create it")
    want = path.read_text()
    if got != want:
        diff = list(difflib.unified_diff(want.splitlines(), got.splitlines(), f"golden/{name}.c", "rendered",
                                         lineterm="", n=2))
        more = f"\n... {len(diff) - MAX_DIFF_LINES} more diff lines" if len(diff) > MAX_DIFF_LINES else ""
        pytest.fail(f"{name}: the C changed (ANSORC_UPDATE_GOLDEN=1 rewrites the golden after a deliberate change):\n"
                    + "\n".join(diff[:MAX_DIFF_LINES]) + more)


def test_no_golden_c_is_left_without_its_program():
    stale = sorted({p.stem for p in RENDER.glob("*.c")} - {g[0] for g in render_programs.GOLDEN})
    assert not stale, f"golden C files no program renders (delete them): {stale}"


def test_rendered_c_matches_the_golden_fingerprints():
    got = render_programs.fingerprints()
    if UPDATE:
        _write(FINGERPRINTS, json.dumps(got, indent=1, sort_keys=True) + "\n")
    if not FINGERPRINTS.exists():
        pytest.fail(f"{FINGERPRINTS} is missing; run with ANSORC_UPDATE_GOLDEN=1 to create it")
    want = json.loads(FINGERPRINTS.read_text())
    assert any("/sample" in k for k in want) and any("/best" in k for k in want)
    changed = sorted(k for k, v in want.items() if got.get(k) != v)
    added = sorted(set(got) - set(want))
    assert not changed and not added, \
        f"{len(changed)} programs render to different C (or no longer render): {changed[:10]}; new: {added[:10]}"
