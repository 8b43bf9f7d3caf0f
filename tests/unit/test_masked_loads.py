"""Masked loads without running anything: the lanes a guard keeps (masks.lane_range), the verifier on masked and
unmasked vector reads, the vector IR and C of a guarded row reduction per ISA (AVX2 / AVX-512 masked loads, a plain
copy for full tiles; NEON and generic keep the per-lane reads), and the tables that say which classes have them."""
import pytest

import ansorc
from ansorc import te
from ansorc.api import generate_source
from ansorc.codegen import simd
from ansorc.codegen.c import lower_for_target
from ansorc.ir.lowering.lower import lower
from ansorc.ir.lowering.stmt import Buffer, For, IfThenElse, PrimFunc
from ansorc.ir.passes.masks import lane_range
from ansorc.ir.passes.vector import VDecl, VLanes, VLoad, VMaskLoad, VStore, top_exprs, vwalk, walk_all
from ansorc.ir.passes.verify import VerifyError, check_in_bounds, verify
from ansorc.ir.program.expr import Binary, Compare, Const, Logic, Var, substitute
from ansorc.ir.program.simplify import simplify
from ansorc.ir.schedule.steps import Annotate, ComputeAt, Reorder, Rfactor, Split

k, lane, j = Var("k"), Var("l"), Var("j")


def add(*xs):
    out = xs[0]
    for x in xs[1:]:
        out = Binary("+", out, x if not isinstance(x, int) else Const(x), "int32")
    return out


def mul(x, c):
    return Binary("*", x, Const(c), "int32")


def at0(bounds):
    return lambda e: simplify(substitute(e, {"l": Const(0)}), bounds)


def test_lane_range_of_split_overhangs_paddings_and_what_it_refuses():
    bounds = {"k": (0, 6), "j": (0, 20), "l": (0, 7)}
    f = at0(bounds)
    lo, hi, rest = lane_range(Compare("<", add(mul(k, 32), lane, 8), Const(197)), "l", 8, f)
    assert (lo, rest) == (Const(0), None)
    assert simplify(Binary("+", hi, mul(k, 32), "int32")) == Const(189)        # l < 197 - 32k - 8
    pad = Logic("&&", Compare(">=", add(j, lane, -1), Const(0)), Compare("<", add(j, lane, -1), Const(13)))
    lo, hi, rest = lane_range(Logic("&&", pad, Compare("<", k, Const(3))), "l", 8, f)
    assert simplify(Binary("+", lo, j, "int32")) == Const(1) and simplify(Binary("+", hi, j, "int32")) == Const(14)
    assert rest == Compare("<", k, Const(3))                                    # lane-invariant: a select outside
    flipped = lane_range(Compare(">", Const(5), add(j, lane)), "l", 8, f)       # 5 > j + l: l < 5 - j
    assert flipped[0] == Const(0) and simplify(Binary("+", flipped[1], j, "int32")) == Const(5)
    assert lane_range(Compare("<", add(mul(lane, 2), k), Const(9)), "l", 8, f) is None   # stride 2
    assert lane_range(Compare("!=", add(lane, k), Const(9)), "l", 8, f) is None          # not convex


A = Buffer("A", (3, 13), "float32", "arg")
B = Buffer("B", (3, 16), "float32", "arg")


def _masked_rows(hi_extra=0, masked=True):
    """B[i, 8k + l] = A[i, 8k + l] for 8k + l < 13 (else 0), as one 8-lane load per (i, k)."""
    i = Var("i")
    src = add(mul(i, 13), mul(k, 8))
    hi = add(Binary("-", Const(13 + hi_extra), mul(k, 8), "int32"))
    value = VMaskLoad("A", src, Const(0), hi, Const(0.0, "float32"), 8, "float32") if masked else \
        VLoad("A", src, 8, "float32")
    body = For("i", 3, "serial", For("k", 2, "serial", VStore("B", add(mul(i, 16), mul(k, 8)), value)))
    return PrimFunc("k", (A, B), 1, body)


def test_the_verifier_accepts_masked_lanes_and_rejects_reads_past_the_buffer():
    verify(_masked_rows())
    with pytest.raises(VerifyError, match=r"read of A.*spans \[0, 39\], not provably within \[0, 38\]"):
        check_in_bounds(_masked_rows(hi_extra=1))          # one lane too many: A[2, 12] + 1
    with pytest.raises(VerifyError, match=r"check_in_bounds: read of A.*8 lanes"):
        check_in_bounds(_masked_rows(masked=False))        # the same load unmasked


def guarded_rows(n=197, op="sum", piece=32):
    x = te.placeholder((4, n), name="x")
    r = te.reduce_axis((0, n), "r")
    s = te.compute((4,), lambda i: (te.sum if op == "sum" else te.max)(x[i, r], axis=r), name="s")
    steps = [Split("s", "r", (piece,)), Rfactor("s", "r.1", 1), Reorder("s.rf", ("i", "r.0", "r.1.v")),
             ComputeAt("s.rf", "s", "i"), Annotate("s.rf", "r.1.v", "vectorize"), Annotate("s", "r.1.v", "vectorize")]
    return [x, s], ansorc.replay(ansorc.ComputeDAG([x, s]), steps)


def _nodes(stmt, kind):
    return [n for s in walk_all(stmt) for e in top_exprs(s) for n in vwalk(e) if isinstance(n, kind)]


def test_a_guarded_tile_loads_masked_in_its_last_iteration_and_plain_in_the_others():
    tensors, state = guarded_rows()
    func = lower_for_target(lower(state, "k"), "avx2")
    assert len(_nodes(func.body, VMaskLoad)) == 4 and not _nodes(func.body, VLanes)
    versions = [s for s in walk_all(func.body) if isinstance(s, IfThenElse) and s.version]
    assert [repr(v.cond) for v in versions] == ["((s_rf_r_0 * 32) <= 165)", "!((s_rf_r_0 * 32) <= 165)"]
    assert not _nodes(versions[0].then, VMaskLoad) and len(_nodes(versions[0].then, VLoad)) == 4
    assert any(isinstance(s, VDecl) for s in walk_all(func.body))       # the accumulators stay in registers
    code = generate_source(tensors, state, target="avx2").code
    loop = code.split("for (int32_t s_rf_r_0 = 0; s_rf_r_0 < 7; ++s_rf_r_0) {")[1].split("\n        }\n")[0]
    assert loop.count("_mm256_maskload_ps((x + ") == 4 and loop.count("_mm256_loadu_ps((x + ") == 4
    assert "(const float[8])" not in code and "ansorc_lanes_m256(0, ((0 - (s_rf_r_0 * 32)) + 173))" in loop


def test_a_tile_that_is_full_in_every_iteration_but_one_vector_keeps_only_that_vector_masked():
    tensors, state = guarded_rows(n=61)          # 61 = 32 + 29: the first three vectors always full
    func = lower_for_target(lower(state, "k"), "avx2")
    [masked] = _nodes(func.body, VMaskLoad)
    assert simplify(Binary("+", masked.hi, Binary("*", Var("s_rf_r_0"), Const(32), "int32"), "int32")) == Const(37)


@pytest.mark.parametrize("op, want", [("sum", "_mm512_maskz_loadu_ps("), ("max", "_mm512_mask_loadu_ps(")])
def test_avx512_masks_are_mmask16_loads(op, want):
    tensors, state = guarded_rows(op=op, piece=64)
    code = generate_source(tensors, state, target="avx512").code
    assert want in code and "static inline __mmask16 ansorc_lanes_m512(" in code and "(const float[16])" not in code


@pytest.mark.parametrize("isa", ["neon", "generic"])
def test_isas_without_masked_loads_keep_the_per_lane_reads(isa):
    tensors, state = guarded_rows(piece=8 if isa == "neon" else 32)
    func = lower_for_target(lower(state, "k"), isa)
    assert not _nodes(func.body, VMaskLoad)
    assert isa == "generic" or _nodes(func.body, VLanes)
    assert "maskload" not in generate_source(tensors, state, target=isa).code


def test_the_tables_have_masked_loads_for_x86_float_classes_only():
    for isa, lanes in (("avx2", (8, 4)), ("avx512", (16, 8, 4))):
        for dtype in ("float32", "float64"):
            for n in lanes if dtype == "float32" else tuple(x // 2 for x in lanes):
                assert simd.caps(isa).has("maskload", dtype, n) and simd.caps(isa).has("maskload_fill", dtype, n)
        assert not simd.caps(isa).has("maskload", "int32", 8)
    assert not any(op.startswith("maskload") for op, _, _ in simd.caps("neon").ops)
    assert simd.intrinsic("avx2", "maskload", "float32", 8).format(p="p", a="lo", b="hi") == \
        "_mm256_maskload_ps(p, ansorc_lanes_m256(lo, hi))"
