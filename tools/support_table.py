"""Print the ONNX support table (ansorc.net.ops.SUPPORT) as markdown; docs/networks.md embeds it between
the markers below, and tests/unit/test_support_table.py fails when the two differ.

    python tools/support_table.py            # print
    python tools/support_table.py --write    # rewrite the table in docs/networks.md
"""
from __future__ import annotations

import sys
from pathlib import Path

BEGIN, END = "<!-- support-table:begin -->", "<!-- support-table:end -->"
DOC = Path(__file__).resolve().parent.parent / "docs" / "networks.md"


def table() -> str:
    from ansorc.net.ops import SUPPORT
    rows = ["| op | input dtypes | attributes | notes |", "| --- | --- | --- | --- |"]
    for op in sorted(SUPPORT):
        spec = SUPPORT[op]
        attrs = ", ".join(a for a in spec.attrs if not a.startswith("_")) or "-"
        rows.append(f"| {op} | {', '.join(spec.dtypes)} | {attrs} | {spec.note or ''} |")
    return "\n".join(rows + contrib_rows())


def contrib_rows() -> list:
    """onnxruntime's com.microsoft quantized ops, rewritten at import (ansorc/net/qoperator_pass.py)."""
    from ansorc.net.qoperator_pass import QOPS, SAME
    rows = []
    for op, q in sorted(QOPS.items()):
        how = f"DequantizeLinear -> {q.float_op} -> QuantizeLinear at import"
        rows.append(f"| {op} (com.microsoft) | int8, uint8 | {', '.join(q.attrs + q.own) or '-'} | "
                    f"{how}{'; ' + q.note if q.note else ''} |")
    return rows + [f"| {op} (com.microsoft) | see {op} | {', '.join(attrs)} | as ONNX's {op} |"
                   for op, attrs in sorted(SAME.items())]


def embed(text: str, tbl: str) -> str:
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{tbl}\n{END}{tail}"


if __name__ == "__main__":
    if "--write" in sys.argv:
        DOC.write_text(embed(DOC.read_text(), table()))
    else:
        print(table())
