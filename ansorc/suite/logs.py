"""Tuning logs of the table kept gzipped: tuned into an uncompressed working copy, packed again afterwards."""
from __future__ import annotations

import gzip
from pathlib import Path


def working_log(out: Path, name: str) -> Path:
    """<name>.jsonl to tune into, unpacked from <name>.jsonl.gz when there is no copy yet."""
    log = out / f"{name}.jsonl"
    packed = log.with_name(log.name + ".gz")
    if packed.exists() and not log.exists():
        log.write_bytes(gzip.decompress(packed.read_bytes()))
    return log


def pack_log(log: Path) -> None:
    """Write log.gz from the working copy (mtime 0: the same records give the same bytes)."""
    if log.exists():
        log.with_name(log.name + ".gz").write_bytes(gzip.compress(log.read_bytes(), mtime=0))
