"""Exporting a kernel for embedding: lib<name>.so, <name>.h and <name>.c, built from its KernelSpec with the
compiler and flags it was built with (for its target, not this machine's -march=native)."""
from __future__ import annotations

import shlex
import shutil
from pathlib import Path

from .codegen.header import render_header
from .errors import AnsorcError
from .ir.names import is_c_ident
from .measure.builder import build as build_sources
from .spec import KernelSpec


class ExportError(AnsorcError, RuntimeError):
    """The kernel cannot be exported (bad name, build failure) or an exported one cannot be loaded."""


def export(spec: KernelSpec, outdir, name: str) -> dict:
    """Render `spec` with entry point `name` (a C identifier), build it, and write <name>.c, <name>.h and
    lib<name>.so into outdir; returns their paths by "c", "h", "so"."""
    if not is_c_ident(name):
        raise ExportError(f"kernel name {name!r} is not a valid C identifier")
    source = spec.source(name)
    [res] = build_sources([source], target_flags=spec.flags, cc=spec.cc)
    if not res.ok:
        raise ExportError(f"building {name} failed: {res.error_msg}")
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"c": out / f"{name}.c", "h": out / f"{name}.h", "so": out / f"lib{name}.so"}
    build_line = f"{spec.cc} {shlex.join(spec.flags)} -o lib{name}.so {name}.c -lm"
    paths["h"].write_text(render_header(source, spec.provenance_dict, spec.expression, build_line))
    paths["c"].write_text(f'#include "{name}.h"\n' + source.code)
    shutil.copyfile(res.lib_path, paths["so"])
    return {k: str(v) for k, v in paths.items()}


__all__ = ["ExportError", "export"]
