"""Exporting a kernel for embedding: lib<name>.so, <name>.h and <name>.c, built from its KernelSpec with the
compiler and flags it was built with (for its target, not this machine's -march=native).

The library also defines <name>_ansorc_signature() (its arguments as JSON, kept in the ELF section `.ansorc_sig`),
which `ansorc.load` reads from the file and checks against the header before loading the library. Every file is
written under a temporary name in the output folder, synced, then renamed into place: a process that has the
previous lib<name>.so mapped keeps running on the old file instead of dying of SIGBUS."""
from __future__ import annotations

import os
import shlex
import tempfile
from dataclasses import replace
from pathlib import Path

from .codegen.header import render_header, signature_function
from .codegen.target import compile_flags
from .errors import AnsorcError
from .ir.program.names import is_c_ident
from .measure.builder import build as build_sources
from .spec import KernelSpec


class ExportError(AnsorcError, RuntimeError):
    """The kernel cannot be exported (bad name, build failure) or an exported one cannot be loaded."""


def write_atomically(path: Path, data: bytes) -> None:
    """Replace `path` by a new file holding `data`; readers see the old file or the new one, never a mix."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; exported files are for others to read
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _sync_dir(path.parent)


def _sync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:   # some file systems cannot sync a directory; the rename itself is still atomic
        pass
    finally:
        os.close(fd)


def export(spec: KernelSpec, outdir, name: str) -> dict:
    """Render `spec` with entry point `name` (a C identifier), build it, and write <name>.c, <name>.h and
    lib<name>.so into outdir; returns their paths by "c", "h", "so"."""
    if not is_c_ident(name):
        raise ExportError(f"kernel name {name!r} is not a valid C identifier")
    plain = spec.source(name)
    extra = signature_function(plain)
    source = replace(plain, code=plain.code + extra, parts=plain.parts and (*plain.parts, ("signature", extra[1:])))
    [res] = build_sources([source], target_flags=spec.flags, cc=spec.cc)
    if not res.ok:
        raise ExportError(f"building {name} failed: {res.error_msg}")
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"c": out / f"{name}.c", "h": out / f"{name}.h", "so": out / f"lib{name}.so"}
    build_line = f"{spec.cc} {shlex.join(compile_flags(spec.flags, spec.cc))} -o lib{name}.so {name}.c -lm"
    header = render_header(plain, spec.provenance_dict, spec.expression, build_line)
    # the header goes last in the .c: before the code, its <stdint.h> would come ahead of the code's
    # _POSIX_C_SOURCE (posix_memalign); after it, the compiler still checks the prototype against the definition
    c_text = f'{source.code}\n/* the header must agree with the definitions above */\n#include "{name}.h"\n'
    write_atomically(paths["so"], Path(res.lib_path).read_bytes())
    write_atomically(paths["h"], header.encode("utf-8"))
    write_atomically(paths["c"], c_text.encode("utf-8"))
    return {k: str(v) for k, v in paths.items()}


__all__ = ["ExportError", "export", "write_atomically"]
