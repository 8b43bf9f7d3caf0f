"""A faster __init__ for the IR's frozen dataclasses.

A frozen dataclass's generated __init__ sets each field through object.__setattr__, which the frozen class routes
around its own __setattr__: about twice the cost of writing the instance dict. Lowering builds expression and
statement nodes by the hundred thousand for every search round (each scored program is lowered), and those
__init__ calls were a tenth of a tuning run's CPU time. `fast_init` replaces __init__ with one that writes the
fields into the instance dict directly: the same fields, defaults and order, so the same objects."""
from __future__ import annotations

from dataclasses import MISSING, fields


def fast_init(cls):
    """Class decorator, applied above @dataclass(frozen=True): a dict-writing __init__. Classes it cannot
    reproduce exactly (a __post_init__, init=False fields, keyword-only fields, default factories, __slots__)
    keep theirs."""
    fs = fields(cls)
    if hasattr(cls, "__post_init__") or "__slots__" in cls.__dict__ or \
            any(not f.init or f.kw_only or f.default_factory is not MISSING for f in fs):
        return cls
    params, defaults = [], {}
    for f in fs:
        if f.default is MISSING:
            params.append(f.name)
        else:
            defaults[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
    lines = [f"def __init__(self, {', '.join(params)}):", "    d = self.__dict__"]
    lines += [f"    d[{f.name!r}] = {f.name}" for f in fs] or ["    pass"]
    namespace: dict = {}
    exec("\n".join(lines), dict(defaults), namespace)   # noqa: S102 - source built from the class's own field names
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = cls.__init__.__doc__
    cls.__init__ = init
    return cls


__all__ = ["fast_init"]
