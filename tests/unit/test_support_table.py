"""docs/networks.md embeds the support table generated from ansorc.net.ops.SUPPORT."""
from pathlib import Path

from tests.scripts import load_script

ROOT = Path(__file__).resolve().parents[2]


def _tool():
    return load_script("tools/support_table.py")


def test_docs_table_matches_the_support_table():
    tool = _tool()
    doc = (ROOT / "docs" / "networks.md").read_text()
    assert tool.embed(doc, tool.table()) == doc, "docs/networks.md is stale: run python tools/support_table.py --write"


def test_table_lists_the_ops_networks_need():
    from ansorc.net.ops import SUPPORT
    need = {"Conv", "Gemm", "MatMul", "Add", "Relu", "Clip", "MaxPool", "GlobalAveragePool", "Flatten", "Reshape",
            "Transpose", "Concat", "Gather", "Softmax", "LayerNormalization", "ReduceMean", "Erf", "Sqrt", "Pow"}
    assert need <= set(SUPPORT), sorted(need - set(SUPPORT))


def test_every_family_with_a_table_is_in_the_one_table():
    import importlib
    import pkgutil

    import ansorc.net.ops as ops
    with_table = {m.name for m in pkgutil.iter_modules(ops.__path__)
                  if getattr(importlib.import_module(f"ansorc.net.ops.{m.name}"), "OPS", None)}
    assert with_table == set(ops.FAMILIES)
    assert len(ops.SUPPORT) == sum(len(importlib.import_module(f"ansorc.net.ops.{f}").OPS) for f in ops.FAMILIES)
