"""Per-store features: table consistency, exact values on hand-made programs, distinctness, robustness."""
import os

import numpy as np
import pytest

import ansorc
from ansorc import workloads
from ansorc.ir.program.expr import Binary, Compare, Const, Read, Var
from ansorc.ir.lowering.lower import lower
from ansorc.ir.schedule.steps import Annotate, CacheWrite, ComputeAt, FollowSplit, Fuse, Pragma, Reorder, Split
from ansorc.ir.lowering.stmt import Allocate, Buffer, For, IfThenElse, PrimFunc, Seq, Store
from ansorc.search.annotate import sample
from ansorc.search.features import FEATURE_NAMES, N_FEATURES, extract, extract_states
from ansorc.search.features_table import FEATURE_MEANINGS, LOG_MASK, TABLE, markdown
from ansorc.search.task import SearchTask

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "features.md")
F32 = "float32"


def v(x):
    return Var(x)


def c(x):
    return Const(x)


def f(a, op, b):
    return Binary(op, a, b, F32)


def i(a, op, b):
    return Binary(op, a, b, "int32")


def buf(name, shape, scope="arg"):
    return Buffer(name, shape, F32, scope)


def func(body, *bufs, n_inputs=2):
    return PrimFunc("k", tuple(bufs), n_inputs, body)


def naive_matmul(N=4, M=6, K=8):
    """for i, j: C[i,j] = 0; for k: C[i,j] += A[i,k] * B[k,j]"""
    A, B, C = buf("A", (N, K)), buf("B", (K, M)), buf("C", (N, M))
    I, J, K_ = v("i"), v("j"), v("k")
    acc = Read("C", (I, J), F32)
    upd = Store("C", (I, J), f(acc, "+", f(Read("A", (I, K_), F32), "*", Read("B", (K_, J), F32))))
    body = For("i", N, "serial", For("j", M, "serial", Seq((Store("C", (I, J), Const(0.0, F32)),
                                                              For("k", K, "serial", upd)))))
    return func(body, A, B, C)


def row_of(X, r):
    return dict(zip(FEATURE_NAMES, X[r].tolist()))


# ----------------------------------------------------------------------------- the table

def test_names_unique_documented_and_match_columns():
    X = extract(naive_matmul())
    assert X.shape == (2, N_FEATURES) == (2, len(FEATURE_NAMES)) and X.dtype == np.float32
    assert len(set(FEATURE_NAMES)) == len(FEATURE_NAMES) == len(TABLE) == len(LOG_MASK)
    doc = open(DOC).read()
    for name in FEATURE_NAMES:
        assert FEATURE_MEANINGS[name].strip(), name
        assert f"`{name}`" in doc, f"{name} missing from docs/features.md"


def test_doc_is_generated_from_table():
    assert open(DOC).read() == markdown(), "regenerate: python -m ansorc.search.features_table > docs/features.md"


def test_log_transform_keeps_sign_and_skips_raw_columns():
    fn = naive_matmul()
    raw, X = extract(fn, raw=True), extract(fn)
    mask = np.array(LOG_MASK)
    want = np.sign(raw[:, mask]) * np.log2(1 + np.abs(raw[:, mask].astype(np.float64)))
    np.testing.assert_allclose(X[:, mask], want, rtol=1e-5)
    np.testing.assert_array_equal(X[:, ~mask], raw[:, ~mask])


# ----------------------------------------------------------------------------- exact values

def test_naive_matmul_counts_buffers_and_reuse():
    N, M, K = 4, 6, 8
    X = extract(naive_matmul(N, M, K), raw=True)
    init, upd = row_of(X, 0), row_of(X, 1)
    assert upd["float_mul"] == upd["float_addsub"] == upd["float_mad"] == N * M * K
    assert upd["outer_prod"] == N * M * K and upd["num_loops"] == 3
    assert init["float_mul"] == 0 and init["is_init"] == 1 and upd["is_init"] == 0
    assert init["outer_prod"] == N * M
    # buffers sorted by (lines, bytes): B (stride M along k) moves the most lines, then A, then C
    bufs = {}
    for s in range(3):
        p = f"b{s}_"
        kind = "rw" if upd[p + "acc_rw"] else "r" if upd[p + "acc_r"] else "w"
        bufs[kind, upd[p + "stride"], upd[p + "unique_bytes"]] = {k[len(p):]: x for k, x in upd.items()
                                                                   if k.startswith(p)}
    B = bufs["r", M, K * M * 4]
    A = bufs["r", 1, N * K * 4]
    C = bufs["rw", 1, N * M * 4]
    assert upd["b0_stride"] == M  # B first
    assert A["bytes"] == B["bytes"] == C["bytes"] == N * M * K * 4
    assert B["lines"] == N * M * K * min(1, M * 4 / 64)
    assert A["lines"] == N * M * K * 4 / 64
    assert C["lines"] == N * M * 4 / 64  # k re-touches C[i, j]
    # C: k is absent from its indices -> loop reuse K times, one iteration apart
    assert C["reuse_loop"] == 1 and C["reuse_ct"] == K and C["reuse_dis_iter"] == 1
    assert A["reuse_loop"] == 1 and A["reuse_ct"] == M and A["reuse_dis_iter"] == K
    assert B["reuse_loop"] == 1 and B["reuse_ct"] == N and B["reuse_dis_iter"] == M * K
    assert A["bytes_d_reuse"] == A["bytes"] / M
    # init and update share the j loop: serial reuse of C for the init store
    assert init["b0_acc_w"] == 1 and init["b0_reuse_serial"] == 1 and init["b0_reuse_ct"] == 1
    assert init["b0_reuse_none"] == 0 and init["b0_bytes_d_reuse"] == init["b0_bytes"]
    # accumulator: k is the innermost reduce loop, one element updated per k step
    assert upd["reg_tile"] == 1 and upd["inner_is_reduce"] == 1 and upd["inner_extent"] == K
    assert upd["vec_num"] == upd["parallel_num"] == upd["unroll_num"] == 0
    assert upd["vec_pos_none"] == upd["parallel_pos_none"] == upd["unroll_pos_none"] == 1
    assert all(upd[f"b{s}_acc_r"] == upd[f"b{s}_acc_w"] == 0 for s in range(3, 5))  # zero padding
    assert upd["ai_curve_9"] == pytest.approx(np.log2(2 * N * M * K / (4 * (N * K + K * M + N * M))))


def test_vectorized_innermost_loop():
    A, B, C = buf("A", (8, 32)), buf("B", (32, 8)), buf("C", (8, 32))
    I, J = v("i"), v("j")
    contig = Store("C", (I, J), f(Read("A", (I, J), F32), "+", Read("B", (J, I), F32)))
    fn = func(For("i", 8, "serial", For("j", 32, "vectorize", contig)), A, B, C)
    r = row_of(extract(fn, raw=True), 0)
    assert (r["vec_num"], r["vec_prod"], r["vec_len"]) == (1, 32, 32)
    assert r["vec_pos_inner_spatial"] == 1 and r["vec_pos_none"] == 0
    assert r["inner_vectorized"] == 1 and r["vec_len_mult_lanes"] == 1
    assert r["vec_full_vectors"] == 2 and r["vec_tail"] == 0
    assert r["vec_all_contig"] == 0  # B[j, i] is a gather along j
    by_stride = {r[f"b{s}_stride"]: (r[f"b{s}_vec_contig"], r[f"b{s}_vec_gather"]) for s in range(3)}
    assert by_stride[8] == (0, 1) and by_stride[1] == (1, 0)
    # a 20-wide vector loop leaves a masked tail of 4 lanes
    fn2 = func(For("i", 8, "serial", For("j", 20, "vectorize", Store("C", (I, J), Read("A", (I, J), F32)))), A, B, C)
    r2 = row_of(extract(fn2, raw=True), 0)
    assert r2["vec_len_mult_lanes"] == 0 and r2["vec_tail"] == 4 and r2["vec_full_vectors"] == 1
    assert r2["vec_all_contig"] == 1


def test_parallel_fused_outer_loop_and_fused_index_footprint():
    A, C = buf("A", (4, 32)), buf("C", (4, 32))
    F, J = v("f"), v("j")
    row, col_ = i(F, "//", c(2)), i(i(i(F, "%", c(2)), "*", c(16)), "+", J)
    st = Store("C", (row, col_), f(Read("A", (row, col_), F32), "*", Const(2.0, F32)))
    fn = func(For("f", 8, "parallel", For("j", 16, "serial", st)), A, C, n_inputs=1)
    r = row_of(extract(fn, raw=True), 0)
    assert (r["parallel_num"], r["parallel_prod"], r["parallel_len"]) == (1, 8, 8)
    assert r["parallel_pos_outer_spatial"] == 1 and r["work_per_thread"] == 16
    assert r["b0_unique_bytes"] == r["b1_unique_bytes"] == 4 * 32 * 4  # exactly the whole buffer
    assert r["b0_stride"] == 1 and r["b0_reuse_none"] == 1 and r["b0_bytes_d_reuse"] == 2 * r["b0_bytes"]
    assert r["int_divmod"] == 2 * 2 * 128  # two // and two % per execution (store and read indices)


def test_auto_unroll_and_unroll_annotation():
    A, C = buf("A", (4, 4)), buf("C", (4, 4))
    I, J = v("i"), v("j")
    st = Store("C", (I, J), Read("A", (J, I), F32))

    def unroll_of(max_step, kind="serial"):
        fn = func(For("i", 4, "serial", For("j", 4, kind, st), auto_unroll=max_step), A, C, n_inputs=1)
        r = row_of(extract(fn, raw=True), 0)
        return r["unroll_num"], r["unroll_prod"], r["unroll_len"], r["auto_unroll_max_step"]

    assert unroll_of(16) == (2, 16, 4, 16)   # both loops: 16 steps <= 16
    assert unroll_of(8) == (1, 4, 4, 8)      # only j: 4 <= 8 < 16
    assert unroll_of(0) == (0, 0, 0, 0)
    assert unroll_of(0, "unroll") == (1, 4, 4, 0)


def test_guarded_store():
    A, C = buf("A", (10,)), buf("C", (10,))
    I = v("i")
    st = IfThenElse(Compare("<", I, c(7)), Store("C", (I,), Read("A", (I,), F32)))
    r = row_of(extract(func(For("i", 10, "serial", st), A, C, n_inputs=1), raw=True), 0)
    assert r["guarded"] == 1 and r["guard_ops"] == 10 and r["int_cmp"] == 0


def test_local_buffer_allocation_features():
    N, M, Kx = 4, 32, 8
    A, B, C = buf("A", (N, Kx)), buf("B", (Kx, M)), buf("C", (N, M))
    L = buf("L", (2, 16), "local")
    I, J, K_, II, JJ = v("i"), v("j"), v("k"), v("ii"), v("jj")
    upd = Store("L", (II, JJ), f(Read("L", (II, JJ), F32), "+",
                                 f(Read("A", (i(i(I, "*", c(2)), "+", II), K_), F32), "*",
                                   Read("B", (K_, i(i(J, "*", c(16)), "+", JJ)), F32))))
    out = Store("C", (i(i(I, "*", c(2)), "+", II), i(i(J, "*", c(16)), "+", JJ)), Read("L", (II, JJ), F32))
    inner = Seq((For("k", Kx, "serial", For("ii", 2, "serial", For("jj", 16, "vectorize", upd))),
                 For("ii", 2, "serial", For("jj", 16, "vectorize", out))))
    fn = func(For("i", 2, "parallel", For("j", 2, "serial", Allocate(L, inner))), A, B, C)
    X = extract(fn, raw=True)
    u, o = row_of(X, 0), row_of(X, 1)
    assert u["alloc_local"] == 1 and u["alloc_size"] == 2 * 16 * 4 and u["alloc_outer_prod"] == 4
    assert u["alloc_prod"] == 2 * 16 * 4 * 4 and u["alloc_inner_prod"] == Kx * 2 * 16
    assert o["alloc_local"] == 0 and o["alloc_size"] == 0
    local_slots = [s for s in range(3) if u[f"b{s}_is_local"] == 1]
    assert len(local_slots) == 1 and u[f"b{local_slots[0]}_acc_rw"] == 1
    # the outer loops enclose the allocation, so they are spatial for the L store
    assert u["parallel_pos_outer_spatial"] == 1
    # register tile: 2 x 16 accumulators live across k, two zmm registers
    assert u["reg_tile"] == 32 and u["reg_tile_vregs"] == 2 and u["reg_tile_fits"] == 1


def test_compute_at_local_buffer_from_a_real_schedule():
    A, B, C = workloads.matmul(64, 64, 64)
    steps = [CacheWrite("C", "local"),
             Split("C.local", "i", (2, 4, 2)), Split("C.local", "j", (2, 1, 16)), Split("C.local", "k", (8,)),
             Reorder("C.local", ("i.0", "j.0", "i.1", "j.1", "k.0", "i.2", "j.2", "k.1", "i.3", "j.3")),
             FollowSplit("C", "i", 1, 2), FollowSplit("C", "j", 2, 2),
             Reorder("C", ("i.0", "j.0", "i.1", "j.1", "i.2", "j.2")), ComputeAt("C.local", "C", "j.1"),
             Fuse("C", ("i.0", "j.0")), Annotate("C", "i.0@j.0", "parallel"),
             Annotate("C.local", "j.3", "vectorize"), Annotate("C", "j.2", "vectorize"),
             Pragma("C.local", "i.0", "auto_unroll_max_step", 64)]
    state = ansorc.replay(ansorc.ComputeDAG([A, B, C]), steps)
    [X] = extract_states([state])
    raw = extract_states([state], raw=True)[0]
    assert X.shape[1] == N_FEATURES and X.shape[0] >= 3 and np.isfinite(X).all()
    local = [row_of(raw, r) for r in range(raw.shape[0]) if row_of(raw, r)["alloc_local"] == 1]
    assert local and all(r["alloc_size"] > 0 and r["alloc_outer_prod"] > 1 for r in local)
    assert all(r["auto_unroll_max_step"] == 64 and r["unroll_num"] >= 1 for r in local)
    assert all(r["vec_len"] == 16 and r["vec_len_mult_lanes"] == 1 for r in local)
    out = row_of(raw, raw.shape[0] - 1)
    assert out["parallel_num"] == 1 and out["auto_unroll_max_step"] == 0 and out["alloc_local"] == 0


def test_loopless_store_and_fully_lowered_program():
    A, C = buf("A", ()), buf("C", ())
    r = row_of(extract(func(Store("C", (), f(Read("A", (), F32), "*", Read("A", (), F32))), A, C, n_inputs=1),
                       raw=True), 0)
    assert r["outer_prod"] == 1 and r["num_loops"] == 0 and r["float_mul"] == 1 and r["b0_unique_bytes"] == 4
    # the unrolled, simplified tree of lower(passes=True) is also accepted
    states = sample(SearchTask(workloads.matmul(64, 64, 64)), 3, seed=1)
    for st in states:
        X = extract(lower(st, "k", passes=True))
        assert X.shape[1] == N_FEATURES and np.isfinite(X).all()


# ----------------------------------------------------------------------------- programs from the search

def test_random_gmm_programs_give_distinct_features():
    states = sample(SearchTask(workloads.matmul(1024, 1024, 1024)), 60, seed=3)
    feats = extract_states(states)
    assert len(feats) == len(states)
    keys = {x.tobytes() for x in feats if x.shape[0]}
    assert len(keys) > 0.9 * len(states)


def test_fifty_programs_extract_and_bad_state_gives_empty_rows():
    states = sample(SearchTask(workloads.c2d(1, 56, 56, 64, 64, 3, 1, 1)), 50, seed=0)
    feats = extract_states(states + [object()])
    assert all(x.shape[0] > 0 and x.shape[1] == N_FEATURES and np.isfinite(x).all() for x in feats[:-1])
    assert feats[-1].shape == (0, N_FEATURES) and feats[-1].dtype == np.float32


def test_vector_and_register_terms_read_the_task_hardware():
    """The same program on AVX-512 (64-byte vectors, 32 registers), AVX2 (32 bytes, 16) and NEON (16 bytes,
    32): an 8 x 16 float32 accumulator tile is 8 zmm registers, 16 ymm (more than AVX2 leaves for a tile) and
    32 NEON registers."""
    from ansorc.search.task import hardware_params
    A, B, C = buf("A", (8, 8)), buf("B", (8, 16)), buf("C", (8, 16))
    I, J, K_ = v("i"), v("j"), v("k")
    upd = Store("C", (I, J), f(Read("C", (I, J), F32), "+", f(Read("A", (I, K_), F32), "*", Read("B", (K_, J), F32))))
    fn = func(For("k", 8, "serial", For("i", 8, "serial", For("j", 16, "vectorize", upd))), A, B, C)
    rows = {isa: row_of(extract(fn, raw=True, hw=hardware_params(isa)), 0) for isa in ("avx512", "avx2", "neon")}
    assert row_of(extract(fn, raw=True), 0) == rows["avx512"]  # the default hardware is AVX-512
    assert [rows[isa]["reg_tile"] for isa in rows] == [128, 128, 128]
    assert [rows[isa]["reg_tile_vregs"] for isa in rows] == [8, 16, 32]
    assert [rows[isa]["reg_tile_fits"] for isa in rows] == [1, 0, 0]
    assert [rows[isa]["vec_full_vectors"] for isa in rows] == [1, 2, 4]
