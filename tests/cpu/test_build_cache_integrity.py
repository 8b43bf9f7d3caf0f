"""Issue 12 row 13: the build cache and the precompiled header are trusted by content, not existence, and the
temporary files of killed builds are swept."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ansorc.codegen.source import Source
from ansorc.measure import sealed
from ansorc.measure.builder import PCH_PREFIX, build
from tests.cpu.test_measure import add_source

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")


@pytest.fixture
def build_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("ANSORC_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "builds"


def test_a_library_swapped_under_its_cache_key_is_rebuilt_not_loaded(build_dir):
    src, other = add_source("genuine"), add_source("impostor", "C[i] = A[i] - B[i];")
    first, imp = build([src], build_dir=build_dir)[0], build([other], build_dir=build_dir)[0]
    genuine_bytes = Path(first.lib_path).read_bytes()
    shutil.copyfile(imp.lib_path, first.lib_path)  # a different .so placed under the key
    again = build([src], build_dir=build_dir)[0]
    assert again.ok and not again.cached and again.lib_path == first.lib_path
    assert Path(again.lib_path).read_bytes() != Path(imp.lib_path).read_bytes()
    Path(first.lib_path).write_bytes(genuine_bytes[:100])  # truncated
    assert not build([src], build_dir=build_dir)[0].cached
    assert build([src], build_dir=build_dir)[0].cached  # and once rebuilt, it is trusted again


def test_a_library_without_its_digest_is_not_trusted(build_dir):
    src = add_source("no_digest")
    first = build([src], build_dir=build_dir)[0]
    sealed.sidecar(Path(first.lib_path)).unlink()
    assert not build([src], build_dir=build_dir)[0].cached


def test_a_corrupted_precompiled_header_is_rebuilt(build_dir):
    base = add_source("pch_check")
    src = Source(PCH_PREFIX + "#include <immintrin.h>\n" + base.code, base.entry, base.args)
    first = build([src], build_dir=build_dir)[0]
    header = first.repro_command.split("-include ")[1].split()[0]
    gch = Path(header + ".gch")
    gch.write_bytes(b"not a precompiled header")
    fresh = add_source("pch_check2")
    again = build([Source(PCH_PREFIX + "#include <immintrin.h>\n" + fresh.code, fresh.entry, fresh.args)],
                  build_dir=build_dir)[0]
    assert again.ok and "-include" in again.repro_command, again.error_msg
    assert sealed.intact(gch) and gch.read_bytes() != b"not a precompiled header"


def test_leftovers_of_killed_builds_are_swept_and_live_ones_kept(build_dir, tmp_path):
    build_dir.mkdir(parents=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    gone = build_dir / f"abc.so.tmp.{dead.pid}.140000"
    mine = build_dir / f"def.so.tmp.{os.getpid()}.1"
    gone.write_bytes(b"x")
    mine.write_bytes(b"x")
    sealed._swept.discard(str(build_dir))
    assert build([add_source("sweep")], build_dir=build_dir)[0].ok
    assert not gone.exists() and mine.exists()
    old = build_dir / f"ghi.so.tmp.{os.getpid()}.2"
    old.write_bytes(b"x")
    os.utime(old, (0, 0))  # a live pid, but far older than any build: its process was reused
    assert sealed.sweep_leftovers(build_dir, once=False) == 1 and not old.exists() and mine.exists()
