"""Dot-product instructions: (ISA, features) -> the C of one VDot (ir/passes/vector.py), as data.

Each `DotInstr` adds to every 32-bit lane of an accumulator the products of `group` narrow elements: one group
`a` broadcast to every lane (an int32 word holding the group), and the lane's own group of `b` (lanes x group
elements, contiguous). Its C is a helper `ansorc_dot_<name>(acc, word, pointer)`; the table's order is the
preference, so a target picks the first entry its ISA and features allow for a (dtypes, lanes, group)
(`offers`). The search asks `shape(target, dtypes)` for the lanes and group to tile by (search/dot_rule.py).

u8 x s8 -> s32 (ONNX MatMulInteger's convention):
- AVX-512 VNNI `vpdpbusd`, AVX-VNNI `{vex} vpdpbusd`: four u8 x s8 products a lane, added exactly (no saturation).
- AVX2 without VNNI: `vpmaddubsw` (pairs of u8 x s8 products, summed with int16 *saturation*), then `vpmaddwd`
  with ones (pairs to int32) and `vpaddd`. A pair 255 * -128 * 2 = -65280 saturates, so the broadcast bytes are
  split as a = (a & 0x7f) + (a & 0x80): with the low 7 bits a pair lies in [-32512, 32258], with the high bit
  (0 or 128) in [-32768, 32512]; neither saturates, and each goes through vpmaddwd separately: exact, at twice
  the multiply work (the masks are per broadcast group, shared by a row's vectors).
- NEON dotprod (Armv8.2 `sdot`): signed x signed only, so a = (a ^ 0x80) + 128 as a signed byte:
  sdot(a ^ 0x80, b) + 128 * sum(b), the latter as -sdot(-128, b) (b's group sum, shared by a column's rows).
bf16 x bf16 -> f32: AVX-512 BF16 `vdpbf16ps` (two products a lane; it rounds to nearest even and flushes
denormals, as the instruction does, so results may differ from the scalar loop by the summation's rounding).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.passes.vector import VLoad
from .target import Target

U8S8 = ("uint8", "int8", "int32")
BF16 = ("bfloat16", "bfloat16", "float32")


@dataclass(frozen=True)
class DotInstr:
    name: str
    isas: tuple          # ISAs whose targets may use it
    needs: frozenset     # cpuinfo features beyond the ISA (Target.features)
    dtypes: tuple        # (broadcast operand, vector operand, accumulator)
    lanes: int
    group: int
    vtype: str           # the accumulator's C vector type
    body: str            # the helper's body: acc, a (an int32 word holding the broadcast group), b (a pointer)




def _split_maddubs(w: str) -> str:
    """u8 x s8 through vpmaddubsw without its int16 saturation: the broadcast bytes split into their low 7 bits
    and their high bit (module docstring). w: "256" or "" (128-bit)."""
    p, si, bits = f"_mm{w}_", f"__m{w or 128}i", w or "128"
    load = "_mm256_loadu_si256((const __m256i*)b)" if w else "_mm_loadu_si128((const __m128i*)b)"
    return (f"{si} va = {p}set1_epi32(a), vb = {load}; "
            f"{si} lo = {p}and_si{bits}(va, {p}set1_epi8(0x7f)), "
            f"hi = {p}and_si{bits}(va, {p}set1_epi8((char)0x80)), one = {p}set1_epi16(1); "
            f"return {p}add_epi32(acc, {p}add_epi32({p}madd_epi16({p}maddubs_epi16(lo, vb), one), "
            f"{p}madd_epi16({p}maddubs_epi16(hi, vb), one)));")


DOTS = (
    DotInstr("vnni512_u8s8", ("avx512",), frozenset({"avx512_vnni"}), U8S8, 16, 4, "__m512i",
             "return _mm512_dpbusd_epi32(acc, _mm512_set1_epi32(a), _mm512_loadu_si512((const void*)b));"),
    DotInstr("avxvnni_u8s8", ("avx2",), frozenset({"avx_vnni"}), U8S8, 8, 4, "__m256i",
             "return _mm256_dpbusd_avx_epi32(acc, _mm256_set1_epi32(a), _mm256_loadu_si256((const __m256i*)b));"),
    DotInstr("avx2_u8s8", ("avx2", "avx512"), frozenset(), U8S8, 8, 4, "__m256i", _split_maddubs("256")),
    DotInstr("ssse3_u8s8", ("avx2", "avx512"), frozenset(), U8S8, 4, 4, "__m128i", _split_maddubs("")),
    DotInstr("neondot_u8s8", ("neon",), frozenset({"asimddp"}), U8S8, 4, 4, "int32x4_t",
             "int8x16_t vb = vld1q_s8((const int8_t*)b); "
             "int8x16_t va = vreinterpretq_s8_s32(vdupq_n_s32(a ^ (int32_t)0x80808080u)); "
             "return vsubq_s32(vdotq_s32(acc, va, vb), vdotq_s32(vdupq_n_s32(0), vdupq_n_s8(-128), vb));"),
    DotInstr("bf16x512", ("avx512",), frozenset({"avx512_bf16"}), BF16, 16, 2, "__m512",
             "return _mm512_dpbf16_ps(acc, (__m512bh)_mm512_set1_epi32(a), "
             "(__m512bh)_mm512_loadu_si512((const void*)b));"),
)
BY_NAME = {d.name: d for d in DOTS}
_C_TYPES = {"uint8": "uint8_t", "int8": "int8_t", "bfloat16": "uint16_t"}


def usable(target: Target) -> tuple:
    """The table's entries this target's ISA and features allow, in order of preference."""
    isa, features = getattr(target, "isa", None), getattr(target, "features", frozenset())
    return tuple(d for d in DOTS if isa in d.isas and d.needs <= features)


def offers(target: Target) -> dict:
    """(broadcast dtype, vector dtype, accumulator dtype, lanes, group) -> instruction name (passes/dot.py)."""
    out = {}
    for d in usable(target):
        out.setdefault((*d.dtypes, d.lanes, d.group), d.name)
    return out


def offers_within(vector_bytes: int) -> dict:
    """`offers` of every instruction whose vector fits `vector_bytes`, whatever the ISA extensions: the cost
    model's view (search/features.py), which knows the hardware's width but not its cpuinfo features. That
    suffices: the sketch rule makes the dot shape only for a target that has the instruction."""
    out = {}
    for d in DOTS:
        if d.lanes * 4 <= vector_bytes:
            out.setdefault((*d.dtypes, d.lanes, d.group), d.name)
    return out


def shape(target: Target, dtypes: tuple) -> tuple | None:
    """(lanes, group) of the preferred instruction for (broadcast, vector, accumulator) dtypes, or None."""
    for d in usable(target):
        if d.dtypes == dtypes:
            return d.lanes, d.group
    return None


def helper(d: DotInstr) -> tuple:
    """(name, C definition) of the instruction's helper."""
    name = f"ansorc_dot_{d.name}"
    return name, (f"static inline {d.vtype} {name}({d.vtype} acc, int32_t a, const {_C_TYPES[d.dtypes[1]]}* b) "
                  f"{{ {d.body} }}")


# the broadcast group as an int32 word: one unaligned load, or its elements packed (a guarded group's last step)
WORD_HELPERS = {
    "ansorc_word_load": "static inline int32_t ansorc_word_load(const void* p) "
                        "{ int32_t v; __builtin_memcpy(&v, p, 4); return v; }",
    "ansorc_word_u8x4": "static inline int32_t ansorc_word_u8x4(uint32_t a, uint32_t b, uint32_t c, uint32_t d) "
                        "{ return (int32_t)((a & 255u) | (b & 255u) << 8 | (c & 255u) << 16 | (d & 255u) << 24); }",
    "ansorc_word_u16x2": "static inline int32_t ansorc_word_u16x2(uint32_t a, uint32_t b) "
                         "{ return (int32_t)((a & 65535u) | (b & 65535u) << 16); }",
}
PACK = {("uint8", 4): "ansorc_word_u8x4", ("int8", 4): "ansorc_word_u8x4", ("bfloat16", 2): "ansorc_word_u16x2"}


def render(r, e) -> str:
    """C of a VDot through renderer r (codegen/c.py's CRenderer: its expr and subscript)."""
    if isinstance(e.a, VLoad):
        word = f"ansorc_word_load({e.a.buffer} + {r.subscript(e.a.buffer, e.a.index)})"
    else:
        word = f"{PACK[(e.a.dtype, e.a.lanes)]}({', '.join(r.expr(x) for x in e.a.elems)})"
    b = f"({e.b.buffer} + {r.subscript(e.b.buffer, e.b.index)})"
    return f"{helper(BY_NAME[e.instr])[0]}({r.expr(e.acc)}, {word}, {b})"


def prelude_parts(used: str) -> list:
    """The helpers the kernel's text calls (none for programs without dot products: their C is unchanged)."""
    out = [body for name, body in WORD_HELPERS.items() if name + "(" in used]
    return out + [helper(d)[1] for d in DOTS if helper(d)[0] + "(" in used]


__all__ = ["DOTS", "DotInstr", "offers", "offers_within", "shape", "usable", "prelude_parts", "helper", "render",
           "PACK", "BY_NAME"]
