"""Cache files trusted by content, not by existence: each is installed with a SHA-256 sidecar and used only while
its bytes still match. A library swapped or truncated under its cache key (by hand, by a full disk, by another
tool) is rebuilt instead of loaded. And temporary files a killed builder left behind are swept away.

The sidecar is written before the file is renamed into place, so a process killed in between leaves a sidecar
without its file (rebuilt next time), never a file that passes the check with the wrong content.
"""
from __future__ import annotations

import hashlib
import os
import re
import threading
import time
from pathlib import Path

SUFFIX = ".sha256"
LEFTOVER_AGE_S = 3600.0   # a temporary file this old belongs to no live build (builds time out in seconds)
_TMP = re.compile(r"\.tmp\.(\d+)(?:\.\d+)?$")
_digests: dict[str, tuple] = {}   # path -> (stat signature, digest): large files (headers) are hashed once
_lock = threading.Lock()
_swept: set[str] = set()


def file_digest(path: Path) -> str:
    st = os.stat(path)
    sig = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    with _lock:
        hit = _digests.get(str(path))
    if hit is not None and hit[0] == sig:
        return hit[1]
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    with _lock:
        _digests[str(path)] = (sig, h.hexdigest())
    return h.hexdigest()


def sidecar(path: Path) -> Path:
    return path.with_name(path.name + SUFFIX)


def install(tmp: Path, final: Path) -> None:
    """Rename tmp to final, recording its digest first."""
    digest = file_digest(tmp)
    side = sidecar(final)
    side_tmp = side.with_name(f"{side.name}.tmp.{os.getpid()}.{threading.get_ident()}")
    side_tmp.write_text(digest + "\n")
    os.replace(side_tmp, side)
    os.replace(tmp, final)


def intact(final: Path) -> bool:
    """final exists and its content is what was installed."""
    try:
        want = sidecar(final).read_text().strip()
        return bool(want) and file_digest(final) == want
    except (OSError, UnicodeDecodeError):
        return False


def sweep_leftovers(folder: Path, once: bool = True) -> int:
    """Remove `*.tmp.<pid>[.<tid>]` files of processes that are gone (or older than LEFTOVER_AGE_S); returns the
    count. With once=True a folder is swept once per process."""
    key = str(folder)
    with _lock:
        if once and key in _swept:
            return 0
        _swept.add(key)
    removed, now = 0, time.time()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for e in entries:
        m = _TMP.search(e.name)
        if m is None or not e.is_file(follow_symlinks=False):
            continue
        try:
            if _alive(int(m.group(1))) and now - e.stat(follow_symlinks=False).st_mtime < LEFTOVER_AGE_S:
                continue
            os.unlink(e.path)
            removed += 1
        except OSError:
            pass
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True
