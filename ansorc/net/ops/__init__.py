"""ONNX operators as te, one module per family; SUPPORT is the one support table: ONNX op type -> common.OpSpec
(lowering, dtypes, attributes, notes; docs/networks.md lists it). A new operator goes in its family's module's
OPS and that module in FAMILIES. The table is built on first use, so importing one family stays light."""
from __future__ import annotations

import importlib

FAMILIES = ("elementwise", "activation", "trig", "shape", "shape_const", "resize", "gather", "nn", "attention",
            "conv", "einsum", "pool", "norm", "norm_more", "reduce", "recurrent",
            "quant", "quant_linear")
_TABLE: dict = {}


def table(*families: str) -> dict:
    """The rows of these families (all of FAMILIES by default), refusing an op that two of them define."""
    table, where = {}, {}
    for family in families or FAMILIES:
        for op, spec in importlib.import_module(f"{__name__}.{family}").OPS.items():
            if op in table:
                raise RuntimeError(f"ONNX op {op!r} is in the tables of both {where[op]} and {family}")
            table[op], where[op] = spec, family
    return table


def __getattr__(name: str):
    if name == "SUPPORT":
        if not _TABLE:
            _TABLE.update(table())
        return _TABLE
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
