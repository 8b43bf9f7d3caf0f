"""The workspace pool of emitted C: heap buffers of a kernel (a padded input, a blocked copy of the weights,
intermediates too large for the stack) kept between calls instead of allocated, page-faulted and freed on every
call, as TVM plans a graph's workspaces once.

A library (one kernel, or a network's many) holds POOL_SLOTS buffers. A call takes the smallest free one that
fits, else grows an empty or the smallest free one (freeing what it held), and gives it back at the end of the
buffer's scope; when every slot is taken (concurrent calls, deep nesting), the buffer is plain heap memory as
before. Buffers from 2 MiB are 2 MiB aligned and advised to transparent huge pages (C3D 14x14x256's 12 MB of
padded input and blocked weights gained a little; docs/perf-notes.md). A lock (an atomic flag; a waiting thread
yields its core) guards the slots, so calls from several threads are safe; the slots are freed when the library
unloads (dlclose, exit)."""
from __future__ import annotations

POOL_SLOTS = 8
TAKE = "ansorc_workspace_take"
GIVE = "ansorc_workspace_give"

POOL_PRELUDE = f"""#ifndef ANSORC_POOL
#define ANSORC_POOL
#include <sched.h>
#define ANSORC_POOL_SLOTS {POOL_SLOTS}
#define ANSORC_HUGE_BYTES ((size_t)2 << 20)
typedef struct {{ void* p; size_t n; int busy; }} ansorc_slot;
static ansorc_slot ansorc_pool[ANSORC_POOL_SLOTS];
static int ansorc_pool_lock;
#ifdef __linux__
int madvise(void* addr, size_t length, int advice);
#endif
static void* ansorc_fresh(size_t bytes) {{
  void* p = NULL;
  size_t align = bytes >= ANSORC_HUGE_BYTES ? ANSORC_HUGE_BYTES : 64;
  if (posix_memalign(&p, align, bytes ? bytes : 64) != 0) return NULL;
#ifdef __linux__
  if (align == ANSORC_HUGE_BYTES) madvise(p, bytes, 14); /* MADV_HUGEPAGE, best effort */
#endif
  return p;
}}
static void ansorc_pool_enter(void) {{
  while (__atomic_exchange_n(&ansorc_pool_lock, 1, __ATOMIC_ACQUIRE)) sched_yield();
}}
static void ansorc_pool_leave(void) {{ __atomic_store_n(&ansorc_pool_lock, 0, __ATOMIC_RELEASE); }}
static void* {TAKE}(size_t bytes) {{
  ansorc_slot* fit = NULL; ansorc_slot* spare = NULL;
  ansorc_pool_enter();
  for (int i = 0; i < ANSORC_POOL_SLOTS; ++i) {{
    ansorc_slot* s = &ansorc_pool[i];
    if (s->busy) continue;
    if (s->n >= bytes && (!fit || s->n < fit->n)) fit = s;
    if (!spare || s->n < spare->n) spare = s;
  }}
  if (!fit && spare) {{
    free(spare->p);
    spare->p = ansorc_fresh(bytes);
    spare->n = spare->p ? bytes : 0;
    fit = spare->p ? spare : NULL;
  }}
  if (fit) fit->busy = 1;
  ansorc_pool_leave();
  return fit ? fit->p : (spare ? NULL : ansorc_fresh(bytes));
}}
static void {GIVE}(void* p) {{
  ansorc_pool_enter();
  for (int i = 0; i < ANSORC_POOL_SLOTS; ++i) {{
    if (ansorc_pool[i].busy && ansorc_pool[i].p == p) {{ ansorc_pool[i].busy = 0; ansorc_pool_leave(); return; }}
  }}
  ansorc_pool_leave();
  free(p);
}}
#ifdef __GNUC__
__attribute__((destructor)) static void ansorc_pool_release(void) {{
  for (int i = 0; i < ANSORC_POOL_SLOTS; ++i) {{
    free(ansorc_pool[i].p); ansorc_pool[i].p = NULL; ansorc_pool[i].n = 0;
  }}
}}
#endif
#endif
"""
