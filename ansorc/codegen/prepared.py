"""C for prepared stages (ir/lowering/prepared.py): buffers computed from constant inputs, kept between calls.

Each prepared buffer of a kernel is a static slot. A call takes the slot with the keys of the kernel's constant
inputs (each one's address and a hash of 32 words sampled across it, so that other weights allocated where freed
ones were are seen too): when the slot holds a copy made under those keys the call reads it (as one of any number
of readers); otherwise, once no call is reading it, the call has the slot to itself, computes the copy (the
`if (<buffer>_stale)` branch) and publishes it with those keys on giving the slot back. A call with other
weights waits for the readers of the old copy, so concurrent calls are safe. The copy is not published when the
call failed (a non-zero status), and `ENTRY_constants_changed()` marks every copy stale for callers that change
a constant input's values in place (the samples need not see that). The copies are freed when the library
unloads. `ENTRY_prepared_spans()` tells where the copies are, so that a measurement of a program as a whole model
runs it (weights read from memory, not warm: measure/worker.py) evicts them as it evicts the weights."""
from __future__ import annotations

from ..ir.program.dtypes import ITEMSIZE
from ..ir.lowering.prepared import MAX_CONSTANTS
from ..ir.lowering.stmt import Allocate, PrimFunc

TAKE = "ansorc_prepared_take"
GIVE = "ansorc_prepared_give"

PRELUDE = f"""#ifndef ANSORC_PREPARED
#define ANSORC_PREPARED
#include <sched.h>
#include <stdint.h>
#include <string.h>
typedef struct {{ const void* at; uint64_t sampled; }} ansorc_constant_key;
typedef struct {{
  void* p; size_t bytes; ansorc_constant_key keys[{MAX_CONSTANTS}]; int valid, readers, writing, lock;
}} ansorc_prepared;
/* an input's key: its address and an FNV-1a hash of 32 words spread over its bytes */
static ansorc_constant_key ansorc_constant(const void* at, size_t bytes) {{
  const unsigned char* b = (const unsigned char*)at;
  uint64_t h = 1469598103934665603ull;
  size_t words = bytes / 4;
  for (size_t i = 0; i < (words ? 32 : bytes); ++i) {{
    uint32_t w = 0;
    if (words) memcpy(&w, b + 4 * (i * (words - 1) / 31), 4); else w = b[i];
    h = (h ^ w) * 1099511628211ull;
  }}
  ansorc_constant_key k = {{at, h}};
  return k;
}}
static void ansorc_prepared_enter(ansorc_prepared* s) {{
  while (__atomic_exchange_n(&s->lock, 1, __ATOMIC_ACQUIRE)) sched_yield();
}}
static void ansorc_prepared_leave(ansorc_prepared* s) {{ __atomic_store_n(&s->lock, 0, __ATOMIC_RELEASE); }}
/* the slot's copy; *stale = 1: the caller computes it (and has the slot alone), 0: reads it; NULL: no memory */
static void* {TAKE}(ansorc_prepared* s, size_t bytes, const ansorc_constant_key* keys, int n, int* stale) {{
  for (;;) {{
    ansorc_prepared_enter(s);
    int same = s->valid;
    for (int i = 0; same && i < n; ++i) same = s->keys[i].at == keys[i].at && s->keys[i].sampled == keys[i].sampled;
    if (same) {{
      s->readers++; ansorc_prepared_leave(s); *stale = 0; return s->p;
    }}
    if (!s->readers && !s->writing) {{
      if (!s->p) {{ s->p = ansorc_fresh(bytes); s->bytes = s->p ? bytes : 0; }}
      void* p = s->p;
      if (p) {{ s->valid = 0; s->writing = 1; }}
      ansorc_prepared_leave(s); *stale = 1; return p;
    }}
    ansorc_prepared_leave(s);
    sched_yield();
  }}
}}
static void {GIVE}(ansorc_prepared* s, const ansorc_constant_key* keys, int n, int stale, int ok) {{
  ansorc_prepared_enter(s);
  if (stale) {{
    s->writing = 0; s->valid = ok;
    if (ok) memcpy(s->keys, keys, (size_t)n * sizeof(*keys));
  }} else {{
    s->readers--;
  }}
  ansorc_prepared_leave(s);
}}
static void ansorc_prepared_forget(ansorc_prepared* s) {{
  for (;;) {{
    ansorc_prepared_enter(s);
    if (!s->readers && !s->writing) {{ s->valid = 0; ansorc_prepared_leave(s); return; }}
    ansorc_prepared_leave(s);
    sched_yield();
  }}
}}
#endif
"""

def slot(func: PrimFunc, k: int) -> str:
    return f"{func.name}_prepared_{k}"


def statics(func: PrimFunc) -> list:
    """(kind, text) parts at file scope before the function (codegen.c's render_parts): "state" (the slots and
    their release at unload), "constants_changed" (ENTRY_constants_changed) and "prepared_spans"
    (ENTRY_prepared_spans: the copies' addresses and sizes, up to n of them; returns how many there are)."""
    if not func.prepared:
        return []
    slots = [slot(func, k) for k in range(len(func.prepared))]
    state = [f"static ansorc_prepared {s};" for s in slots]
    state += ["#ifdef __GNUC__", f"__attribute__((destructor)) static void {func.name}_prepared_release(void) {{",
              *[f"  free({s}.p); {s}.p = NULL; {s}.valid = 0;" for s in slots], "}", "#endif"]
    changed = [f"void {func.name}_constants_changed(void) {{", *[f"  ansorc_prepared_forget(&{s});" for s in slots],
               "}"]
    spans = [f"int {func.name}_prepared_spans(void** at, size_t* bytes, int n) {{",
             f"  ansorc_prepared* s[] = {{{', '.join('&' + s for s in slots)}}};",
             f"  for (int k = 0; k < n && k < {len(slots)}; ++k) {{ at[k] = s[k]->p; bytes[k] = s[k]->bytes; }}",
             f"  return {len(slots)};", "}", ""]
    return [("state", "\n".join(state)), ("constants_changed", "\n".join(changed)),
            ("prepared_spans", "\n".join(spans))]


def open_buffer(func: PrimFunc, s: Allocate, ctype: str, nbytes: int) -> tuple:
    """(lines that take the buffer's slot, the line that gives it back) around the Allocate's body."""
    names = [b for b, _ in func.prepared]
    k = names.index(s.buffer.name)
    b, stale = func.prepared[k]
    args = {a.name: a for a in func.args}
    keys = ", ".join(f"ansorc_constant({c}, {args[c].size * ITEMSIZE[args[c].dtype]}u)" for c in func.constants)
    n = len(func.constants)
    take = [f"int {stale} = 0;", f"ansorc_constant_key {b}_keys[] = {{{keys}}};",
            f"{ctype}* restrict {b} = ({ctype}*){TAKE}(&{slot(func, k)}, {nbytes}u, {b}_keys, {n}, &{stale});"]
    give = f"{GIVE}(&{slot(func, k)}, {b}_keys, {n}, {stale}, ansorc_status == 0);"
    return take, give
