"""Intrinsic tables: (isa, op, dtype, lanes) -> C template. Data, not branches.

Each ISA lists its vector register classes per (dtype, lanes); every class has one table of op templates.
Placeholders: {a} {b} {c} operands, {p} a pointer expression, {v} the vector stored, {m} a mask. Ops: load, store,
set1 (broadcast), + - * / min max, fma (a*b + c), sqrt abs floor ceil, cvt_from_<dtype> (same lane count),
cmp_<lt|le|gt|ge|eq|ne> (a mask), blend ({m} ? {a} : {b} per lane), maskload / maskload_fill ({p}[l] for the
lanes {a} <= l < {b}, the others 0 / {c}; those are not read), reduce_<op> (horizontal, to a scalar;
generated helpers in the prelude), pin (a statement: keep register {a} in a register, see PIN) and transpose (a
statement: a square block copied transposed, see _transpose_helper). An op missing from a table is computed per
lane by the vectorizer, so a table can stay small and still be correct.
"""
from __future__ import annotations

from functools import lru_cache

from ..ir.program.dtypes import C_TYPE
from ..ir.passes.vectorize import VectorCaps

C_SCALAR = {d: C_TYPE[d] for d in ("float32", "float64", "int32")}  # the dtypes with vector classes


# ----------------------------------------------------------------------------- x86 (SSE4.1/AVX2/AVX-512)

def _x86_float(width: str, sfx: str) -> dict:
    p = f"_mm{width}_"
    ops = {"load": f"{p}loadu_{sfx}({{p}})", "store": f"{p}storeu_{sfx}({{p}}, {{v}})", "set1": f"{p}set1_{sfx}({{a}})",
           "+": f"{p}add_{sfx}({{a}}, {{b}})", "-": f"{p}sub_{sfx}({{a}}, {{b}})", "*": f"{p}mul_{sfx}({{a}}, {{b}})",
           "/": f"{p}div_{sfx}({{a}}, {{b}})", "min": f"{p}min_{sfx}({{a}}, {{b}})",
           "max": f"{p}max_{sfx}({{a}}, {{b}})", "fma": f"{p}fmadd_{sfx}({{a}}, {{b}}, {{c}})",
           "sqrt": f"{p}sqrt_{sfx}({{a}})", "floor": f"{p}floor_{sfx}({{a}})", "ceil": f"{p}ceil_{sfx}({{a}})",
           # only AVX-512 has abs for floats; elsewhere clear the sign bit
           "abs": f"{p}abs_{sfx}({{a}})" if width == "512" else f"{p}andnot_{sfx}({p}set1_{sfx}(-0.0), {{a}})"}
    if sfx == "ps":
        ops["cvt_from_int32"] = f"{p}cvtepi32_ps({{a}})"
    # a streaming (non-temporal) store needs an aligned address: an unaligned one takes the plain store
    align = {"512": 63, "256": 31, "": 15}[width]
    ops["store_stream"] = (f"((((uintptr_t)({{p}})) & {align}u) ? {p}storeu_{sfx}({{p}}, {{v}}) "
                           f": {p}stream_{sfx}({{p}}, {{v}}))")
    # comparisons as C evaluates them: ordered (false on NaN) except != (true on NaN); AVX-512 gives a k-mask
    cmp = f"{p}cmp_{sfx}_mask" if width == "512" else f"{p}cmp_{sfx}"
    for name, pred in _X86_PREDICATES.items():
        ops[f"cmp_{name}"] = f"{cmp}({{a}}, {{b}}, {pred})"
    ops["blend"] = (f"{p}mask_blend_{sfx}({{m}}, {{b}}, {{a}})" if width == "512"
                    else f"{p}blendv_{sfx}({{b}}, {{a}}, {{m}})")  # {a} where the mask is set, else {b}
    return ops


_X86_PREDICATES = {"lt": "_CMP_LT_OQ", "le": "_CMP_LE_OQ", "gt": "_CMP_GT_OQ", "ge": "_CMP_GE_OQ",
                   "eq": "_CMP_EQ_OQ", "ne": "_CMP_NEQ_UQ"}


_SI = {"512": ("_mm512_loadu_si512((const void*)({p}))", "_mm512_storeu_si512((void*)({p}), {v})"),
       "256": ("_mm256_loadu_si256((const __m256i*)({p}))", "_mm256_storeu_si256((__m256i*)({p}), {v})"),
       "": ("_mm_loadu_si128((const __m128i*)({p}))", "_mm_storeu_si128((__m128i*)({p}), {v})")}


def _x86_int32(width: str) -> dict:
    p = f"_mm{width}_"
    load, store = _SI[width]
    return {"load": load, "store": store, "set1": f"{p}set1_epi32({{a}})",
            "+": f"{p}add_epi32({{a}}, {{b}})", "-": f"{p}sub_epi32({{a}}, {{b}})",
            "*": f"{p}mullo_epi32({{a}}, {{b}})", "min": f"{p}min_epi32({{a}}, {{b}})",
            "max": f"{p}max_epi32({{a}}, {{b}})", "abs": f"{p}abs_epi32({{a}})",
            "cvt_from_float32": f"{p}cvttps_epi32({{a}})"}


# ----------------------------------------------------------------------------- NEON (AArch64)

def _neon(sfx: str, cvt: dict) -> dict:
    ops = {"load": f"vld1q_{sfx}({{p}})", "store": f"vst1q_{sfx}({{p}}, {{v}})", "set1": f"vdupq_n_{sfx}({{a}})",
           "+": f"vaddq_{sfx}({{a}}, {{b}})", "-": f"vsubq_{sfx}({{a}}, {{b}})", "*": f"vmulq_{sfx}({{a}}, {{b}})",
           "min": f"vminq_{sfx}({{a}}, {{b}})", "max": f"vmaxq_{sfx}({{a}}, {{b}})", "abs": f"vabsq_{sfx}({{a}})"}
    if sfx.startswith("f"):
        ops.update({"/": f"vdivq_{sfx}({{a}}, {{b}})", "fma": f"vfmaq_{sfx}({{c}}, {{a}}, {{b}})",
                    "sqrt": f"vsqrtq_{sfx}({{a}})", "floor": f"vrndmq_{sfx}({{a}})", "ceil": f"vrndpq_{sfx}({{a}})",
                    "cmp_lt": f"vcltq_{sfx}({{a}}, {{b}})", "cmp_le": f"vcleq_{sfx}({{a}}, {{b}})",
                    "cmp_gt": f"vcgtq_{sfx}({{a}}, {{b}})", "cmp_ge": f"vcgeq_{sfx}({{a}}, {{b}})",
                    "cmp_eq": f"vceqq_{sfx}({{a}}, {{b}})", "blend": f"vbslq_{sfx}({{m}}, {{a}}, {{b}})"})
        if sfx == "f32":  # != is the complement of ==; AArch64 has vmvnq for 32-bit lanes only
            ops["cmp_ne"] = "vmvnq_u32(vceqq_f32({a}, {b}))"
    ops.update(cvt)
    return ops


# register class -> (dtype, lanes, op table)
CLASSES = {
    "__m512": ("float32", 16, _x86_float("512", "ps")),
    "__m256": ("float32", 8, _x86_float("256", "ps")),
    "__m128": ("float32", 4, _x86_float("", "ps")),
    "__m512d": ("float64", 8, _x86_float("512", "pd")),
    "__m256d": ("float64", 4, _x86_float("256", "pd")),
    "__m128d": ("float64", 2, _x86_float("", "pd")),
    "__m512i": ("int32", 16, _x86_int32("512")),
    "__m256i": ("int32", 8, _x86_int32("256")),
    "__m128i": ("int32", 4, _x86_int32("")),
    "float32x4_t": ("float32", 4, _neon("f32", {"cvt_from_int32": "vcvtq_f32_s32({a})"})),
    "float64x2_t": ("float64", 2, _neon("f64", {})),
    "int32x4_t": ("int32", 4, _neon("s32", {"cvt_from_float32": "vcvtq_s32_f32({a})"})),
}

# register class -> (mask type, the lanes 0..n-1, the mask of lanes lo <= l < hi from them) for masked loads; the
# helper ansorc_lanes_<class>(lo, hi) makes it (_lanes_helper)
_LANE_MASKS = {
    "__m512": ("__mmask16", "_mm512_setr_epi32(" + ", ".join(map(str, range(16))) + ")",
               "_mm512_cmpge_epi32_mask(l, _mm512_set1_epi32(lo)) & _mm512_cmplt_epi32_mask(l, _mm512_set1_epi32(hi))"),
    "__m256": ("__m256i", "_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)",
               "_mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(lo), l), "
               "_mm256_cmpgt_epi32(_mm256_set1_epi32(hi), l))"),
    "__m128": ("__m128i", "_mm_setr_epi32(0, 1, 2, 3)",
               "_mm_andnot_si128(_mm_cmpgt_epi32(_mm_set1_epi32(lo), l), _mm_cmpgt_epi32(_mm_set1_epi32(hi), l))"),
    "__m512d": ("__mmask8", "_mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0)",
                "_mm512_cmpge_epi64_mask(l, _mm512_set1_epi64(lo)) & "
                "_mm512_cmplt_epi64_mask(l, _mm512_set1_epi64(hi))"),
    "__m256d": ("__m256i", "_mm256_set_epi64x(3, 2, 1, 0)",
                "_mm256_andnot_si256(_mm256_cmpgt_epi64(_mm256_set1_epi64x(lo), l), "
                "_mm256_cmpgt_epi64(_mm256_set1_epi64x(hi), l))"),
    "__m128d": ("__m128i", "_mm_set_epi64x(1, 0)",
                "_mm_andnot_si128(_mm_cmpgt_epi64(_mm_set1_epi64x(lo), l), _mm_cmpgt_epi64(_mm_set1_epi64x(hi), l))"),
}

# register class -> (maskload, maskload_fill): {p}'s lanes in mask {m} (table() puts the helper's call there), the
# others 0 / the scalar {c}; the lanes outside the mask are never read, so they cannot fault (AVX vmaskmovps,
# AVX-512 masked vmovups). AVX2 has no masked load that fills: a blend with the mask puts {c} in
_MASKED_LOADS = {
    "__m512": ("_mm512_maskz_loadu_ps({m}, {p})", "_mm512_mask_loadu_ps(_mm512_set1_ps({c}), {m}, {p})"),
    "__m512d": ("_mm512_maskz_loadu_pd({m}, {p})", "_mm512_mask_loadu_pd(_mm512_set1_pd({c}), {m}, {p})"),
    **{cls: (f"_mm{w}_maskload_{x}({{p}}, {{m}})", f"_mm{w}_blendv_{x}(_mm{w}_set1_{x}({{c}}), "
             f"_mm{w}_maskload_{x}({{p}}, {{m}}), _mm{w}_cast{si}_{x}({{m}}))")
       for cls, w, x, si in (("__m256", "256", "ps", "si256"), ("__m128", "", "ps", "si128"),
                             ("__m256d", "256", "pd", "si256"), ("__m128d", "", "pd", "si128"))},
}


def _lanes_helper(cls: str) -> tuple:
    """(name, C definition) of the mask of lanes lo <= l < hi of a register class (_LANE_MASKS)."""
    mtype, iota, mask = _LANE_MASKS[cls]
    itype = "__m512i" if mtype.startswith("__mmask") else mtype
    name = f"ansorc_lanes_{cls.strip('_')}"
    return name, f"static inline {mtype} {name}(int32_t lo, int32_t hi) {{ {itype} l = {iota}; return {mask}; }}"


# ISA -> its register classes, a header, and how many vector registers it has (the register-blocking budget)
ISAS = {
    "avx512": (("__m512", "__m256", "__m128", "__m512d", "__m256d", "__m128d", "__m512i", "__m256i", "__m128i"),
               "#include <immintrin.h>", 32),
    "avx2": (("__m256", "__m128", "__m256d", "__m128d", "__m256i", "__m128i"), "#include <immintrin.h>", 16),
    "neon": (("float32x4_t", "float64x2_t", "int32x4_t"), "#include <arm_neon.h>", 32),
    "generic": ((), "", 16),
}

# ISA -> the statement that keeps register {a} in a register from here on (an empty asm claiming to change it), so
# gcc cannot fold its load into each FMA as a memory operand (ir/passes/pin.py). Measured on AVX2 only
# (docs/perf-notes.md); an ISA without an entry keeps the compiler's choice.
PIN = {"avx2": '__asm__("" : "+x"({a}))'}

# ISA -> the statement after which streaming stores are visible to other threads (run by each thread that made them)
STORE_FENCE = {"avx512": "_mm_sfence()", "avx2": "_mm_sfence()"}

REDUCE_NAMES = {"+": "add", "*": "mul", "min": "min", "max": "max"}
_REDUCE_STEP = {"+": "t[i] = t[i] + t[i + w];", "*": "t[i] = t[i] * t[i + w];",
                "min": "t[i] = t[i] < t[i + w] ? t[i] : t[i + w];", "max": "t[i] = t[i] > t[i + w] ? t[i] : t[i + w];"}


# float32 x86 registers halved for a horizontal reduction: (the half's class, low half, high half); __m128 last
# pairs lanes 0,1 with 2,3 (movehl), then lane 0 with 1 (movehdup): the same pairing as the lane-array tree below.
_F32_HALVES = {"__m512": ("__m256", "_mm512_castps512_ps256({v})",
                          "_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd({v}), 1))"),
               "__m256": ("__m128", "_mm256_castps256_ps128({v})", "_mm256_extractf128_ps({v}, 1)"),
               "__m128": ("__m128", "{v}", "_mm_movehl_ps({v}, {v})")}


def _reduce_in_registers(cls: str, op: str) -> str:
    """The body of a float32 x86 horizontal reduction as shuffles: log2(lanes) dependent steps."""
    steps, c = [], cls
    while c != "__m128":                           # halve down to __m128, then halve that twice
        steps.append(_F32_HALVES[c])
        c = steps[-1][0]
    steps += [_F32_HALVES["__m128"], ("__m128", "{v}", "_mm_movehdup_ps({v})")]
    lines, v = [], "v"
    for k, (half, lo, hi) in enumerate(steps):
        lines.append(f"{half} h{k} = " + CLASSES[half][2][op].format(a=lo.format(v=v), b=hi.format(v=v)) + ";")
        v = f"h{k}"
    return " ".join(lines) + f" return _mm_cvtss_f32({v});"


def _reduce_helper(cls: str, op: str) -> tuple:
    """(name, C definition) of a horizontal reduction through a lane array, as a pairwise tree (lane i with lane
    i + w, w halving): log2(lanes) dependent steps that gcc turns into shuffles and vector ops, where a left-to-right
    fold is lanes - 1 dependent scalar ops (gcc may not reorder float ops): T2D -> 3 channels folds once per output."""
    dtype, lanes, ops = CLASSES[cls]
    ctype = C_SCALAR[dtype]
    name = f"ansorc_reduce_{REDUCE_NAMES[op]}_{cls.strip('_')}"
    store = ops["store"].format(p="t", v="v")
    if cls in _F32_HALVES and op in CLASSES[cls][2]:
        return name, f"static inline {ctype} {name}({cls} v) {{ {_reduce_in_registers(cls, op)} }}"
    body = (f"static inline {ctype} {name}({cls} v) {{ {ctype} t[{lanes}]; {store}; "
            f"for (int w = {lanes // 2}; w > 0; w >>= 1) {{ for (int i = 0; i < w; ++i) {{ {_REDUCE_STEP[op]} }} }} "
            f"return t[0]; }}")
    return name, body


_EXP_WIDTHS = {"__m512": ("512", "si512"), "__m256": ("256", "si256"), "__m128": ("", "si128")}


def _exp_helper(cls: str) -> tuple:
    """(name, C definition) of a float32 exp on x86 (2^n * a degree-6 polynomial, about 1 ulp),
    so that an exp loop vectorizes instead of calling expf per lane. n = round(x log2 e) comes from adding
    1.5 * 2^23 + 126, whose low mantissa bits then hold n + 126: the scale 2^(n-1) is one shift, with no float/int
    conversions (why it pays on softmax: docs/perf-notes.md).
    The polynomial's coefficients are doubled (exactly) so that 2y * 2^(n-1) keeps n = 128 finite near FLT_MAX;
    results below about 2e-38 flush to 0; NaN propagates, -inf gives 0."""
    w, si = _EXP_WIDTHS[cls]
    p = f"_mm{w}_"
    name = f"ansorc_exp_{cls.strip('_')}"
    c = [1.38144e-3, 8.368807e-3, 4.1668396e-2, 1.666652e-1, 4.9999994e-1, 1.0, 1.0]  # 1 + r + r^2 q(r), minimax
    poly = f"{p}set1_ps({2 * c[0]!r}f)"
    for k in c[1:]:
        poly = f"{p}fmadd_ps({poly}, r, {p}set1_ps({2 * k!r}f))"
    magic = f"{p}set1_ps(12583038.0f)"                # 1.5 * 2^23 + 126
    body = (f"static inline {cls} {name}({cls} x) {{ "
            f"x = {p}max_ps({p}set1_ps(-87.5f), {p}min_ps({p}set1_ps(88.8f), x)); "
            f"{cls} t = {p}fmadd_ps(x, {p}set1_ps(1.44269504089f), {magic}); "
            f"{cls} fn = {p}sub_ps(t, {magic}); "
            f"{cls} r = {p}fnmadd_ps(fn, {p}set1_ps(0.693359375f), x); "
            f"r = {p}fnmadd_ps(fn, {p}set1_ps(-2.12194440e-4f), r); "
            f"return {p}mul_ps({poly}, {p}cast{si}_ps({p}slli_epi32({p}castps_{si}(t), 23))); }}")
    return name, body


def _tanh_helper(cls: str) -> tuple:
    """(name, C definition) of a float32 tanh on x86, so that a tanh loop (GELU's tanh form, LSTM and GRU cells)
    vectorizes instead of calling tanhf per lane: Cephes' tanhf polynomial x + x^3 P(x^2) below |x| = 0.625,
    else 1 - 2 / (exp(2|x|) + 1) on the vector exp with x's sign (no cancellation there: the result is above
    0.55); a few ulp. NaN propagates through the exp branch; large |x| gives +-1."""
    w = _EXP_WIDTHS[cls][0]
    p = f"_mm{w}_"
    name, exp = f"ansorc_tanh_{cls.strip('_')}", _exp_helper(cls)[0]
    c = [-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1, -3.33332819422e-1]
    poly = f"{p}set1_ps({c[0]!r}f)"
    for k in c[1:]:
        poly = f"{p}fmadd_ps({poly}, z, {p}set1_ps({k!r}f))"
    ops = CLASSES[cls][2]    # the class's own spellings of abs, < and blend

    def pick(cond_a: str, cond_b: str, a: str, b: str) -> str:   # cond_a < cond_b ? a : b, per lane
        return ops["blend"].format(m=ops["cmp_lt"].format(a=cond_a, b=cond_b), a=a, b=b)
    absx = ops["abs"].format(a="x")
    one, two = f"{p}set1_ps(1.0f)", f"{p}set1_ps(2.0f)"
    big = f"{p}sub_ps({one}, {p}div_ps({two}, {p}add_ps({exp}({p}add_ps(a, a)), {one})))"
    body = (f"static inline {cls} {name}({cls} x) {{ "
            f"{cls} a = {absx}; {cls} z = {p}mul_ps(x, x); "
            f"{cls} small = {p}fmadd_ps({p}mul_ps({poly}, z), x, x); "
            f"{cls} large = {big}; "
            f"large = {pick('x', f'{p}setzero_ps()', f'{p}sub_ps({p}setzero_ps(), large)', 'large')}; "
            f"return {pick('a', f'{p}set1_ps(0.625f)', 'small', 'large')}; }}")
    return name, body


def _x4(a: str, b: str, imm: int) -> str:
    """The 128-bit lanes of two __m512 picked by imm (0x88: the even ones, 0xDD: the odd; a's two, then b's)."""
    return f"_mm512_shuffle_f32x4({a}, {b}, 0x{imm:02X})"


# register class -> the C that transposes rows r0..r{n-1} into columns c0..c{n-1} (float32; ir/passes/transpose.py)
_TRANSPOSES = {
    "__m128": "_MM_TRANSPOSE4_PS(r0, r1, r2, r3); __m128 c0 = r0, c1 = r1, c2 = r2, c3 = r3;",
    "__m256": " ".join(
        [f"__m256 t{k} = _mm256_unpacklo_ps(r{k}, r{k + 1}), t{k + 1} = _mm256_unpackhi_ps(r{k}, r{k + 1});"
         for k in (0, 2, 4, 6)] +
        [f"__m256 u{k} = _mm256_shuffle_ps(t{a}, t{a + 2}, 0x44), u{k + 1} = _mm256_shuffle_ps(t{a}, t{a + 2}, 0xEE);"
         for k, a in ((0, 0), (2, 1), (4, 4), (6, 5))] +
        [f"__m256 c{k} = _mm256_permute2f128_ps(u{k % 4}, u{k % 4 + 4}, {'0x20' if k < 4 else '0x31'});"
         for k in range(8)]),
    "__m512": " ".join(   # 4x4 blocks within each 128-bit lane, then the lanes gathered by two 128-bit shuffles
        [f"__m512 t{k} = _mm512_unpacklo_ps(r{k}, r{k + 1}), t{k + 1} = _mm512_unpackhi_ps(r{k}, r{k + 1});"
         for k in range(0, 16, 2)] +
        [f"__m512 u{k + m} = _mm512_shuffle_ps(t{k + m // 2}, t{k + m // 2 + 2}, {'0x44' if m % 2 == 0 else '0xEE'});"
         for k in range(0, 16, 4) for m in range(4)] +
        [f"__m512 a{m} = {_x4(f'u{m}', f'u{m + 4}', 0x88)}, b{m} = {_x4(f'u{m}', f'u{m + 4}', 0xDD)}, "
         f"e{m} = {_x4(f'u{m + 8}', f'u{m + 12}', 0x88)}, f{m} = {_x4(f'u{m + 8}', f'u{m + 12}', 0xDD)}; "
         f"__m512 c{m} = {_x4(f'a{m}', f'e{m}', 0x88)}, c{m + 8} = {_x4(f'a{m}', f'e{m}', 0xDD)}, "
         f"c{m + 4} = {_x4(f'b{m}', f'f{m}', 0x88)}, c{m + 12} = {_x4(f'b{m}', f'f{m}', 0xDD)};" for m in range(4)]),
    "float32x4_t": ("float32x4x2_t a = vtrnq_f32(r0, r1), b = vtrnq_f32(r2, r3); "
                    "float32x4_t c0 = vcombine_f32(vget_low_f32(a.val[0]), vget_low_f32(b.val[0])), "
                    "c1 = vcombine_f32(vget_low_f32(a.val[1]), vget_low_f32(b.val[1])), "
                    "c2 = vcombine_f32(vget_high_f32(a.val[0]), vget_high_f32(b.val[0])), "
                    "c3 = vcombine_f32(vget_high_f32(a.val[1]), vget_high_f32(b.val[1]));"),
}


def _transpose_helper(cls: str) -> tuple:
    """(name, C definition): d[k * ds + l] = s[l * ss + k] for a lanes x lanes block, rows loaded whole, transposed
    in registers, columns stored whole (a copy gathering a column, lane by lane, loads every element alone)."""
    _, lanes, ops = CLASSES[cls]
    name = f"ansorc_transpose_{cls.strip('_')}"
    loads = ", ".join(f"r{k} = " + ops["load"].format(p=f"s + {k} * ss") for k in range(lanes))
    stores = " ".join(ops["store"].format(p=f"d + {k} * ds", v=f"c{k}") + ";" for k in range(lanes))
    return name, (f"static inline void {name}(const float* s, int64_t ss, float* d, int64_t ds) {{ "
                  f"{cls} {loads}; {_TRANSPOSES[cls]} {stores} }}")


def _helpers(isa: str) -> list:
    """(name, definition) of every prelude helper this ISA's table may call."""
    out = [_reduce_helper(cls, op) for cls in ISAS[isa][0] for op in REDUCE_NAMES]
    out += [_transpose_helper(cls) for cls in ISAS[isa][0] if cls in _TRANSPOSES]
    out += [_lanes_helper(cls) for cls in ISAS[isa][0] if cls in _LANE_MASKS]
    out += [_exp_helper(cls) for cls in ISAS[isa][0] if cls in _EXP_WIDTHS]
    return out + [_tanh_helper(cls) for cls in ISAS[isa][0] if cls in _EXP_WIDTHS]   # after the exp it calls


@lru_cache(maxsize=None)
def table(isa: str) -> dict:
    """{(op, dtype, lanes): template} for one ISA, plus ("type", dtype, lanes): the C vector type."""
    if isa not in ISAS:
        raise ValueError(f"unknown ISA {isa!r}; known: {', '.join(ISAS)}")
    out = {}
    for cls in ISAS[isa][0]:
        dtype, lanes, ops = CLASSES[cls]
        out[("type", dtype, lanes)] = cls
        for op, tmpl in ops.items():
            out[(op, dtype, lanes)] = tmpl
        for op in REDUCE_NAMES:
            out[(f"reduce_{op}", dtype, lanes)] = _reduce_helper(cls, op)[0] + "({a})"
        if cls in _EXP_WIDTHS:
            out[("exp", dtype, lanes)] = _exp_helper(cls)[0] + "({a})"
            out[("tanh", dtype, lanes)] = _tanh_helper(cls)[0] + "({a})"
        if cls in _TRANSPOSES:  # a statement: {p} source row 0, {a} its row stride, {q} destination, {b} likewise
            out[("transpose", dtype, lanes)] = _transpose_helper(cls)[0] + "({p}, {a}, {q}, {b})"
        if cls in _MASKED_LOADS:   # {a} {b}: the lanes lo <= l < hi read; {c} the others' value
            mask = _lanes_helper(cls)[0] + "({a}, {b})"
            zero, fill = (t.replace("{m}", mask) for t in _MASKED_LOADS[cls])
            out[("maskload", dtype, lanes)], out[("maskload_fill", dtype, lanes)] = zero, fill
        if isa in PIN and dtype != "int32":
            out[("pin", dtype, lanes)] = PIN[isa]
    return out


@lru_cache(maxsize=None)
def caps(isa: str) -> VectorCaps:
    """What the vectorizer may use on this ISA."""
    t = table(isa)
    types = frozenset((d, n) for (op, d, n) in t if op == "type")
    ops = frozenset(k for k in t if k[0] != "type")
    return VectorCaps(types, ops, ISAS[isa][2])


def prelude(isa: str, used: str = "") -> str:
    """The header for this ISA, and the helper definitions that `used` (the kernel's text) calls."""
    return "\n".join(prelude_parts(isa, used))


def prelude_parts(isa: str, used: str = "") -> list:
    """The ISA's header and each helper `used` calls, as separate texts (a network library keeps each helper once);
    a trailing empty text keeps the blank line after a header."""
    header = ISAS[isa][1]
    needed = used
    for name, body in reversed(_helpers(isa)):   # a helper's own calls come before it (tanh calls exp)
        if name + "(" in needed:
            needed += body
    helpers = [body for name, body in _helpers(isa) if name + "(" in needed]
    return [header, *helpers, *([""] if header else [])]


def intrinsic(isa: str, op: str, dtype: str, lanes: int) -> str:
    try:
        return table(isa)[(op, dtype, lanes)]
    except KeyError:
        raise NotImplementedError(f"no {op} for {dtype} x{lanes} on {isa}") from None


def vector_type(isa: str, dtype: str, lanes: int) -> str:
    return intrinsic(isa, "type", dtype, lanes)


__all__ = ["table", "caps", "prelude", "prelude_parts", "intrinsic", "vector_type", "CLASSES", "ISAS", "C_SCALAR",
           "STORE_FENCE"]
