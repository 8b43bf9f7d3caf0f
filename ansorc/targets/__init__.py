"""The target registry: each kind of target is one plug-in package, named here by one line.

A plug-in package (ansorc/targets/<kind>/) exports `PLUGIN`, a TargetPlugin holding the kind's target type,
pass list and renderer, builder and runner, search policy, kernel loader and exporter. Its own modules take
their layer from the first word of their file name (codegen_*, measure_*, search_*, ir_*; others are
top-level), as tests/unit/test_layering.py checks. The registry imports plug-ins when first asked, so that any
layer may parse a target name.
"""
from __future__ import annotations

import importlib

from .base import Target, TargetPlugin

PLUGINS = {   # kind -> plug-in package; names are offered to each in this order
    "cpu": "ansorc.targets.cpu",
    "cuda": "ansorc.targets.cuda",
    "scalar": "ansorc.targets.scalar",
}


def plugin_of_kind(kind: str) -> TargetPlugin:
    if kind not in PLUGINS:
        raise ValueError(f"unknown target kind {kind!r}; known: {', '.join(PLUGINS)}")
    return importlib.import_module(PLUGINS[kind]).PLUGIN


def known_names() -> tuple:
    """Every target name the plug-ins offer (for help texts and errors)."""
    return tuple(n for kind in PLUGINS for n in plugin_of_kind(kind).names)


def parse(name: "str | Target | None" = "native", cc: str | None = None) -> Target:
    """The Target `name` names (a Target is returned as it is); ValueError naming the known names."""
    if isinstance(name, Target):
        return name
    name = name or "native"
    for kind in PLUGINS:
        target = plugin_of_kind(kind).parse(name, cc)
        if target is not None:
            return target
    raise ValueError(f"unknown target {name!r}; known: {', '.join(known_names())}")


def plugin(target: "str | Target | None") -> TargetPlugin:
    """The plug-in of a target or target name."""
    return plugin_of_kind(parse(target).kind)


__all__ = ["Target", "TargetPlugin", "PLUGINS", "parse", "plugin", "plugin_of_kind", "known_names"]
