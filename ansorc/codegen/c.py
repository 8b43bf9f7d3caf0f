"""C renderer: PrimFunc -> C99 text with OpenMP loops and `restrict` pointers.

ISA differences live in data tables (this file's type/function maps; vector intrinsics in simd.py), not in
branches. Integer // and % are floor semantics; they compile to plain C `/` and `%` when the numerator is
provably non-negative, otherwise to small inline helpers.
"""
from __future__ import annotations

import math

from ..ir.expr import Binary, Call, Cast, Compare, Const, Expr, Logic, Read, Select, Var
from ..ir.simplify import bound, simplify
from ..ir.stmt import Allocate, Buffer, For, IfThenElse, PrimFunc, Seq, Stmt, Store
from .source import ArgSpec, Source

C_TYPE = {"float32": "float", "float64": "double", "int32": "int32_t", "int64": "int64_t", "bool": "uint8_t"}
# math function per dtype; "{0}" is the first argument
C_MATH = {
    "float32": {"exp": "expf({0})", "log": "logf({0})", "sqrt": "sqrtf({0})", "tanh": "tanhf({0})",
                "sigmoid": "(1.0f / (1.0f + expf(-({0}))))", "abs": "fabsf({0})", "pow": "powf({0}, {1})",
                "floor": "floorf({0})", "ceil": "ceilf({0})"},
    "float64": {"exp": "exp({0})", "log": "log({0})", "sqrt": "sqrt({0})", "tanh": "tanh({0})",
                "sigmoid": "(1.0 / (1.0 + exp(-({0}))))", "abs": "fabs({0})", "pow": "pow({0}, {1})",
                "floor": "floor({0})", "ceil": "ceil({0})"},
    "int32": {"abs": "abs({0})"}, "int64": {"abs": "llabs({0})"},
}
ITEMSIZE = {"float32": 4, "float64": 8, "int32": 4, "int64": 8, "bool": 1}
MINMAX = {"float32": "f32", "float64": "f64", "int32": "i32", "int64": "i64", "bool": "i32"}
STACK_LIMIT_BYTES = 256 * 1024  # local buffers above this go to the heap (OpenMP worker stacks are small)

PRELUDE = """#if !defined(_POSIX_C_SOURCE) || _POSIX_C_SOURCE < 200112L
#undef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200112L
#endif
#include <stdint.h>
#include <stdlib.h>
#include <math.h>
#ifndef ANSORC_PRELUDE
#define ANSORC_PRELUDE
static inline int32_t ansorc_floordiv_i32(int32_t a, int32_t b) { int32_t q = a / b; return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q; }
static inline int32_t ansorc_floormod_i32(int32_t a, int32_t b) { int32_t r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }
static inline int64_t ansorc_floordiv_i64(int64_t a, int64_t b) { int64_t q = a / b; return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q; }
static inline int64_t ansorc_floormod_i64(int64_t a, int64_t b) { int64_t r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }
static inline float ansorc_max_f32(float a, float b) { return a > b ? a : b; }
static inline float ansorc_min_f32(float a, float b) { return a < b ? a : b; }
static inline double ansorc_max_f64(double a, double b) { return a > b ? a : b; }
static inline double ansorc_min_f64(double a, double b) { return a < b ? a : b; }
static inline int32_t ansorc_max_i32(int32_t a, int32_t b) { return a > b ? a : b; }
static inline int32_t ansorc_min_i32(int32_t a, int32_t b) { return a < b ? a : b; }
static inline int64_t ansorc_max_i64(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t ansorc_min_i64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline void* ansorc_alloc(size_t bytes) { void* p = NULL; return posix_memalign(&p, 64, bytes ? bytes : 64) == 0 ? p : NULL; }
#endif
"""


def _float_literal(v: float, dtype: str) -> str:
    if math.isinf(v):
        return "INFINITY" if v > 0 else "(-INFINITY)"
    if math.isnan(v):
        return "NAN"
    s = repr(float(v))
    if "e" not in s and "." not in s:
        s += ".0"
    return s + ("f" if dtype == "float32" else "")


class CRenderer:
    def __init__(self, func: PrimFunc):
        self.func = func
        self.buffers: dict[str, Buffer] = {b.name: b for b in func.args}
        self.bounds: dict = {}
        self.lines: list[str] = []

    # ------------------------------------------------------------------ expressions
    def expr(self, e: Expr) -> str:
        if isinstance(e, Var):
            return e.name
        if isinstance(e, Const):
            if e.dtype in ("float32", "float64"):
                return _float_literal(e.value, e.dtype)
            return str(int(e.value))
        if isinstance(e, Binary):
            return self.binary(e)
        if isinstance(e, Compare):
            return f"({self.expr(e.a)} {e.op} {self.expr(e.b)})"
        if isinstance(e, Logic):
            return f"(!{self.expr(e.a)})" if e.op == "!" else f"({self.expr(e.a)} {e.op} {self.expr(e.b)})"
        if isinstance(e, Select):
            return f"({self.expr(e.cond)} ? {self.expr(e.t)} : {self.expr(e.f)})"
        if isinstance(e, Cast):
            return f"(({C_TYPE[e.dtype]})({self.expr(e.value)}))"
        if isinstance(e, Call):
            table = C_MATH.get(e.dtype, {})
            if e.name not in table:
                raise NotImplementedError(f"no C for {e.name} on {e.dtype}")
            return table[e.name].format(*[self.expr(a) for a in e.args])
        if isinstance(e, Read):
            return f"{e.name}[{self.flat_index(e.name, e.indices)}]"
        raise NotImplementedError(f"cannot render {type(e).__name__}")

    def binary(self, e: Binary) -> str:
        a, b = self.expr(e.a), self.expr(e.b)
        if e.op in ("min", "max"):
            return f"ansorc_{e.op}_{MINMAX[e.dtype]}({a}, {b})"
        if e.op in ("//", "%"):
            ba, bb = bound(e.a, self.bounds), bound(e.b, self.bounds)
            if ba is not None and ba[0] >= 0 and bb is not None and bb[0] > 0:
                return f"({a} {'/' if e.op == '//' else '%'} {b})"
            fn = "floordiv" if e.op == "//" else "floormod"
            return f"ansorc_{fn}_{'i64' if e.dtype == 'int64' else 'i32'}({a}, {b})"
        return f"({a} {e.op} {b})"

    def flat_index(self, name: str, indices: tuple) -> str:
        shape = self.buffers[name].shape
        flat, stride = None, 1
        for idx, n in zip(reversed(indices), reversed(shape)):
            term = idx if stride == 1 else Binary("*", idx, Const(stride, "int32"), "int32")
            flat = term if flat is None else Binary("+", term, flat, "int32")
            stride *= n
        if flat is None:
            return "0"
        return self.expr(simplify(flat, self.bounds))

    # ------------------------------------------------------------------ statements
    def emit(self, line: str, indent: int):
        self.lines.append("  " * indent + line)

    def stmt(self, s: Stmt, ind: int):
        if isinstance(s, Seq):
            for c in s.stmts:
                self.stmt(c, ind)
        elif isinstance(s, For):
            if s.kind == "parallel":
                self.emit("#pragma omp parallel for schedule(static)", ind)
            elif s.kind == "vectorize":
                self.emit("#pragma omp simd", ind)
            elif s.kind == "unroll":
                self.emit(f"#pragma GCC unroll {min(s.extent, 256)}", ind)
            self.emit(f"for (int32_t {s.var} = 0; {s.var} < {s.extent}; ++{s.var}) {{", ind)
            self.bounds[s.var] = (0, s.extent - 1)
            self.stmt(s.body, ind + 1)
            del self.bounds[s.var]
            self.emit("}", ind)
        elif isinstance(s, Store):
            self.emit(f"{s.buffer}[{self.flat_index(s.buffer, s.indices)}] = {self.expr(s.value)};", ind)
        elif isinstance(s, IfThenElse):
            self.emit(f"if ({self.expr(s.cond)}) {{", ind)
            self.stmt(s.then, ind + 1)
            self.emit("}", ind)
        elif isinstance(s, Allocate):
            self.allocate(s, ind)
        else:
            raise NotImplementedError(type(s).__name__)

    def allocate(self, s: Allocate, ind: int):
        b = s.buffer
        self.buffers[b.name] = b
        ctype = C_TYPE[b.dtype]
        nbytes = b.size * ITEMSIZE[b.dtype]
        if b.scope == "local" and nbytes <= STACK_LIMIT_BYTES:
            self.emit(f"{ctype} {b.name}[{b.size}] __attribute__((aligned(64)));", ind)
            self.stmt(s.body, ind)
            return
        self.emit(f"{ctype}* restrict {b.name} = ({ctype}*)ansorc_alloc({nbytes}u);", ind)
        self.emit(f"if ({b.name} == NULL) {{ ansorc_status = 1; }} else {{", ind)
        self.stmt(s.body, ind + 1)
        self.emit(f"free({b.name});", ind + 1)
        self.emit("}", ind)

    # ------------------------------------------------------------------ function
    def signature(self) -> str:
        params = []
        for k, b in enumerate(self.func.args):
            const = "const " if k < self.func.n_inputs else ""
            params.append(f"{const}{C_TYPE[b.dtype]}* restrict {b.name}")
        return f"int {self.func.name}({', '.join(params)})"

    def render(self) -> str:
        self.lines = [PRELUDE, self.signature() + " {", "  volatile int ansorc_status = 0;"]
        self.stmt(self.func.body, 1)
        self.lines += ["  return ansorc_status;", "}", ""]
        casts = ", ".join(f"({'const ' if k < self.func.n_inputs else ''}{C_TYPE[b.dtype]}*)args[{k}]"
                          for k, b in enumerate(self.func.args))
        self.lines += [f"int {self.func.name}_packed(void** args) {{", f"  return {self.func.name}({casts});", "}",
                       ""]
        return "\n".join(self.lines)


def codegen_c(func: PrimFunc) -> Source:
    code = CRenderer(func).render()
    args = tuple(ArgSpec(b.name, tuple(b.shape), b.dtype, k >= func.n_inputs) for k, b in enumerate(func.args))
    return Source(code, func.name, args, "c")


def prototype(func_or_source) -> str:
    """The C prototype line (for cffi and headers)."""
    src = func_or_source
    params = ", ".join(f"{'' if a.is_output else 'const '}{C_TYPE[a.dtype]}* {a.name}" for a in src.args)
    return f"int {src.entry}({params});"
