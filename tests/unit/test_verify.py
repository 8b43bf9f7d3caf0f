"""ir/verify.py: each check catches what it names on a hand-made program, accepts guarded accesses, and holds
after every pass of both pass lists for sampled programs of every workload."""
import pytest

from ansorc import workloads
from ansorc.codegen.c import CODEGEN_PASSES
from ansorc.codegen.target import Target
from ansorc.ir.expr import Binary, Compare, Const, Logic, Read, Select, Var
from ansorc.ir.lower import lower
from ansorc.ir.passes import DEFAULT_PASSES, default_passes
from ansorc.ir.state import ScheduleError
from ansorc.ir.stmt import Allocate, Buffer, For, IfThenElse, PrimFunc, Store, seq
from ansorc.ir.vector import Broadcast, VBinary, VLoad, VStore
from ansorc.ir.verify import (VerifyError, check_allocated_before_use, check_in_bounds, check_loop_vars_scoped,
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
    """Every pass of ir/passes.py's list, then of codegen's (per ISA), keeps every invariant."""
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
    from ansorc.ir.steps import Split
    from ansorc.ir.vector import stmt_kids, with_kids
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
