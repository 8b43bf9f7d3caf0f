"""Readable loop tree of a State (in the style of Ansor's state printer)."""
from __future__ import annotations

_KW = {"": "for", "parallel": "parallel", "vectorize": "vectorize", "unroll": "unroll"}


def print_state(state) -> str:
    lines: list[str] = []
    inputs = [t.name for t in state.dag.inputs]
    lines.append("Placeholder: " + ", ".join(inputs))
    for st in state.stages:
        if st.compute_at == "root":
            _print_stage(state, st, 0, lines)
    return "\n".join(lines)


def _print_stage(state, st, indent: int, lines: list) -> None:
    pad = "  " * indent
    for key, value in st.pragmas:
        lines.append(f"{pad}{st.name} {key.replace('auto_unroll_max_step', 'auto_unroll')}: "
                     f"{'?' if value is None else value}")
    for it in st.iters:
        kw = _KW.get(it.annotation, it.annotation)
        ext = "?" if it.extent is None else it.extent
        lines.append(f"{pad}{kw} {it.name} (0,{ext})")
        indent += 1
        pad = "  " * indent
        for name in state.attached_at(st.name, it.name):
            _print_stage(state, state.stage(name), indent, lines)
    lines.append(f"{pad}{st.name} = ...")
