"""ir/passes/verify.py: each check catches what it names on a hand-made program, accepts guarded accesses, and holds
after every pass of both pass lists for sampled programs of every workload."""
import pytest

from ansorc import workloads
from ansorc.codegen.c import CODEGEN_PASSES
from ansorc.codegen.target import Target
from ansorc.ir.program.expr import Binary, Compare, Const, Logic, Read, Select, Var
from ansorc.ir.lowering.lower import lower
from ansorc.ir.passes.basic import DEFAULT_PASSES, default_passes
from ansorc.ir.schedule.state import ScheduleError
from ansorc.ir.lowering.stmt import Allocate, Buffer, For, IfThenElse, PrimFunc, Store, seq
from ansorc.ir.passes.vector import Broadcast, VBinary, VLoad, VStore
from ansorc.ir.passes.verify import (VerifyError, check_allocated_before_use, check_in_bounds, check_loop_vars_scoped,
                                     check_no_nested_parallel, check_vector_lanes, verify)
from ansorc.search.annotate import sample
from ansorc.search.task import HardwareParams, SearchTask

A = Buffer("A", (8, 4), "float32", "arg")
B = Buffer("B", (8, 4), "float32", "arg")
i, j = Var("i"), Var("j")


def func(body, args=(A, B)):
    return PrimFunc("k", tuple(args), 1, body)


def nest(body, ei=8, ej=4, kind="serial"):
    return For("i", ei, kind, For("j", ej, "serial", body))


def plus(a, c):
    return Binary("+", a, Const(c), "int32")


def test_a_correct_nest_passes_every_check():
    f = func(nest(Store("B", (i, j), Read("A", (i, j), "float32"))))
    assert verify(f) is f


def test_check_in_bounds_names_buffer_and_index():
    f = func(nest(Store("B", (plus(i, 1), j), Read("A", (i, j), "float32"))))
    with pytest.raises(VerifyError, match=r"check_in_bounds: store of B\[\(i \+ 1\), j\]: index 0 spans \[1, 8\]") as e:
        check_in_bounds(f)
    assert isinstance(e.value, ScheduleError) and e.value.buffer == "B" and e.value.check == "check_in_bounds"


def test_an_if_guard_or_a_select_arm_counts_as_a_guard():
    shifted = Read("A", (plus(i, -1), j), "float32")
    cond = Compare(">=", i, Const(1))
    check_in_bounds(func(nest(IfThenElse(cond, Store("B", (i, j), shifted)))))
    check_in_bounds(func(nest(Store("B", (i, j), Select(cond, shifted, Const(0.0, "float32"), "float32")))))
    with pytest.raises(VerifyError, match="check_in_bounds: read of A"):
        check_in_bounds(func(nest(Store("B", (i, j), Select(cond, Const(0.0, "float32"), shifted, "float32")))))


def test_guard_proofs_combine_conditions_and_split_min():
    # a split of 8 by 3: i = 3*o + n guarded by 3*o + n < 8; and a compute_at window base min(3*o, 5)
    o, n = Var("o"), Var("n")
    flat = Binary("+", Binary("*", o, Const(3), "int32"), n, "int32")
    guard = Logic("&&", Compare("<", flat, Const(8)), Compare(">=", j, Const(0)))
    body = For("o", 3, "serial", For("n", 3, "serial", For("j", 4, "serial", IfThenElse(
        guard, Store("B", (flat, j), Read("A", (flat, j), "float32"))))))
    check_in_bounds(func(body))
    window = Binary("-", flat, Binary("min", Binary("*", o, Const(3), "int32"), Const(5), "int32"), "int32")
    W = Buffer("W", (3, 4), "float32", "global")
    body = For("o", 3, "serial", For("n", 3, "serial", For("j", 4, "serial", IfThenElse(
        guard, Store("W", (window, j), Read("A", (flat, j), "float32"))))))
    check_in_bounds(func(Allocate(W, body)))


def test_a_guard_on_a_multiple_of_the_index_bounds_it():
    # a reduction over K = 37 split 3 x 4 x 4, reading weights packed in groups of 4 (10 groups): the group
    # index 4*k0 + k1 is bounded through the guard 16*k0 + 4*k1 + g < 37 (4 times it, plus g)
    k0, k1, g = Var("k0"), Var("k1"), Var("g")
    group = Binary("+", Binary("*", k0, Const(4), "int32"), k1, "int32")
    flat = Binary("+", Binary("*", group, Const(4), "int32"), g, "int32")
    P = Buffer("P", (10, 4), "float32", "arg")
    O = Buffer("O", (1,), "float32", "arg")

    def prog(bound):
        return func(For("k0", 3, "serial", For("k1", 4, "serial", For("g", 4, "serial", IfThenElse(
            Compare("<", flat, Const(bound)), Store("O", (Const(0),), Read("P", (group, g), "float32")))))), (P, O))
    check_in_bounds(prog(37))
    check_in_bounds(prog(40))
    with pytest.raises(VerifyError, match="read of P"):
        check_in_bounds(prog(41))


def test_flat_vector_accesses_are_bounded_by_their_last_lane():
    ok = func(For("i", 8, "serial", VStore("B", Binary("*", i, Const(4), "int32"),
                                           VLoad("A", Binary("*", i, Const(4), "int32"), 4, "float32"))))
    check_in_bounds(ok)
    bad = func(For("i", 8, "serial", VStore("B", plus(Binary("*", i, Const(4), "int32"), 1),
                                            Broadcast(Const(0.0, "float32"), 4, "float32"))))
    with pytest.raises(VerifyError, match=r"flat, 4 lanes\): index 0 spans \[1, 29\], not provably within \[0, 28\]"):
        check_in_bounds(bad)


def test_check_allocated_before_use():
    T = Buffer("T", (4,), "float32", "global")
    use = For("j", 4, "serial", Store("T", (j,), Const(1.0, "float32")))
    check_allocated_before_use(func(Allocate(T, use)))
    with pytest.raises(VerifyError, match="check_allocated_before_use: store of T"):
        check_allocated_before_use(func(seq(Allocate(T, Store("T", (Const(0),), Const(0.0, "float32"))), use)))


def test_check_loop_vars_scoped():
    with pytest.raises(VerifyError, match="check_loop_vars_scoped: i is used outside its loop"):
        check_loop_vars_scoped(func(seq(nest(Store("B", (i, j), Const(0.0, "float32"))),
                                        For("j", 4, "serial", Store("B", (i, j), Const(0.0, "float32"))))))
    with pytest.raises(VerifyError, match="check_loop_vars_scoped: loop i reuses"):
        check_loop_vars_scoped(func(For("i", 2, "serial", nest(Store("B", (i, j), Const(0.0, "float32"))))))


def test_check_vector_lanes():
    mixed = VBinary("+", VLoad("A", Const(0), 4, "float32"), VLoad("A", Const(4), 8, "float32"), 4, "float32")
    with pytest.raises(VerifyError, match="check_vector_lanes: VLoad has 8 lanes where 4 are needed"):
        check_vector_lanes(func(VStore("B", Const(0), mixed)))
    with pytest.raises(VerifyError, match="check_vector_lanes"):
        check_vector_lanes(func(Store("B", (Const(0), Const(0)), VLoad("A", Const(0), 4, "float32"))))


def test_check_no_nested_parallel():
    with pytest.raises(VerifyError, match="check_no_nested_parallel"):
        check_no_nested_parallel(func(For("i", 8, "parallel", For("j", 4, "parallel", Store(
            "B", (i, j), Const(0.0, "float32"))))))


def test_verify_says_after_which_pass(monkeypatch):
    monkeypatch.setenv("ANSORC_VERIFY", "1")
    with pytest.raises(VerifyError, match=r"\(after verify_structure\)"):
        default_passes(func(nest(Store("B", (plus(i, 1), j), Const(0.0, "float32")))))
    monkeypatch.setenv("ANSORC_VERIFY", "0")
    default_passes(func(nest(Store("B", (plus(i, 1), j), Const(0.0, "float32")))))  # only on demand


ISAS = ("avx512", "avx2", "neon", "generic")


@pytest.mark.parametrize("name", sorted(workloads.WORKLOADS))
def test_sampled_programs_verify_after_every_pass(name):
    """Every pass of ir/passes/basic.py's list, then of codegen's (per ISA), keeps every invariant."""
    task = SearchTask(workloads.smallest(name), hw=HardwareParams(num_cores=2))
    programs = sample(task, 12, seed=7)
    assert len(programs) >= 6
    for k, state in enumerate(programs):
        func = lower(state, passes=False)
        for p in DEFAULT_PASSES:
            func = verify(p(func), after=p.__name__)
        isa = ISAS[k % len(ISAS)]
        vec = func
        for p in CODEGEN_PASSES:
            vec = verify(p(vec, Target.from_name(isa)), after=f"{p.__name__} ({isa})")


def test_a_lowered_program_without_its_split_guard_fails_check_in_bounds():
    """The guard lowering puts around a split that overshoots (10 = 3 * 4 - 2) is what makes it in bounds."""
    from dataclasses import replace

    import ansorc
    from ansorc.ir.schedule.steps import Split
    from ansorc.ir.passes.vector import stmt_kids, with_kids
    A_, B_, C_ = workloads.matmul(10, 10, 10)
    dag = ansorc.ComputeDAG([A_, B_, C_])
    func = lower(ansorc.replay(dag, [Split("C", "i", (4,))]), passes=False)
    verify(func)

    def unguard(s):
        s = with_kids(s, tuple(unguard(c) for c in stmt_kids(s)))
        return s.then if isinstance(s, IfThenElse) else s
    with pytest.raises(VerifyError, match=r"check_in_bounds: .* of C\[\(\(C_i_0 \* 4\) \+ C_i_1\), C_j\]: index 0 "
                                          r"spans \[0, 11\]"):
        verify(replace(func, body=unguard(func.body)))


# ----------------------------------------------------------------------------- false positives of sampled programs

def _conv_data():
    return Buffer("data", (224,), "float32", "arg")


def _i(op, a, b):
    return Binary(op, a, b if not isinstance(b, int) else Const(b), "int32")


def _ok_read(idx, cond):
    """out[0] = select(cond, data[idx], 0): the select arm is the only guard of the read."""
    out = Buffer("out", (1,), "float32", "arg")
    value = Select(cond, Read("data", (idx,), "float32"), Const(0.0, "float32"), "float32")
    return Store("out", (Const(0),), value), out


def _and(*cs):
    out = cs[0]
    for c in cs[1:]:
        out = Logic("&&", out, c)
    return out


def test_a_floor_division_is_bounded_by_guard_facts_on_itself():
    """T2D (stride-2 transposed conv, pad inlined): data[(h + 3) // 2 - 1] under (h + 1) // 2 < 4 is within [0, 3]."""
    h = Var("h")
    D = Buffer("data", (4,), "float32", "arg")
    half = _i("//", _i("+", h, 1), 2)
    for limit, fails in ((4, False), (5, True)):
        cond = _and(Compare("==", _i("%", _i("+", h, 1), 2), Const(0)), Compare(">=", half, Const(0)),
                    Compare("<", half, Const(limit)))
        body, out = _ok_read(_i("-", _i("//", _i("+", h, 3), 2), 1), cond)
        f = func(For("h", 8, "serial", body), (D, out))
        if fails:
            with pytest.raises(VerifyError, match=r"read of data.*spans \[0, 4\]"):
                check_in_bounds(f)
        else:
            check_in_bounds(f)


def test_the_guard_fact_that_cancels_the_whole_index_wins_over_one_that_cancels_part():
    """DIL (dilated conv, pad inlined): the row p - 3 under the split guard on part of p and the pad select
    3 <= p < 227: the pad fact gives p - 3 <= 223; the split guard, tried first, would leave 225."""
    f_, h3, rh = Var("f"), Var("h3"), Var("rh")
    base = _i("+", _i("*", _i("//", f_, 56), 112), _i("*", _i("%", f_, 14), 8))
    p = _i("+", _i("+", base, _i("*", h3, 2)), _i("*", rh, 2))
    guard = Compare("<", _i("+", _i("+", _i("*", _i("//", f_, 56), 56), _i("*", _i("%", f_, 14), 4)), h3), Const(109))
    body, out = _ok_read(_i("-", p, 3), _and(Compare(">=", p, Const(3)), Compare("<", p, Const(227))))
    prog = func(For("f", 112, "serial", For("h3", 4, "serial", For("rh", 7, "serial", IfThenElse(guard, body)))),
                (_conv_data(), out))
    check_in_bounds(prog)
    loose = _ok_read(_i("-", p, 3), Compare(">=", p, Const(3)))[0]
    with pytest.raises(VerifyError, match="read of data"):
        check_in_bounds(func(For("f", 112, "serial", For("h3", 4, "serial", For("rh", 7, "serial", IfThenElse(
            guard, loose)))), (_conv_data(), out)))


def test_a_min_arm_that_contradicts_the_guard_is_left_out():
    """DIL (pad at a compute_at window): data[min(16 * (c % 7), 93) * 2 + 38] under min(..) * 2 + 41 < 227; the
    arm 93 would give 224, but the guard excludes it (93 * 2 + 41 = 227)."""
    c = Var("c")
    m = _i("min", _i("*", _i("%", c, 7), 16), 93)
    idx = _i("+", _i("*", m, 2), 38)
    for limit, fails in ((227, False), (228, True)):
        body, out = _ok_read(idx, Compare("<", _i("+", _i("*", m, 2), 41), Const(limit)))
        prog = func(For("c", 28, "serial", body), (_conv_data(), out))
        if fails:
            with pytest.raises(VerifyError, match=r"read of data.*spans \[38, 224\]"):
                check_in_bounds(prog)
        else:
            check_in_bounds(prog)


def test_a_fused_loop_beside_its_parts_in_a_flat_local_index():
    """DIL (cache_write at a fused loop f = 16 * h0 + w0): the flat index of the (8, 7, 64) local tile,
    (h - min(16 * h0 + 8 * h1, 101)) * 448 + (w - min(7 * w0, 102)) * 64, which simplify writes with f * 448
    next to f // 16 and f % 16; read as 16 lanes under the split guards it stays within [0, 3568]."""
    f_, h1, h2, w2 = Var("f"), Var("h1"), Var("h2"), Var("w2")
    hb = _i("min", _i("+", _i("*", _i("//", f_, 16), 16), _i("*", h1, 8)), 101)
    wb = _i("min", _i("*", _i("%", f_, 16), 7), 102)
    idx = _i("-", _i("-", _i("+", _i("+", _i("+", _i("*", h1, 3584), _i("*", h2, 448)), _i("*", w2, 64)),
                                  _i("*", f_, 448)), _i("*", hb, 448)), _i("*", wb, 64))
    L = Buffer("L", (1, 8, 7, 64), "float32", "local")
    out = Buffer("out", (16,), "float32", "arg")
    for limit, fails in ((109, False), (110, True)):
        guard = _and(Compare("<", _i("+", _i("*", _i("%", f_, 16), 7), w2), Const(limit)),
                     Compare("<", _i("+", _i("+", _i("*", _i("//", f_, 16), 16), _i("*", h1, 8)), h2), Const(109)))
        body = IfThenElse(guard, VStore("out", Const(0), VLoad("L", idx, 16, "float32")))
        prog = func(Allocate(L, For("f", 112, "serial", For("h1", 2, "serial", For("h2", 8, "serial", For(
            "w2", 7, "serial", body))))), (out,))
        if fails:
            with pytest.raises(VerifyError, match=r"read of L\[.*\(flat, 16 lanes\)"):
                check_in_bounds(prog)
        else:
            check_in_bounds(prog)


def test_a_sampled_transposed_conv_with_inlined_padding_verifies_after_every_pass():
    """T2D 3 of tests/render_programs.py's samples (its steps, on the phase form), once reported by
    check_in_bounds."""
    import ansorc
    from ansorc.ir.schedule.steps import (Annotate, CacheWrite, ComputeAt, ComputeInline, FollowSplit, Fuse, Pragma,
                                          Reorder, Split)
    # the steps tile the phase convolution (conv_phases); the interleaving copy "conv" stays at the root
    P = "conv_phases"
    L, T = f"{P}.local", ("n", "ph", "pw", "qh.0", "qw.0", "co.0", "qh.1", "qw.1", "co.1")
    steps = [CacheWrite(P, "local"), Split(L, "qh", (1, 4, 1)), Split(L, "qw", (4, 1, 1)), Split(L, "co", (1, 1, 2)),
             Split(L, "rh", (2,)), Split(L, "rw", (1,)), Split(L, "rc", (4,)),
             Reorder(L, T + ("rh.0", "rw.0", "rc.0", "qh.2", "qw.2", "co.2", "rh.1", "rw.1", "rc.1", "qh.3", "qw.3",
                             "co.3")),
             FollowSplit(P, "qh", 1, 2), FollowSplit(P, "qw", 2, 2), FollowSplit(P, "co", 3, 2),
             Reorder(P, T + ("qh.2", "qw.2", "co.2")), ComputeAt(L, P, "co.1"), ComputeInline("pad"),
             Fuse(P, ("n", "ph", "pw", "qh.0", "qw.0", "co.0")), Annotate(P, "n@ph@pw@qh.0@qw.0@co.0", "parallel"),
             Pragma(L, "n", "auto_unroll_max_step", 512), Annotate(L, "co.3", "vectorize"),
             Annotate(P, "co.2", "vectorize")]
    fn, shapes = workloads.WORKLOADS["T2D"]
    func_ = lower(ansorc.replay(ansorc.ComputeDAG(fn(*shapes[0])), steps), passes=False)
    for p in DEFAULT_PASSES:
        func_ = verify(p(func_), after=p.__name__)
    for p in CODEGEN_PASSES:
        func_ = verify(p(func_, Target.from_name("avx512")), after=p.__name__)


def test_a_cooperative_fetch_index_is_bounded_through_its_fused_value():
    """CAP on the GPU (shared-memory fetch of a (3, 2, 16) tile by 64 threads): S[2 * a + b // 32, ...] under the
    guard 64 * a + b < 96 on the fused value is S[(64 * a + b) // 32, ...], within [0, 2]."""
    a, b = Var("a"), Var("b")
    S = Buffer("S", (3, 2, 16), "float32", "shared")
    idx = (_i("+", _i("*", a, 2), _i("//", b, 32)), _i("%", _i("//", b, 16), 2), _i("%", b, 16))
    for limit, fails in ((96, False), (97, True)):
        guard = Compare("<", _i("+", _i("*", a, 64), b), Const(limit))
        prog = func(Allocate(S, For("a", 2, "serial", For("b", 64, "serial", IfThenElse(guard, Store(
            "S", idx, Const(0.0, "float32")))))), ())
        if fails:
            with pytest.raises(VerifyError, match=r"store of S\[.*index 0 spans \[0, 3\]"):
                check_in_bounds(prog)
        else:
            check_in_bounds(prog)
