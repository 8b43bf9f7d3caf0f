"""fast_init: the IR's frozen dataclasses get a dict-writing __init__ that builds the same objects."""
from dataclasses import dataclass, field

import pytest

from ansorc.ir.lowering.stmt import For, Store
from ansorc.ir.program.expr import Binary, Const, Read, Var
from ansorc.ir.program.frozen import fast_init
from ansorc.ir.schedule.state import State


@fast_init
@dataclass(frozen=True)
class _Point:
    x: int
    y: int = 2
    tag: object = field(default=None, compare=False)


def test_fields_defaults_and_keywords_are_kept():
    assert (_Point(1).x, _Point(1).y, _Point(1).tag) == (1, 2, None)
    assert _Point(1, y=5, tag="t") == _Point(1, 5) and _Point(1, 5).tag is None
    assert _Point(y=3, x=4) == _Point(4, 3)
    with pytest.raises(TypeError):
        _Point()
    with pytest.raises(TypeError):
        _Point(1, 2, 3, 4)
    with pytest.raises(AttributeError):   # still frozen
        _Point(1).x = 3


def test_what_it_cannot_reproduce_keeps_the_dataclass_init():
    @dataclass(frozen=True)
    class Listed:
        xs: list = field(default_factory=list)

    @dataclass(frozen=True)
    class Checked:
        x: int

        def __post_init__(self):
            if self.x < 0:
                raise ValueError("negative")
    before = Listed.__init__, Checked.__init__
    assert (fast_init(Listed).__init__, fast_init(Checked).__init__) == before
    with pytest.raises(ValueError):
        Checked(-1)


def test_ir_nodes_build_as_before():
    i = Var("i", "int32")
    e = Binary("+", Read("A", (i,), "float32"), Const(1.0, "float32"), "float32")
    assert e.a.indices == (i,) and e.a.tensor is None and hash(e) == hash(Binary("+", e.a, e.b, "float32"))
    loop = For("i", 4, "serial", Store("B", (i,), e))
    assert loop.auto_unroll == 0 and loop.body.value is e
    assert State(None).stages == () and State(None).steps == ()
