"""transpose_copies (passes/transpose.py) copies exactly what the gathering loop copied: every destination element from
the same source element, each once; it applies only where the target has a transpose for the lanes."""
from dataclasses import replace

import pytest

from ansorc import te
from ansorc.codegen import c as c_codegen, simd
from ansorc.codegen.target import Target
from ansorc.ir.program.dag import ComputeDAG
from ansorc.ir.program.expr import Const, substitute
from ansorc.ir.lowering.lower import lower
from ansorc.ir.passes.basic import run_passes
from ansorc.ir.program.simplify import simplify
from ansorc.ir.schedule.state import State
from ansorc.ir.schedule.steps import Annotate, Reorder, Split
from ansorc.ir.lowering.stmt import Allocate, For, Seq
from ansorc.ir.passes.transpose import transpose_copies
from ansorc.ir.passes.vector import VLanes, VStore, VTranspose, stmt_kids, walk_all, with_kids
from ansorc.ir.passes.verify import VerifyError, verify
from ansorc.ir.passes.vectorize import flat_index


def _program(rows: int, cols: int, lanes: int, isa: str = "avx2"):
    a = te.placeholder((rows, cols), "float32", "a")
    b = te.compute((cols, rows), lambda i, j: a[j, i], name="b")
    st = State.initial(ComputeDAG([a, b])).apply(Split("b", "j", (lanes,)))
    st = st.apply(Reorder("b", ("j.0", "i", "j.1"))).apply(Annotate("b", "j.1", "vectorize"))
    passes = tuple(p for p in c_codegen.CODEGEN_PASSES if p is not c_codegen.transpose)
    return run_passes(lower(st, "k"), passes, Target.from_name(isa))


def _value(e, env: dict) -> int:
    got = simplify(substitute(e, {k: Const(v, "int32") for k, v in env.items()}))
    assert isinstance(got, Const), got
    return got.value


def _copies(s, env: dict, shapes: dict, out: list) -> list:
    """[(dst flat index, src flat index)] in the order the program stores them."""
    if isinstance(s, For):
        for v in range(s.extent):
            _copies(s.body, {**env, s.var: v}, shapes, out)
    elif isinstance(s, (Seq, Allocate)):
        for c in (s.stmts if isinstance(s, Seq) else (s.body,)):
            _copies(c, env, shapes, out)
    elif isinstance(s, VStore) and isinstance(s.value, VLanes):
        base = _value(s.index, env)
        out += [(base + k, _value(flat_index(e.indices, shapes[e.name]), env)) for k, e in enumerate(s.value.elems)]
    elif isinstance(s, VTranspose):
        d, src = _value(s.index, env), _value(s.src_index, env)
        out += [(d + k * s.stride + lane, src + lane * s.src_stride + k) for k in range(s.lanes) for lane in
                range(s.lanes)]
    return out


def test_the_blocks_copy_every_element_from_where_the_gathers_did():
    # 16 lanes on AVX2 and 8 on NEON are vectorized as two pieces: one block each
    for rows, cols, lanes, isa in ((40, 24, 8, "avx2"), (24, 12, 4, "avx2"), (8, 16, 8, "avx2"), (48, 32, 16, "avx2"),
                                   (40, 24, 8, "neon")):
        func = _program(rows, cols, lanes, isa)
        shapes = {b.name: b.shape for b in func.args}
        blocked = verify(transpose_copies(func, simd.caps(isa)))
        pieces = max(1, lanes // max(n for d, n in simd.caps(isa).types if d == "float32"))
        assert sum(isinstance(s, VTranspose) for s in walk_all(blocked.body)) == pieces
        before, after = _copies(func.body, {}, shapes, []), _copies(blocked.body, {}, shapes, [])
        assert sorted(before) == sorted(after) and len(set(d for d, _ in after)) == rows * cols


def test_only_where_the_target_has_the_transpose_and_rows_do_not_share_sets():
    func = _program(40, 24, 8)
    assert transpose_copies(func, simd.caps("generic")) == func      # no vectors there at all
    for rows, cols in ((256, 16), (16, 1024)):                           # b's rows 1 KB apart; a's 4 KB apart
        wide = _program(rows, cols, 8)
        assert transpose_copies(wide, simd.caps("avx2")) == wide


def test_a_loop_with_an_empty_body_is_left_alone():
    empty = For("v", 8, "serial", Seq(()))
    func = _program(40, 24, 8)
    assert transpose_copies(replace(func, body=empty), simd.caps("avx2")).body == empty


def test_the_verifier_checks_every_row_of_a_block():
    """A block whose last source row would lie past the buffer is reported, as a vector load there would be."""
    func = _program(40, 24, 8)
    blocked = transpose_copies(func, simd.caps("avx2"))
    [block] = [s for s in walk_all(blocked.body) if isinstance(s, VTranspose)]
    wrong = replace(block, src_stride=block.src_stride + 1)
    bad = replace(blocked, body=_swap(blocked.body, block, wrong))
    with pytest.raises(VerifyError, match="check_in_bounds"):
        verify(bad)


def _swap(s, old, new):
    if s is old:
        return new
    return with_kids(s, tuple(_swap(c, old, new) for c in stmt_kids(s)))
