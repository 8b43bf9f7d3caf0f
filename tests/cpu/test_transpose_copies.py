"""A vectorized copy that gathers a column of its source per vector, inside a loop along the source's rows, is
copied in square blocks transposed in registers (ir/passes/transpose.py); checked equal to numpy on every vector ISA
this machine runs and, cross-compiled, under qemu for NEON. Copies the pass must leave alone stay correct too."""
import numpy as np
import pytest

import ansorc
from ansorc import te
from ansorc.api import generate_source
from ansorc.codegen.target import Target, host_arch, host_isas
from ansorc.ir.schedule.state import State
from ansorc.ir.schedule.steps import Annotate, Reorder, Split
from ansorc.measure.builder import build
from ansorc.measure.cross import build_programs, run_program
from ansorc.search.default_schedule import default_cpu_schedule
from tests.kernel_text import body_of

VECTOR_ISAS = [isa for isa in host_isas() if isa in ("avx512", "avx2")]


def transpose_copy(rows: int, cols: int, lanes: int):
    """b[i, j] = a[j, i], vectorized along j in `lanes`, with i (a's rows) the loop around the vector."""
    a = te.placeholder((rows, cols), "float32", "a")
    b = te.compute((cols, rows), lambda i, j: a[j, i], name="b")
    st = State.initial(ansorc.ComputeDAG([a, b])).apply(Split("b", "j", (lanes,)))
    return [a, b], st.apply(Reorder("b", ("j.0", "i", "j.1"))).apply(Annotate("b", "j.1", "vectorize"))


# (rows, cols, lanes, blocks?): b's rows 40 / 24 floats apart; b's rows 1 KB apart, or a's 4 KB with 8 lanes, keep
# the gathers on purpose (ir/passes/transpose.py, CONFLICT_BYTES); a tail (21 = 2 x 8 + 5) too
CASES = [(40, 24, 8, True), (40, 24, 4, True), (24, 96, 8, True), (48, 32, 16, True), (256, 16, 8, False),
         (16, 1024, 8, False), (16, 1024, 4, True), (40, 21, 8, False)]


@pytest.mark.skipif(not VECTOR_ISAS, reason="no x86 vector ISA on this machine")
@pytest.mark.parametrize("isa", VECTOR_ISAS)
@pytest.mark.parametrize("rows,cols,lanes,blocks", CASES)
def test_transposing_copies_match_numpy(isa, rows, cols, lanes, blocks):
    tensors, st = transpose_copy(rows, cols, lanes)
    kern = ansorc.build(tensors, st, target=isa, name=f"tr_{rows}_{cols}_{lanes}_{isa}")
    assert ("ansorc_transpose_m" in body_of(kern.source, f"tr_{rows}_{cols}_{lanes}_{isa}")) == blocks
    x = np.random.default_rng(rows * cols).standard_normal((rows, cols)).astype(np.float32)
    np.testing.assert_array_equal(kern(x), x.T)


def test_a_copy_from_an_intermediate_buffer_is_blocked_too():
    """The source's shape comes from its allocation, not from the arguments."""
    a = te.placeholder((16, 16), "float32", "a")
    c = te.compute((16, 16), lambda i, j: a[i, j] + 1.0, name="c")
    b = te.compute((16, 16), lambda i, j: c[j, i], name="b")
    st = State.initial(ansorc.ComputeDAG([a, b])).apply(Split("b", "j", (8,)))
    st = st.apply(Reorder("b", ("j.0", "i", "j.1"))).apply(Annotate("b", "j.1", "vectorize"))
    code = generate_source([a, b], st, "g", "avx2").code
    x = np.random.default_rng(0).standard_normal((16, 16)).astype(np.float32)
    assert "ansorc_transpose_m256((c +" in code
    if "avx2" in host_isas():
        np.testing.assert_array_equal(ansorc.build([a, b], st, target="avx2")(x), (x + 1).T)


def test_neon_transposing_copies_under_qemu():
    missing = Target.from_name("neon").missing_tools()
    if missing:
        pytest.skip(f"NEON cross-check needs {', '.join(missing)}")
    jobs = [(r, c, generate_source(*transpose_copy(r, c, lanes), f"tr{r}", "neon"))
            for r, c, lanes in ((40, 24, 4), (12, 36, 4), (24, 40, 8))]     # 8 lanes: two float32x4 blocks
    assert all("ansorc_transpose_float32x4_t(" in src.code for _, _, src in jobs)
    for (r, c, _), prog in zip(jobs, build_programs([j[-1] for j in jobs], "neon")):
        assert prog.path is not None, prog.error[:800]
        x = np.random.default_rng(r).standard_normal((r, c)).astype(np.float32)
        [out] = run_program(prog, [x], "neon")
        np.testing.assert_array_equal(out, x.T)


@pytest.mark.skipif("avx2" not in host_isas(), reason="no AVX2 on this machine")
@pytest.mark.parametrize("shape, perm", [((256, 256), (1, 0)), ((128, 16, 64), (1, 2, 0)), ((96, 200), (1, 0))])
def test_the_default_program_of_a_transpose_copies_tile_blocks_at_any_stride(shape, perm):
    """The default schedule tiles both axes (a loop of one block around the vector): blocks even where rows lie a
    multiple of 1 or 4 KB apart, since the next block completes the same destination lines."""
    a = te.placeholder(shape, "float32", "a")
    inv = [perm.index(k) for k in range(len(shape))]
    t = te.compute(tuple(shape[p] for p in perm), lambda *ix: a[tuple(ix[inv[k]] for k in range(len(shape)))], name="t")
    state = default_cpu_schedule(ansorc.ComputeDAG([a, t]), "avx2")
    kern = ansorc.build([a, t], state, target="avx2", name="dt")
    assert "ansorc_transpose_m256((" in kern.source
    x = np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)
    np.testing.assert_array_equal(kern(x), np.transpose(x, perm))


@pytest.mark.parametrize("isa", ["avx2", "avx512", "neon"])   # rendered for each; run where this CPU has it
@pytest.mark.parametrize("seq,heads,hidden", [(128, 4, 64), (48, 2, 16)])
def test_a_copy_computed_per_head_inside_its_consumer_is_blocked(isa, seq, heads, hidden):
    """TBG's K' computed at the scores' head loop, unsplit, its j loop vectorized in pieces: blocks down the source
    column (which gain at any stride, even with K's rows 4 KB apart), checked against numpy."""
    from ansorc import workloads
    from ansorc.ir.schedule.steps import ComputeAt, ComputeInline, Fuse
    tensors = workloads.tbg(1, seq, heads, hidden)
    st = State.initial(ansorc.ComputeDAG(tensors))
    for step in (ComputeInline("query_T"), Fuse("scores", ("b", "h")), ComputeAt("key_T", "scores", "b@h"),
                 Annotate("scores", "b@h", "parallel"), Annotate("key_T", "j", "vectorize"),
                 Annotate("scores", "j", "vectorize")):
        st = st.apply(step)
    src = generate_source(tensors, st, "t", isa)
    assert "ansorc_transpose_" in body_of(src.code, "t")
    if isa not in VECTOR_ISAS and Target.from_name(isa).arch == host_arch():   # an x86 ISA this CPU lacks: compiles
        [res] = build([src], Target.from_name(isa).flags, 120, 1)
        assert res.ok, res.error_msg[:800]
    if isa in VECTOR_ISAS:
        q, k = (np.random.default_rng(s).standard_normal((1, seq, heads, hidden)).astype(np.float32) for s in (1, 2))
        got = ansorc.build(tensors, st, target=isa, name=f"kt_{seq}_{heads}")(q, k)
        np.testing.assert_allclose(got, np.einsum("bihd,bjhd->bhij", q, k), rtol=1e-4, atol=1e-4)
