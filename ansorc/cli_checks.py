"""The command line's checks of what a user names: output folder, log, kernel name, compiler; and what `show`
prints (escaped, GFLOP/s rounded). Each failure is one line (CliError, exit 2) before any work starts."""
from __future__ import annotations

import os
import re
import shutil
import stat
from pathlib import Path

from .errors import AnsorcError

EXIT_BAD_INPUT = 2
LOG_PROBE_BYTES = 4096   # enough of a log's first line to see that it is a JSON record
_PROGRAM = re.compile(r"[A-Za-z0-9_.+/-]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")


class CliError(AnsorcError):
    def __init__(self, message: str, code: int = EXIT_BAD_INPUT):
        super().__init__(message)
        self.code = code


def check_output_dir(path: str) -> None:
    """-o names a folder that exists or can be created (not a file, not /dev/null, not under a file)."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise CliError(f"-o {path}: exists and is not a directory (expected a folder for lib<name>.so, <name>.h "
                       "and <name>.c)")
    parent = p
    while not parent.exists():  # the folder is created later; its nearest existing ancestor must be a folder
        parent = parent.parent
    if not parent.is_dir():
        raise CliError(f"-o {path}: {parent} is not a directory (expected a folder for the exported files)")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise CliError(f"-o {path}: {parent} is not writable (expected a folder you can write to)")


def check_log(path: str, must_exist: bool = False, writes: bool = False) -> None:
    """--log / show: a tuning log (JSON lines, or .gz), or for --log a file not there yet. Refuses folders, devices,
    and files that are something else (an expression file would get JSON appended to it). `writes`: tuning will
    append to it, so it (or the folder it will be made in) must be writable now, not after the tuning ran."""
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        if must_exist:
            raise CliError(f"{path}: no such file (expected a tuning log written by 'ansorc tune')") from None
        if writes:
            _check_creatable(path)
        return
    except OSError as e:
        raise CliError(f"{path}: {e.strerror or e} (expected a tuning log)") from None
    if stat.S_ISDIR(st.st_mode):
        raise CliError(f"{path}: is a directory (expected a tuning log file, e.g. {p / 'tune.jsonl'})")
    if not stat.S_ISREG(st.st_mode):
        raise CliError(f"{path}: is not a regular file (expected a tuning log file)")
    if p.suffix == ".te":
        raise CliError(f"{path}: is an expression file, not a tuning log (expected e.g. {p.with_suffix('.jsonl')})")
    if p.suffix == ".gz":
        return
    try:
        with open(p, "rb") as f:
            head = f.read(LOG_PROBE_BYTES).lstrip()
    except OSError as e:
        raise CliError(f"{path}: {e.strerror or e} (expected a readable tuning log)") from None
    if head and not head.startswith(b"{"):
        raise CliError(f"{path}: not a tuning log (its first line is not a JSON record; expected a log written "
                       "by 'ansorc tune', or a new file)")
    if writes and not os.access(p, os.W_OK):
        raise CliError(f"{path}: not writable (tuning appends its measurements to the log)")


def _check_creatable(path: str) -> None:
    """A new log's nearest existing ancestor is a folder this user can write in (the log's folders are made)."""
    parent = Path(path).parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise CliError(f"--log {path}: {parent} is not a writable folder (tuning appends its measurements to the "
                       "log)")


def check_kernel_name(name: str) -> None:
    from .ir.program.c_reserved import reserved_reason
    from .ir.program.names import is_c_ident
    if not is_c_ident(name):
        raise CliError(f"--name {name!r}: not a valid C identifier (letters, digits, _; not a C keyword)")
    why = reserved_reason(name)
    if why:
        raise CliError(f"--name {name}: {why}; the exported symbol would clash with it (expected another name)")


def check_compiler(cc: str | None) -> str | None:
    """--cc (else $CC): one program, installed. Returns it (None: the default, gcc)."""
    source = "--cc" if cc else "CC"
    cc = cc or os.environ.get("CC", "").strip() or None
    if cc is None:
        return None
    if not _PROGRAM.fullmatch(cc):
        raise CliError(f"{source} {cc!r}: expected one compiler program (gcc, clang or a path to one), no options")
    if shutil.which(cc) is None:
        hint = " (Debian/Ubuntu: apt-get install clang libomp-dev)" if "clang" in cc else ""
        raise CliError(f"{source} {cc}: compiler not found{hint}")
    return cc


def printable(text) -> str:
    """`text` with control and bidirectional-override characters escaped, so a log cannot drive the terminal."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), str(text))


def significant(x: float, digits: int = 4) -> float:
    """x to `digits` significant digits, for GFLOP/s in JSON: a 64-element kernel's 0.003 GFLOP/s is not 0.0."""
    return float(f"{x:.{digits}g}")


def gflops_text(x: float) -> str:
    """GFLOP/s for a table column: one decimal, two significant digits below 0.1."""
    return f"{x:.1f}" if x >= 0.1 else f"{x:.2g}"


__all__ = ["CliError", "check_output_dir", "check_log", "check_kernel_name", "check_compiler", "printable",
           "significant", "gflops_text"]
