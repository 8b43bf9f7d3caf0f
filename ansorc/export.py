"""Exporting a kernel for embedding (lib<name>.so, <name>.h, <name>.c) and loading it back."""
from __future__ import annotations

import shutil
from pathlib import Path

from .codegen.header import read_signature, render_header
from .codegen.source import ArgSpec, Source
from .ir.names import is_c_ident
from .kernel import Kernel
from .measure.builder import DEFAULT_CFLAGS, build as build_sources


class ExportError(RuntimeError):
    pass


def export_source(source: Source, outdir, provenance: dict | None = None, expression: str = "",
                  flags=DEFAULT_CFLAGS, cc: str = "gcc") -> dict:
    """Write <name>.c, <name>.h and lib<name>.so for a Source whose entry is the kernel name."""
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    name = source.entry
    [res] = build_sources([source], target_flags=flags, cc=cc)
    if not res.ok:
        raise ExportError(res.error_msg)
    paths = {"c": out / f"{name}.c", "h": out / f"{name}.h", "so": out / f"lib{name}.so"}
    header = render_header(source, provenance, expression)
    paths["h"].write_text(header)
    paths["c"].write_text(f'#include "{name}.h"\n' + source.code)
    shutil.copyfile(res.lib_path, paths["so"])
    return {k: str(v) for k, v in paths.items()}


def export_kernel(kernel: Kernel, outdir, name: str | None = None) -> dict:
    """Kernel.export: regenerate under `name` (the C symbol) and write the three files."""
    name = name or kernel.name
    if not is_c_ident(name):
        raise ExportError(f"kernel name {name!r} is not a valid C identifier")
    regen = kernel.meta.get("regenerate")
    if regen is None:
        raise ExportError("this kernel cannot be re-exported under a new name (it was loaded from a library)")
    source = regen(name)
    return export_source(source, outdir, kernel.meta.get("provenance"), kernel.meta.get("expression", ""))


def load(path) -> Kernel:
    """Load an exported library back as a Kernel: `path` is lib<name>.so (its <name>.h must sit beside it)
    or the output directory holding exactly one exported kernel."""
    p = Path(path)
    if p.is_dir():
        libs = sorted(p.glob("lib*.so"))
        if len(libs) != 1:
            raise ExportError(f"{p}: expected one lib<name>.so, found {[x.name for x in libs]}")
        p = libs[0]
    if not p.exists():
        raise ExportError(f"{p}: no such file")
    name = p.name[3:-3] if p.name.startswith("lib") and p.name.endswith(".so") else p.stem
    header = p.with_name(f"{name}.h")
    if not header.exists():
        raise ExportError(f"{p}: the header {header.name} must be next to the library")
    sig = read_signature(header.read_text())
    args = tuple(ArgSpec(a["name"], tuple(a["shape"]), a["dtype"], bool(a["output"])) for a in sig["args"])
    source = Source(p.with_name(f"{name}.c").read_text() if p.with_name(f"{name}.c").exists() else "",
                    sig["entry"], args)
    return Kernel(source, str(p.resolve()), {"header": str(header)})
