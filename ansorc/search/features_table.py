"""The per-store feature table: every feature's name, transform and one-line meaning, in column order.

`features.py` computes the values in exactly this order; `docs/features.md` is generated from this module
(`python -m ansorc.search.features_table > docs/features.md`), so edit the table here, not the doc.

## Terms

- *trip count*: the product of the extents of all loops enclosing the store (how often it executes).
- *effective kind* of a loop: its annotation, except that a serial loop whose step count (stores executed by
  one run of the loop) is within the auto_unroll_max_step in effect counts as `unroll`: exactly the loops the
  unroll pass replicates. `unroll`-annotated loops count as `unroll` at any extent. The annotation blocks
  ignore loops of extent 1 (they do nothing whatever their kind).
- a loop is *spatial* for a store when its variable appears in the written indices, or when it encloses the
  allocation of the written buffer (each iteration gets a fresh local buffer); otherwise it is *reduce*.
  Positions: the innermost/outermost/other spatial (or reduce) loop; several annotated loops in different
  positions give `mixed`.
- *dot-product instruction*: what the dot pass (ir/passes/dot.py) makes of a store's G steps (its written-out
  loop around the vector loop) of a narrow multiply-add (u8 x s8 into int32, bfloat16 into float32) reading a
  grouped operand copy: one vpdpbusd / vdpbf16ps / sdot (or AVX2's maddubs sequence) per G steps of a vector.
  The features ask the pass's own test (`match_dot`) with every instruction whose vector fits the hardware: the
  features know its width, not its ISA extensions, and the sketch rule makes this shape only for targets that
  have one.
- *lanes*, *registers* and *cache lines* are the task's hardware (HardwareParams from its target): on AVX-512, 16
  float32 lanes, 32 vector registers and 64-byte lines.

## How the buffer and curve values are computed

- Every index expression becomes, per dimension, linear terms `coef * var` plus capped groups: `x % c` spans
  at most c-1, `x // c` scales x's coefficients by 1/c, anything else non-affine is a group over its free
  variables with coefficient 1. The flat (row-major) coefficient of a loop variable is its *stride*.
- *footprint* at a loop level: the bounding box of indices while that loop and all loops inside it run (outer
  loops fixed), clipped to the buffer shape; several distinct accesses to one buffer take the larger box.
  *unique_bytes*/*unique_lines* are the footprint of the whole nest.
- *lines*: per distinct access, find the innermost loop (extent > 1) whose stride is non-zero; the loops
  inside it re-touch the same element, so lines = (trip count / their product) x min(1, stride x elem / 64).
- *reuse*: from the innermost loop outwards, the first loop (extent > 1) whose variable no access of the
  buffer uses gives loop reuse (count = its extent); else the first loop whose body holds several stores that
  use the buffer gives serial reuse (count = those stores - 1). Distance in iterations = product of the
  extents inside that loop; in bytes = the store's footprint (all its buffers) inside that loop.
- *arithmetic intensity curve*: per loop level from the inside out (the single iteration first), x = log2 of
  the store's float ops times the extents so far, y = log2(that / footprint bytes of all its buffers); y is
  linearly interpolated at x = (i + 1) / 10 of the last x.
"""
from __future__ import annotations

import json
import math

LOG, RAW = "log", "raw"
MAX_BUFS = 5
POSITIONS = ("none", "inner_spatial", "middle_spatial", "outer_spatial", "inner_reduce", "middle_reduce",
             "outer_reduce", "mixed")
CURVE_N = 10

_OPS = [
    ("float_mad", "float add/sub with a float multiply operand (fusable into an FMA) x trip count"),
    ("float_addsub", "float additions and subtractions x trip count"),
    ("float_mul", "float multiplications x trip count"),
    ("float_divmod", "float divisions x trip count"),
    ("float_cmp", "float min/max and comparisons x trip count"),
    ("float_math", "math calls (exp, log, sqrt, tanh, sigmoid, abs, pow, floor, ceil) x trip count"),
    ("float_cast", "casts to a float type x trip count"),
    ("int_addsub", "integer additions and subtractions (index arithmetic included) x trip count"),
    ("int_mul", "integer multiplications x trip count"),
    ("int_divmod", "integer floor divisions and modulos x trip count"),
    ("int_cmp", "integer min/max and comparisons x trip count"),
    ("int_cast", "casts to an integer type x trip count"),
    ("bool_op", "boolean and/or/not x trip count"),
    ("select", "select (conditional value) expressions x trip count"),
]

_ANN_MEANING = {"vec": "vectorize", "unroll": "unroll (annotated or unrolled by auto_unroll_max_step)",
                "parallel": "parallel"}


def _annotation_block(k: str) -> list:
    kind = _ANN_MEANING[k]
    rows = [(f"{k}_num", LOG, f"number of enclosing loops of effective kind {kind}"),
            (f"{k}_prod", LOG, f"product of the extents of the enclosing {kind} loops"),
            (f"{k}_len", LOG, f"extent of the innermost enclosing {kind} loop")]
    for p in POSITIONS:
        rows.append((f"{k}_pos_{p}", RAW, f"one-hot: position of the {kind} loops is {p.replace('_', ' ')}"))
    return rows


def _buffer_block(i: int) -> list:
    p = f"b{i}_"
    rows = [
        (p + "acc_r", RAW, "one-hot: the store only reads this buffer"),
        (p + "acc_w", RAW, "one-hot: the store only writes this buffer"),
        (p + "acc_rw", RAW, "one-hot: the store reads and writes this buffer"),
        (p + "bytes", LOG, "bytes accessed: trip count x element size x distinct accesses"),
        (p + "unique_bytes", LOG, "bytes of the region the whole loop nest of the store touches"),
        (p + "lines", LOG, "cache lines accessed, from the stride of the innermost loop that changes the address"),
        (p + "unique_lines", LOG, "distinct 64-byte cache lines of the touched region (last dims contiguous)"),
        (p + "reuse_loop", RAW, "one-hot: reuse across iterations of a loop whose variable the indices lack"),
        (p + "reuse_serial", RAW, "one-hot: reuse between several stores inside one loop body"),
        (p + "reuse_none", RAW, "one-hot: no reuse found"),
        (p + "reuse_dis_iter", LOG, "reuse distance in innermost iterations (product of loops inside the reuse loop)"),
        (p + "reuse_dis_bytes", LOG, "reuse distance in bytes the store touches between two reuses"),
        (p + "reuse_ct", LOG, "reuse count: extent of the reuse loop, or number of other stores for serial reuse"),
        (p + "bytes_d_reuse", LOG, "bytes / reuse count (x2 when there is no reuse)"),
        (p + "unique_bytes_d_reuse", LOG, "unique bytes / reuse count (x2 when there is no reuse)"),
        (p + "lines_d_reuse", LOG, "lines / reuse count (x2 when there is no reuse)"),
        (p + "unique_lines_d_reuse", LOG, "unique lines / reuse count (x2 when there is no reuse)"),
        (p + "stride", LOG, "element stride of the innermost loop that changes the address (0 if none)"),
        (p + "vec_contig", RAW, "1 if the innermost vectorized loop walks this buffer with stride 1"),
        (p + "vec_gather", RAW, "1 if the innermost vectorized loop walks this buffer with a stride other than 0/1"),
        (p + "is_local", RAW, "1 if the buffer is allocated inside a loop (compute_at'ed / cache stage)"),
    ]
    return rows


TABLE: list = (
    [(n, LOG, m) for n, m in _OPS]
    + _annotation_block("vec") + _annotation_block("unroll") + _annotation_block("parallel")
    + [r for i in range(MAX_BUFS) for r in _buffer_block(i)]
    + [(f"ai_curve_{i}", RAW, f"arithmetic intensity log2(flops/bytes) at {i + 1}/{CURVE_N} of log2(total flops), "
        "interpolated over loop levels from the inside out") for i in range(CURVE_N)]
    + [("alloc_size", LOG, "bytes of the buffer the store writes, if allocated in the program"),
       ("alloc_prod", LOG, "alloc_size x product of the loops enclosing the allocation"),
       ("alloc_outer_prod", LOG, "product of the extents of the loops enclosing the allocation"),
       ("alloc_inner_prod", LOG, "trip count / alloc_outer_prod: executions of the store per allocation"),
       ("alloc_local", RAW, "1 if the written buffer is a local (per-loop-iteration) allocation")]
    + [("outer_prod", LOG, "trip count: product of the extents of all enclosing loops"),
       ("num_loops", LOG, "number of enclosing loops"),
       ("auto_unroll_max_step", LOG, "auto_unroll_max_step in effect at the store (0 if none)")]
    + [("inner_vectorized", RAW, "1 if the innermost non-trivial loop has effective kind vectorize"),
       ("vec_all_contig", RAW, "1 if every access has stride 0 or 1 in the innermost vectorized loop"),
       ("vec_len_mult_lanes", RAW, "1 if the innermost vectorized extent is a multiple of the lanes"),
       ("vec_full_vectors", LOG, "innermost vectorized extent // lanes (full vector registers per iteration)"),
       ("vec_tail", LOG, "innermost vectorized extent % lanes (masked tail elements)"),
       ("inner_extent", LOG, "extent of the innermost loop of extent > 1"),
       ("inner_is_reduce", RAW, "1 if that innermost loop is a reduce loop for this store"),
       ("inner_contig_all", RAW, "1 if every access has stride 0 or 1 in that innermost loop (auto-vectorizable)"),
       ("reg_tile", LOG, "accumulator elements updated inside the innermost reduce loop (read-write stores)"),
       ("reg_tile_vregs", LOG, "registers for reg_tile: ceil(reg_tile / min(lanes, vectorized extent))"),
       ("reg_tile_fits", RAW, "1 if reg_tile_vregs fits in the vector registers less 4 (28 of the 32 on AVX-512)"),
       ("guarded", RAW, "1 if the store is under an IfThenElse"),
       ("guard_ops", LOG, "operations in the enclosing guard conditions x trip count"),
       ("is_init", RAW, "1 if the store reads no buffer (initialization / constant fill)"),
       ("work_per_thread", LOG, "trip count / product of the enclosing parallel loops")]
    + [("dot_insts", LOG, "dot-product instructions executed for the store: those the dot pass makes of one run of "
        "its G steps around the vector loop x the extents of the loops outside them (0 if none)"),
       ("dot_products_per_lane", RAW, "products each instruction adds to a 32-bit lane: 4 (int8), 2 (bfloat16), 0"),
       ("dot_word_load", RAW, "1 if the broadcast group is one 32-bit load (consecutive elements), 0 if packed "
        "element by element or no instruction")]
    + [("gpu_blocks", LOG, "product of the enclosing loops bound to blockIdx (0 outside GPU programs)"),
       ("gpu_threads", LOG, "product of the enclosing loops bound to threadIdx (0 outside GPU programs)"),
       ("gpu_vthreads", LOG, "product of the enclosing vthread loops (0 if none)"),
       ("gpu_shared_store", RAW, "1 if the store writes a shared-memory buffer (a cooperative fetch)"),
       ("gpu_shared_reads", LOG, "distinct reads of shared-memory buffers in the store x trip count")]
)

FEATURE_NAMES: tuple = tuple(n for n, _, _ in TABLE)
FEATURE_MEANINGS: dict = {n: m for n, _, m in TABLE}
LOG_MASK: tuple = tuple(k == LOG for _, k, _ in TABLE)
N_FEATURES = len(TABLE)
# Bump when a feature's computation changes without its name or transform changing: pretrained cost models
# (search/pretrain.py) record feature_hash() and are refused when it differs.
FEATURE_VERSION = 2


def feature_hash() -> str:
    """A short hash of FEATURE_VERSION and every column's name and transform, in order."""
    import hashlib
    text = json.dumps([FEATURE_VERSION, [(n, k) for n, k, _ in TABLE]])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# ----------------------------------------------------------------------------- fixed-layout blocks

def annotation_block(loops, svars, kind) -> list:
    """The 11 values of one annotation block for a store: loops (extent > 1, outer to inner) with `.eff`,
    `.ext`, `.var`; svars: the variables of the loops that are spatial for the store."""
    sel = [k for k, lp in enumerate(loops) if lp.eff == kind]
    onehot = [0.0] * len(POSITIONS)
    if not sel:
        onehot[0] = 1.0
        return [0.0, 0.0, 0.0] + onehot
    prod = 1
    for k in sel:
        prod *= loops[k].ext
    sp = [k for k, lp in enumerate(loops) if lp.var in svars]
    rd = [k for k, lp in enumerate(loops) if lp.var not in svars]
    cats = set()
    for k in sel:
        grp, base = (sp, 1) if loops[k].var in svars else (rd, 4)
        i = grp.index(k)
        cats.add(base + (0 if i == len(grp) - 1 else 2 if i == 0 else 1))
    onehot[cats.pop() if len(cats) == 1 else 7] = 1.0
    return [float(len(sel)), float(prod), float(loops[sel[-1]].ext)] + onehot


def intensity_curve(flops, loops, store_bytes) -> list:
    """log2(flops/bytes) against log2(flops), one point per loop level from the inside out, sampled at CURVE_N
    evenly spaced flop values by linear interpolation."""
    if flops <= 0:
        return [0.0] * CURVE_N
    xs, ys = [], []
    for k in range(len(loops), -1, -1):
        flops *= loops[k].ext if k < len(loops) else 1
        xs.append(math.log2(flops))
        ys.append(math.log2(flops / max(store_bytes[k], 1)))
    out, pt = [], 0
    for i in range(CURVE_N):
        x = xs[-1] * (i + 1) / CURVE_N
        while xs[pt] < x - 1e-6:
            pt += 1
        if pt == 0 or xs[pt] == xs[pt - 1]:
            out.append(ys[pt])
        else:
            out.append(ys[pt - 1] + (ys[pt] - ys[pt - 1]) * (x - xs[pt - 1]) / (xs[pt] - xs[pt - 1]))
    return out


def markdown() -> str:
    """docs/features.md, generated from TABLE."""
    head = __doc__.split("## Terms", 1)[1].strip()
    out = ["# Per-store features", "",
           f"`ansorc.search.features.extract(func)` returns one row of {N_FEATURES} float32 features per `Store` "
           "of a lowered program (`lower(state, passes=False)`), in the order below. Columns marked `log` are "
           "transformed as sign(x) * log2(1 + |x|) (`extract(func, raw=True)` skips it); `raw` columns are "
           "one-hots, flags or already logarithmic. Buffers `b0`..`b4` are the store's buffers sorted by "
           "(lines, bytes) descending, zero-padded.", "",
           "Regenerate with `python -m ansorc.search.features_table > docs/features.md`.", "", "## Terms", "",
           head, "", "## Columns", "",
           "| # | name | transform | meaning |", "| --- | --- | --- | --- |"]
    for i, (n, k, m) in enumerate(TABLE):
        out.append(f"| {i} | `{n}` | {k} | {m} |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    print(markdown(), end="")
