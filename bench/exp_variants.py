"""A softmax row's best logged program with today's vector exp (codegen/simd.py: s37's magic-number rounding, s40's
degree-6 polynomial), with s37's (a degree-7 polynomial) and with the one before it (two float/int conversions),
a hand-written 3-pass version of the same row
(max; exp stored into the output while summing; scale in place: onnxruntime's structure, not in our space), and
onnxruntime, side by side in one process, checked equal.

    python bench/exp_variants.py IDX LOG [--rounds 7]      # IDX: SFM shape index (2: 1024 x 1024)
"""
from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import ansorc  # noqa: E402
from suite_timing import WARM, peer_calls, row_parser, tuned_row  # noqa: E402  (sets OMP_PROC_BIND)
from ansorc.api import Kernel  # noqa: E402
from ansorc.codegen import simd  # noqa: E402
from ansorc.measure.alternate import median_alternating  # noqa: E402
from ansorc.measure.builder import build  # noqa: E402

# the __m256 exp helper as it was before s37 (Cephes' polynomial; n by cvtps_epi32 and back)
OLD_EXP = (
    "static inline __m256 ansorc_exp_m256(__m256 x) { x = _mm256_max_ps(_mm256_set1_ps(-87.5f), "
    "_mm256_min_ps(_mm256_set1_ps(88.8f), x)); __m256i n = _mm256_cvtps_epi32(_mm256_mul_ps(x, "
    "_mm256_set1_ps(1.44269504089f))); __m256 fn = _mm256_cvtepi32_ps(n); __m256 r = _mm256_fnmadd_ps(fn, "
    "_mm256_set1_ps(0.693359375f), x); r = _mm256_fnmadd_ps(fn, _mm256_set1_ps(-2.12194440e-4f), r); __m256 y = "
    "_mm256_fmadd_ps(_mm256_mul_ps(_mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_fmadd_ps("
    "_mm256_set1_ps(0.000198756915f), r, _mm256_set1_ps(0.0013981999507f)), r, _mm256_set1_ps(0.0083334519073f)), "
    "r, _mm256_set1_ps(0.041665795894f)), r, _mm256_set1_ps(0.16666665459f)), r, _mm256_set1_ps(0.50000001201f)), "
    "r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f))); n = _mm256_slli_epi32(_mm256_add_epi32(n, "
    "_mm256_set1_epi32(126)), 23); return _mm256_mul_ps(_mm256_add_ps(y, y), _mm256_castsi256_ps(n)); }")


# the __m256 exp helper of s37 (the magic-number rounding above a degree-7 polynomial)
S37_EXP = (
    "static inline __m256 ansorc_exp_m256(__m256 x) { x = _mm256_max_ps(_mm256_set1_ps(-87.5f), _mm256_min_ps("
    "_mm256_set1_ps(88.8f), x)); __m256 t = _mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504089f), _mm256_set1_ps("
    "12583038.0f)); __m256 fn = _mm256_sub_ps(t, _mm256_set1_ps(12583038.0f)); __m256 r = _mm256_fnmadd_ps(fn, "
    "_mm256_set1_ps(0.693359375f), x); r = _mm256_fnmadd_ps(fn, _mm256_set1_ps(-2.12194440e-4f), r); return "
    "_mm256_mul_ps(_mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_fmadd_ps("
    "_mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_set1_ps(0.00039751383f), r, _mm256_set1_ps(0.0027963999014f)), r, "
    "_mm256_set1_ps(0.0166669038146f)), r, _mm256_set1_ps(0.083331591788f)), r, _mm256_set1_ps(0.33333330918f)), "
    "r, _mm256_set1_ps(1.00000002402f)), r, _mm256_set1_ps(2.0f)), r, _mm256_set1_ps(2.0f)), _mm256_castsi256_ps("
    "_mm256_slli_epi32(_mm256_castps_si256(t), 23))); }")


def with_old_exp(code: str, helper: str = OLD_EXP) -> str:
    """The translation unit with its __m256 exp helper replaced by `helper` (unchanged if it has none)."""
    return re.sub(r"static inline __m256 ansorc_exp_m256\(__m256 x\) \{.*?\}\n", lambda m: helper + "\n", code)


def three_pass(entry: str, rows: int, n: int) -> str:
    """The row by hand in onnxruntime's structure, with the prelude's current exp."""
    vec = lambda f: " ".join(f.format(o=o) for o in (0, 8, 16, 24))  # noqa: E731
    loop = f"for (int j = 0; j < {n}; j += 32)"
    tree = "_mm256_{op}_ps(_mm256_{op}_ps({v}0, {v}8), _mm256_{op}_ps({v}16, {v}24))"
    exp_sum = ("__m256 e{o} = ansorc_exp_m256(_mm256_sub_ps(_mm256_loadu_ps(a + j + {o}), vm)); "
               "_mm256_storeu_ps(o + j + {o}, e{o}); s{o} = _mm256_add_ps(s{o}, e{o});")
    scale = "_mm256_storeu_ps(o + j + {o}, _mm256_mul_ps(_mm256_loadu_ps(o + j + {o}), r));"
    return f"""int {entry}(const float* restrict A, float* restrict softmax) {{
  #pragma omp parallel for schedule(static)
  for (int32_t i = 0; i < {rows}; ++i) {{
    const float* a = A + i * {n}; float* o = softmax + i * {n};
    __m256 m0 = _mm256_set1_ps(-INFINITY), m8 = m0, m16 = m0, m24 = m0;
    {loop} {{ {vec("m{o} = _mm256_max_ps(m{o}, _mm256_loadu_ps(a + j + {o}));")} }}
    __m256 vm = _mm256_set1_ps(ansorc_reduce_max_m256({tree.format(op="max", v="m")}));
    __m256 s0 = _mm256_setzero_ps(), s8 = s0, s16 = s0, s24 = s0;
    {loop} {{ {vec(exp_sum)} }}
    __m256 r = _mm256_set1_ps(1.0f / ansorc_reduce_add_m256({tree.format(op="add", v="s")}));
    {loop} {{ {vec(scale)} }}
  }}
  return 0;
}}
"""


def hand_source(code: str, entry: str, rows: int, n: int) -> str:
    """The program's translation unit with its kernel replaced by three_pass (and the horizontal reductions it
    calls defined, where the program did not use them)."""
    head, tail = code[:code.index(f"int {entry}(")], code[code.index(f"int {entry}_packed"):]
    needed = [body for name, body in simd._helpers("avx2")
              if name in ("ansorc_reduce_max_m256", "ansorc_reduce_add_m256") and f"{name}(__m256 v)" not in head]
    return head + "".join(b + "\n" for b in needed) + three_pass(entry, rows, n) + tail


def variant(kern, code: str) -> Kernel:
    src = dataclasses.replace(kern.source_obj, code=code)
    [res] = build([src], target_flags=kern.spec.flags, cc=kern.spec.cc)
    if not res.ok:
        raise SystemExit(res.error_msg)
    return Kernel(src, res.lib_path, kern.spec)


def main(argv=None) -> int:
    ap = row_parser(__doc__)
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args(["SFM", *(argv if argv is not None else sys.argv[1:])])
    kern, dag, args, values, zeros = tuned_row("SFM", a.idx, a.log)
    code, entry = kern.source_obj.code, kern.source_obj.entry
    if "ansorc_exp_m256(" not in code:
        raise SystemExit("this program's exp is not an __m256 vector exp (an AVX2 machine is needed)")
    old_code = with_old_exp(code)
    if old_code == code:
        raise SystemExit("the old exp could not be put in: this program's exp helper is not the expected one")
    kernels = {"ours": kern, "ours, s37 exp": variant(kern, with_old_exp(code, S37_EXP)),
               "ours, old exp": variant(kern, old_code),
               "by hand, 3 passes": variant(kern, hand_source(code, entry, *dag.inputs[0].shape))}
    ins = [ansorc.array(v) for v in values]
    outs = {k: [ansorc.array(z) for z in zeros] for k in kernels}
    fns = {k: (lambda k=k: kernels[k](*ins, *outs[k])) for k in kernels}
    fns.update({k: call for k, (call, _) in peer_calls("SFM", args, values).items() if k == "onnxruntime"})
    for fn in fns.values():
        fn()
    for k in kernels:
        np.testing.assert_allclose(outs[k][0], outs["ours"][0], rtol=1e-5, atol=1e-8)
    med = median_alternating(fns, rounds=a.rounds, min_time=0.05, warm=WARM)
    print(f"SFM {a.idx} {tuple(dag.inputs[0].shape)}: " + ", ".join(f"{k} {v * 1e6:.1f} us" for k, v in med.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
