"""Names C would reject or that would shadow what generated code uses: keywords, the C library's names (the
headers every kernel includes, and the symbols a shared library must not interpose), and ansorc's own prefixes.

A tensor named `expf` hides expf() inside the kernel; a kernel named `memset` exports a symbol that replaces libc's
memset in the process that loads it; `int32_t` or `INT32_MAX` do not compile. `reserved_reason` says why a name
cannot be used (None when it can): the expression-file checker and `--name` reject with it, and codegen renames.
"""
from __future__ import annotations

import re

C_KEYWORDS = frozenset("""auto break case char const continue default do double else enum extern float for goto if
inline int long register restrict return short signed sizeof static struct switch typedef union unsigned void
volatile while _Bool _Complex _Imaginary _Alignas _Alignof _Atomic _Generic _Noreturn _Static_assert
_Thread_local asm bool true false NULL""".split())

# math.h functions; each also has f (float) and l (long double) forms
_MATH = """acos acosh asin asinh atan atan2 atanh cbrt ceil copysign cos cosh erf erfc exp exp2 expm1 fabs fdim floor
fma fmax fmin fmod frexp hypot ilogb ldexp lgamma llrint llround log log10 log1p log2 logb lrint lround modf nan
nearbyint nextafter nexttoward pow remainder remquo rint round scalbln scalbn sin sinh sqrt tan tanh tgamma
trunc""".split()
C_LIBRARY = frozenset([*_MATH, *(f + "f" for f in _MATH), *(f + "l" for f in _MATH), *"""
j0 j1 jn y0 y1 yn isnan isinf isfinite isnormal signbit fpclassify isgreater isless INFINITY NAN HUGE_VAL
HUGE_VALF HUGE_VALL FP_NAN FP_INFINITE FP_ZERO FP_NORMAL FP_SUBNORMAL M_PI M_E M_SQRT2 M_LN2 FLT_MAX FLT_MIN
FLT_EPSILON DBL_MAX DBL_MIN DBL_EPSILON float_t double_t
malloc calloc realloc free aligned_alloc posix_memalign abort exit _Exit atexit quick_exit at_quick_exit abs labs
llabs div ldiv lldiv atoi atol atoll atof strtol strtoll strtoul strtoull strtod strtof strtold rand srand random
srandom qsort bsearch getenv setenv unsetenv system mblen mbtowc wctomb EXIT_SUCCESS EXIT_FAILURE RAND_MAX
MB_CUR_MAX div_t ldiv_t lldiv_t
memset memcpy memmove memcmp memchr strlen strcpy strncpy strcmp strncmp strcat strncat strchr strrchr strstr
strdup strtok strerror
printf fprintf sprintf snprintf vprintf puts fputs putchar getchar fopen fclose fread fwrite fflush stdin stdout
stderr FILE EOF
size_t ptrdiff_t ssize_t wchar_t errno assert offsetof NDEBUG SIZE_MAX PTRDIFF_MIN PTRDIFF_MAX WCHAR_MIN
WCHAR_MAX WINT_MIN WINT_MAX SIG_ATOMIC_MIN SIG_ATOMIC_MAX
main dlopen dlsym dlclose signal raise setjmp longjmp""".split()])

_PATTERNS = (  # stdint.h types and limits, vector intrinsics and types, OpenMP and pthreads
    (re.compile(r"u?int(8|16|32|64|ptr|max|_least\d+|_fast\d+)_t"), "a C type name (stdint.h)"),
    (re.compile(r"U?INT(8|16|32|64|PTR|MAX|_LEAST\d+|_FAST\d+)_(MIN|MAX|C)"), "a C library macro (stdint.h)"),
    (re.compile(r"(u?int|float|poly|bfloat)\d+x\d+(x\d+)?_t"), "a vector type name (arm_neon.h)"),
    (re.compile(r"_mm\w*|_m\d+\w*"), "an intrinsic's name (immintrin.h)"),
    (re.compile(r"(omp|pthread|kmp)_\w*", re.IGNORECASE), "an OpenMP or threads library name"),
)


def reserved_reason(name: str) -> str | None:
    """Why `name` cannot name a C identifier ansorc emits (a tensor, an index, a kernel), or None if it can."""
    if name in C_KEYWORDS:
        return "a C keyword"
    if name in C_LIBRARY:
        return "a C library name"
    if name.lower().startswith("ansorc_"):
        return "reserved for ansorc's generated code (names starting with 'ansorc_')"
    if name.startswith("__") or (name.startswith("_") and name[1:2].isupper()):
        return "reserved in C (names starting with '__' or '_' and a capital letter)"
    for pattern, why in _PATTERNS:
        if pattern.fullmatch(name):
            return why
    return None


__all__ = ["C_KEYWORDS", "C_LIBRARY", "reserved_reason"]
