"""The unroll pass: auto_unroll_max_step and 'unroll' loops are replicated, unless the copies would be huge."""
from ansorc.ir.program.expr import Binary, Const, Read, Var
from ansorc.ir.passes.basic import MAX_UNROLLED_NODES, _nodes, unroll_loops
from ansorc.ir.lowering.stmt import Buffer, For, PrimFunc, Store, walk_stmt

F32 = "float32"


def loops_left(fn):
    return [s.var for s in walk_stmt(fn.body) if isinstance(s, For)]


def program(terms, extent=512, max_step=512):
    """for i in [0, extent) with auto_unroll=max_step: C[i] = A[i] + A[i] * 1 + ... (`terms` products)."""
    A, C = Buffer("A", (extent,), F32, "arg"), Buffer("C", (extent,), F32, "arg")
    i = Var("i")
    value = Read("A", (i,), F32)
    for t in range(terms):
        value = Binary("+", value, Binary("*", Read("A", (i,), F32), Const(float(t), F32), F32), F32)
    body = For("i", extent, "serial", Store("C", (i,), value), auto_unroll=max_step)
    return PrimFunc("k", (A, C), 1, body)


def test_small_bodies_are_replicated_within_max_step():
    fn = program(terms=2)
    assert loops_left(unroll_loops(fn)) == []
    assert loops_left(unroll_loops(program(terms=2, max_step=256))) == ["i"]  # 512 steps > 256


def test_huge_copies_stay_a_loop():
    big = program(terms=40)  # ~200 nodes per copy: 512 copies would be ~100k nodes of C
    body_nodes = _nodes(big.body.body)
    assert 512 * body_nodes > MAX_UNROLLED_NODES
    assert loops_left(unroll_loops(big)) == ["i"]
    assert loops_left(unroll_loops(program(terms=40, extent=16, max_step=512))) == []  # 16 copies fit
