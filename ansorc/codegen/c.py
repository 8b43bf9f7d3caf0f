"""C renderer: PrimFunc -> C99 text with OpenMP loops, `restrict` pointers and SIMD intrinsics.

`codegen_c(func, target)` first runs the target-dependent passes (CODEGEN_PASSES: vectorize_loops,
promote_registers, pin_operands, transpose_copies, prefetch_loads), then renders. ISA differences live in data
tables (this file's type/function maps; vector intrinsics in simd.py), not in branches. Integer // and % are floor
semantics; they compile to plain C `/` and `%` when the numerator is provably non-negative and the divisor
positive, otherwise to small inline helpers that follow numpy where C traps: x // 0 == x % 0 == 0, and INT_MIN // -1
wraps to INT_MIN.

A checked index (an index read from data, ir/expr.CheckedIndex) renders as `ansorc_checked_index`: out of
range, it stores the status of the tensor it indexes (race-free: an atomic store, as OpenMP threads may report at
once) and returns the clamped index, so the read stays inside its buffer. STATUS_* are the return codes;
`status_message` turns one back into words from Source.statuses (the comments in the C say the same, for readers).
"""
from __future__ import annotations

import math

from ..ir.program.expr import Binary, Call, Cast, CheckedIndex, Compare, Const, Expr, Logic, Read, Select, Var
from ..ir.passes.basic import run_passes
from ..ir.passes.dot import dot_products
from ..ir.passes.pin import pin_operands
from ..ir.passes.prefetch import prefetch_loads
from ..ir.passes.regblock import promote_registers
from ..ir.program.simplify import bound, simplify
from ..ir.passes.skip import skips_along, skips_unevenly
from ..ir.passes.transpose import transpose_copies
from ..ir.program.dtypes import C_TYPE, ITEMSIZE, NARROW_INTS, STORAGE_FLOATS
from ..ir.lowering.stmt import Allocate, Buffer, For, IfThenElse, PrimFunc, Seq, Stmt, Store
from ..ir.passes.masks import zero_fill
from ..ir.passes.vector import (Broadcast, VAssign, VBinary, VBlend, VCall, VCast, VCompare, VDecl, VDot, VFma, VLanes, VLoad,
                                VMaskLoad, VPrefetch, VReduce, VScatter, VSelect, VStore, VTranspose, VVar, lanes_of,
                                stmt_kids)
from ..ir.passes.vectorize import CMP_NAMES, flat_index, vectorize_loops
from . import dot, lowp, parallel, pool, prepared, simd
from .source import ArgSpec, Source, join_parts
from .target import Target

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
MINMAX = {"float32": "f32", "float64": "f64", "int32": "i32", "int64": "i64", "bool": "i32",
          **{d: "i32" for d in NARROW_INTS}}
MAX_INDENT = 40
STACK_LIMIT_BYTES = 256 * 1024  # local buffers above this go to the heap (OpenMP worker stacks are small)
STATUS_ALLOC = 1        # a workspace allocation failed
STATUS_INDEX = 2        # the first "index out of range" code; each indexed tensor of a function gets its own

PRELUDE = """#if !defined(_POSIX_C_SOURCE) || _POSIX_C_SOURCE < 200112L
#undef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200112L
#endif
#include <stdint.h>
#include <stdlib.h>
#include <math.h>
#ifndef ANSORC_PRELUDE
#define ANSORC_PRELUDE
static inline int32_t ansorc_floordiv_i32(int32_t a, int32_t b) { if (b == 0) return 0; if (b == -1) return (int32_t)(0u - (uint32_t)a); int32_t q = a / b; return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q; }
static inline int32_t ansorc_floormod_i32(int32_t a, int32_t b) { if (b == 0 || b == -1) return 0; int32_t r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }
static inline int64_t ansorc_floordiv_i64(int64_t a, int64_t b) { if (b == 0) return 0; if (b == -1) return (int64_t)(0ull - (uint64_t)a); int64_t q = a / b; return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q; }
static inline int64_t ansorc_floormod_i64(int64_t a, int64_t b) { if (b == 0 || b == -1) return 0; int64_t r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }
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
# only in programs that use it (the C of every other program stays as it was); its own guard, as a library
# file holds many kernels after one PRELUDE
CHECKED_PRELUDE = """#ifndef ANSORC_CHECKED_INDEX
#define ANSORC_CHECKED_INDEX
static inline int32_t ansorc_checked_index(int64_t v, int32_t n, volatile int* status, int code) { if (v >= 0 && v < n) return (int32_t)v; __atomic_store_n(status, code, __ATOMIC_RELAXED); return v < 0 ? 0 : n - 1; }
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
    def __init__(self, func: PrimFunc, isa: str = "generic"):
        self.func = func
        self.isa = isa
        self.buffers: dict[str, Buffer] = {b.name: b for b in func.args}
        self.bounds: dict = {}
        self.lines: list[str] = []
        self.tmp = 0   # counter for scatter temporaries
        self.indexing: list = []       # the buffers whose subscripts are being rendered (innermost last)
        self.check_codes: dict = {}    # indexed buffer (None: not a subscript) -> its out-of-range status
        self.parallel_depth = 0        # parallel loops around the statement being rendered
        self.scope: list = []          # (C type, name, is a pointer) declared around it: a parallel loop captures them
        self.outlined: list = []       # the C of parallel loop bodies (codegen/parallel.py), in order

    # ------------------------------------------------------------------ expressions
    def expr(self, e: Expr) -> str:
        vec = _VEXPR.get(type(e))
        if vec is not None:
            return vec(self, e)
        if isinstance(e, Var):
            return e.name
        if isinstance(e, Const):
            if e.dtype in ("float32", "float64"):
                return _float_literal(e.value, e.dtype)
            return lowp.constant(e.value, e.dtype) if e.dtype in STORAGE_FLOATS else str(int(e.value))
        if isinstance(e, Binary):
            return self.binary(e)
        if isinstance(e, Compare):
            return f"({self.expr(e.a)} {e.op} {self.expr(e.b)})"
        if isinstance(e, Logic):
            return f"(!{self.expr(e.a)})" if e.op == "!" else f"({self.expr(e.a)} {e.op} {self.expr(e.b)})"
        if isinstance(e, Select):
            return f"({self.expr(e.cond)} ? {self.expr(e.t)} : {self.expr(e.f)})"
        if isinstance(e, Cast):
            text = self.expr(e.value)
            return lowp.cast(e.value.dtype, e.dtype, text) or f"(({C_TYPE[e.dtype]})({text}))"
        if isinstance(e, Call) and e.name == "saturate":
            return lowp.saturate(e.args[0].dtype, e.dtype, self.expr(e.args[0]))
        if isinstance(e, Call):
            table = C_MATH.get(e.dtype, {})
            if e.name not in table:
                raise NotImplementedError(f"no C for {e.name} on {e.dtype}")
            return table[e.name].format(*[self.expr(a) for a in e.args])
        if isinstance(e, Read):
            return f"{e.name}[{self.flat_index(e.name, e.indices)}]"
        if isinstance(e, CheckedIndex):
            return self.checked_index(e)
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

    def checked_index(self, e: CheckedIndex) -> str:
        name = self.indexing[-1] if self.indexing else None
        code = self.check_codes.setdefault(name, STATUS_INDEX + len(self.check_codes))
        return f"ansorc_checked_index({self.expr(e.value)}, {e.extent}, &ansorc_status, {code})"

    def subscript(self, name: str, e: Expr) -> str:
        """Render e as a subscript of buffer `name` (a checked index in it reports `name`)."""
        self.indexing.append(name)
        try:
            return self.expr(e)
        finally:
            self.indexing.pop()

    def flat_index(self, name: str, indices: tuple) -> str:
        if not indices:
            return "0"
        return self.subscript(name, simplify(flat_index(indices, self.buffers[name].storage), self.bounds))

    # ------------------------------------------------------------------ vector expressions (simd.py tables)
    def intr(self, op: str, like, **kw) -> str:   # like: anything with a dtype and lanes (an Expr, a VTranspose)
        return simd.intrinsic(self.isa, op, like.dtype, lanes_of(like)).format(**kw)

    def broadcast(self, e: Broadcast) -> str:
        return self.intr("set1", e, a=self.expr(e.value))

    def vload(self, e: VLoad) -> str:
        return self.intr("load", e, p=f"({e.buffer} + {self.subscript(e.buffer, e.index)})")

    def vmaskload(self, e: VMaskLoad) -> str:
        return self.intr("maskload" if zero_fill(e.fill) else "maskload_fill", e, a=self.expr(e.lo),
                         b=self.expr(e.hi), c=self.expr(e.fill), p=f"({e.buffer} + {self.subscript(e.buffer, e.index)})")

    def vlanes(self, e: VLanes) -> str:
        # a compound literal keeps this an expression: the arms of a select stay lazy
        elems = ", ".join(self.expr(x) for x in e.elems)
        return self.intr("load", e, p=f"(const {C_TYPE[e.dtype]}[{e.lanes}]){{{elems}}}")

    def vbinary(self, e: VBinary) -> str:
        return self.intr(e.op, e, a=self.expr(e.a), b=self.expr(e.b))

    def vfma(self, e: VFma) -> str:
        return self.intr("fma", e, a=self.expr(e.a), b=self.expr(e.b), c=self.expr(e.c))

    def vcall(self, e: VCall) -> str:
        return self.intr(e.name, e, **dict(zip("abc", (self.expr(a) for a in e.args))))

    def vcast(self, e: VCast) -> str:
        return self.intr(f"cvt_from_{e.value.dtype}", e, a=self.expr(e.value))

    def vselect(self, e: VSelect) -> str:
        return f"({self.expr(e.cond)} ? {self.expr(e.t)} : {self.expr(e.f)})"

    def vcompare(self, e: VCompare) -> str:
        return self.intr(f"cmp_{CMP_NAMES[e.op]}", e, a=self.expr(e.a), b=self.expr(e.b))

    def vblend(self, e: VBlend) -> str:
        return self.intr("blend", e, m=self.expr(e.mask), a=self.expr(e.t), b=self.expr(e.f))

    def vreduce(self, e: VReduce) -> str:
        return self.intr(f"reduce_{e.op}", e.value, a=self.expr(e.value))

    def vtype(self, v: Expr) -> str:
        return simd.vector_type(self.isa, v.dtype, v.lanes) if lanes_of(v) > 1 else C_TYPE[v.dtype]

    # ------------------------------------------------------------------ statements
    def emit(self, line: str, indent: int):
        # capped: a chain of n tensors nests n buffer scopes, and full indentation would make the file O(n^2)
        self.lines.append("  " * min(indent, MAX_INDENT) + line)

    def vstmt(self, s: Stmt, ind: int):
        if isinstance(s, VStore):
            op = "store_stream" if self.streams(s) else "store"
            self.emit(self.intr(op, s.value, p=f"({s.buffer} + {self.expr(s.index)})", v=self.expr(s.value)) + ";",
                      ind)
        elif isinstance(s, VScatter):
            t, n = f"ansorc_t{self.tmp}", lanes_of(s.value)
            self.tmp += 1
            stores = " ".join(f"{s.buffer}[{self.expr(i)}] = {t}[{k}];" for k, i in enumerate(s.indices))
            store = self.intr("store", s.value, p=t, v=self.expr(s.value))
            self.emit(f"{{ {C_TYPE[s.value.dtype]} {t}[{n}]; {store}; {stores} }}", ind)
        elif isinstance(s, VTranspose):
            self.emit(self.intr("transpose", s, p=f"({s.src} + {self.expr(s.src_index)})", a=s.src_stride,
                                q=f"({s.buffer} + {self.expr(s.index)})", b=s.stride) + ";", ind)
        elif isinstance(s, VPrefetch):   # read, keep in all cache levels (gcc and clang, every ISA)
            self.emit(f"__builtin_prefetch({s.buffer} + {self.subscript(s.buffer, s.index)}, 0, 3);", ind)
        elif isinstance(s, VAssign):
            self.emit(f"{s.var.name} = {self.expr(s.value)};", ind)
        elif isinstance(s, VDecl):
            self.emit("{", ind)
            for v, init in s.decls:
                self.emit(f"{self.vtype(v)} {v.name}" + ("" if init is None else f" = {self.expr(init)}") + ";",
                          ind + 1)
                if s.pin:
                    self.emit(self.intr("pin", v, a=v.name) + ";", ind + 1)
            self.scoped([(self.vtype(v), v.name, False) for v, _ in s.decls], lambda: self.stmt(s.body, ind + 1))
            self.emit("}", ind)
        else:
            raise NotImplementedError(type(s).__name__)

    def streams(self, s: VStore) -> bool:
        return s.buffer in self.func.stream and self.isa in simd.STORE_FENCE and \
            ("store_stream", s.value.dtype, lanes_of(s.value)) in simd.table(self.isa)

    def fence_after(self, s: Stmt) -> bool:
        """Whether s makes streaming stores: each thread fences them before the parallel region's barrier."""
        if not self.func.stream:
            return False
        stack = [s]
        while stack:
            x = stack.pop()
            if isinstance(x, VStore) and self.streams(x):
                return True
            stack.extend(stmt_kids(x))
        return False

    def stmt(self, s: Stmt, ind: int):
        if isinstance(s, Seq):
            for c in s.stmts:
                self.stmt(c, ind)
        elif isinstance(s, For):
            if s.kind == "parallel" and not self.parallel_depth:
                # iterations that skip unevenly go one by one (a causal matmul's row blocks; docs/perf-notes.md)
                uneven = skips_unevenly(s) if s.var in self.func.ranges else skips_along(s)
                chunk = parallel.CHUNK_ONE if uneven else parallel.CHUNK_RANGES
                return parallel.outline(self, s, ind, chunk, self.fence_after(s) and simd.STORE_FENCE[self.isa])
            if s.kind == "vectorize":
                self.emit("#pragma omp simd", ind)
            elif s.kind == "unroll":
                self.emit(f"#pragma GCC unroll {min(s.extent, 256)}", ind)
            self.emit(f"for (int32_t {s.var} = 0; {s.var} < {s.extent}; ++{s.var}) {{", ind)
            self.bounds[s.var] = (0, s.extent - 1)
            self.scoped(("int32_t", s.var, False), lambda: self.stmt(s.body, ind + 1))
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
            self.vstmt(s, ind)

    def scoped(self, entries, render):
        """render() with entries ((C type, name, is a pointer), or a list) in scope, for parallel loops to capture."""
        depth = len(self.scope)
        self.scope += [] if self.parallel_depth else [entries] if isinstance(entries, tuple) else entries
        render()
        del self.scope[depth:]

    def allocate(self, s: Allocate, ind: int):
        b = s.buffer
        self.buffers[b.name] = b
        ctype = C_TYPE[b.dtype]
        nbytes = b.size * ITEMSIZE[b.dtype]
        if b.scope == "local" and nbytes <= STACK_LIMIT_BYTES:
            self.emit(f"{ctype} {b.name}[{b.size}] __attribute__((aligned(64)));", ind)
            self.scoped((ctype, b.name, True), lambda: self.stmt(s.body, ind))
            return
        if b.scope == "prepared":
            take, give = prepared.open_buffer(self.func, s, ctype, nbytes)
            for line in take:
                self.emit(line, ind)
            self.emit(f"if ({b.name} == NULL) {{ ansorc_status = 1; }} else {{", ind)
            self.scoped([(ctype, b.name, True), ("int", dict(self.func.prepared)[b.name], False)],
                        lambda: self.stmt(s.body, ind + 1))
            self.emit(give, ind + 1)
            self.emit("}", ind)
            return
        # kept between calls (codegen/pool.py), except per-iteration buffers of a parallel loop: malloc's thread
        # caches serve those without the pool's one lock
        take, give = (pool.TAKE, pool.GIVE) if not self.parallel_depth else ("ansorc_alloc", "free")
        self.emit(f"{ctype}* restrict {b.name} = ({ctype}*){take}({nbytes}u);", ind)
        self.emit(f"if ({b.name} == NULL) {{ ansorc_status = 1; }} else {{", ind)
        self.scoped((ctype, b.name, True), lambda: self.stmt(s.body, ind + 1))
        self.emit(f"{give}({b.name});", ind + 1)
        self.emit("}", ind)

    # ------------------------------------------------------------------ function
    def signature(self) -> str:
        params = []
        for k, b in enumerate(self.func.args):
            const = "const " if k < self.func.n_inputs else ""
            params.append(f"{const}{C_TYPE[b.dtype]}* restrict {b.name}")
        return f"int {self.func.name}({', '.join(params)})"

    def render(self) -> str:
        return join_parts(self.render_parts())

    def render_parts(self) -> list:
        """The translation unit as (kind, text) parts in order; joined by newlines they are the C. Kinds: "prelude"
        (the same in every kernel), "helper" (a definition that kernels sharing one file keep once; may be empty),
        "state" (this kernel's file-scope slots), "constants_changed" and "prepared_spans" (codegen/prepared.py),
        "kernel", "wrapper" (ENTRY_packed)."""
        self.lines = [self.signature() + " {", "  volatile int ansorc_status = 0;"]
        self.stmt(self.func.body, 1)
        self.lines[1:1] = [f"  /* ansorc_status {self.func.name} {code}: {text} */" for code, text in self.statuses()]
        body = "\n".join([*self.outlined, *self.lines])
        keep = bool(self.func.prepared)
        helpers = [*([CHECKED_PRELUDE] if "ansorc_checked_index(" in body else []),
                   *([lowp.PRELUDE] if lowp.uses_prelude(body) else []),
                   *([pool.POOL_PRELUDE] if pool.TAKE in body or keep else []),
                   *([prepared.PRELUDE] if keep else []), *simd.prelude_parts(self.isa, body),
                   *dot.prelude_parts(body), *([parallel.THREADS_PRELUDE] if parallel.CALL + "(" in body else [])]
        if self.fence_after(self.func.body):   # stores made outside a parallel loop, by the calling thread
            self.lines.append(f"  {simd.STORE_FENCE[self.isa]};")
        self.lines += ["  return ansorc_status;", "}", ""]
        casts = ", ".join(f"({'const ' if k < self.func.n_inputs else ''}{C_TYPE[b.dtype]}*)args[{k}]"
                          for k, b in enumerate(self.func.args))
        wrapper = [f"int {self.func.name}_packed(void** args) {{", f"  return {self.func.name}({casts});", "}", ""]
        return [("prelude", PRELUDE), *(("helper", h) for h in helpers), *prepared.statics(self.func),
                *(("outlined", text) for text in self.outlined), ("kernel", "\n".join(self.lines)),
                ("wrapper", "\n".join(wrapper))]

    def statuses(self) -> tuple:
        """(code, meaning) of each status this kernel may return beyond STATUS_ALLOC, as data (Source.statuses)."""
        return tuple((code, f"index out of range in {name or 'an index'}") for name, code in self.check_codes.items())


_VEXPR = {Broadcast: CRenderer.broadcast, VLoad: CRenderer.vload, VLanes: CRenderer.vlanes, VMaskLoad: CRenderer.vmaskload,
          VBinary: CRenderer.vbinary, VFma: CRenderer.vfma, VCall: CRenderer.vcall, VCast: CRenderer.vcast,
          VSelect: CRenderer.vselect, VReduce: CRenderer.vreduce, VCompare: CRenderer.vcompare,
          VBlend: CRenderer.vblend, VVar: lambda self, e: e.name, VDot: dot.render}


def dots(func: PrimFunc, target: Target) -> PrimFunc:
    return dot_products(func, dot.offers(target))


def vectorize(func: PrimFunc, target: Target) -> PrimFunc:
    return vectorize_loops(func, simd.caps(target.isa))


def promote(func: PrimFunc, target: Target) -> PrimFunc:
    # leave a quarter of the registers for the operands streamed through the tile (loads, broadcasts)
    return promote_registers(func, budget=simd.caps(target.isa).registers * 3 // 4)


def pin(func: PrimFunc, target: Target) -> PrimFunc:
    return pin_operands(func, simd.caps(target.isa))


def transpose(func: PrimFunc, target: Target) -> PrimFunc:
    return transpose_copies(func, simd.caps(target.isa))


def prefetch(func: PrimFunc, target: Target) -> PrimFunc:
    return prefetch_loads(func)


CODEGEN_PASSES = (dots, vectorize, promote, pin, transpose, prefetch)


def lower_for_target(func: PrimFunc, target: "Target | str | None" = None) -> PrimFunc:
    """The lowered program with the target-dependent passes applied (vector IR, registers)."""
    return run_passes(func, CODEGEN_PASSES, Target.from_name(target or "native"))


def codegen_c(func: PrimFunc, target: "Target | str | None" = None) -> Source:
    """Render C for `target` (a Target, an ISA name, or None for this machine)."""
    target = Target.from_name(target or "native")
    return emit_c(lower_for_target(func, target), target)


def emit_c(func: PrimFunc, target: Target) -> Source:
    """The C translation unit of a program whose passes have all run (the CPU pipeline's last stage)."""
    renderer = CRenderer(func, target.isa)
    args = tuple(ArgSpec(b.name, tuple(b.shape), b.dtype, k >= func.n_inputs) for k, b in enumerate(func.args))
    return Source.from_parts(renderer.render_parts(), func.name, args, "c", prepared=bool(func.prepared),
                             statuses=renderer.statuses())


def status_message(code: int, statuses=()) -> str:
    """What a kernel's non-zero return code means; `statuses`: its (code, meaning) pairs (Source.statuses)."""
    if code == STATUS_ALLOC:
        return "workspace allocation failed"
    for c, what in statuses:
        if int(c) == code:
            return what
    return "index out of range" if code >= STATUS_INDEX else "unknown error"


def prototype(func_or_source) -> str:
    """The C prototype line (for cffi and headers)."""
    src = func_or_source
    params = ", ".join(f"{'' if a.is_output else 'const '}{C_TYPE[a.dtype]}* {a.name}" for a in src.args)
    return f"int {src.entry}({params});"
