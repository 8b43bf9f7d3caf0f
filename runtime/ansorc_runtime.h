/* ansorc runtime: shared by emitted kernels, the timing harness and embedding applications.
 * Plain C99 + POSIX. The timing functions live in timer.c; the allocation helpers are inline so that
 * emitted code can use them without linking anything. */
#ifndef ANSORC_RUNTIME_H
#define ANSORC_RUNTIME_H

#include <stddef.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every generated kernel has a packed wrapper of this type: args[i] points to argument i. */
typedef int (*ansorc_packed_fn)(void **args);

/* Aligned workspace allocation for emitted code: 64-byte aligned (a cache line, an AVX-512 vector). */
static inline void *ansorc_workspace_alloc(size_t bytes) {
  void *p = NULL;
  if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0) return NULL;
  return p;
}
static inline void ansorc_workspace_free(void *p) { free(p); }

/* Buffers for measurement inputs and outputs: each its own mapping with PROT_NONE guard pages around it.
 * Under 2 MiB: 64-byte aligned and ending where the trailing guard page starts (exactly, when the size is a
 * multiple of 64 bytes), so reading past the end faults; reads before the start fault only beyond the
 * slack of the first page. From 2 MiB: 2 MiB aligned, madvise(MADV_HUGEPAGE) so that transparent huge pages back
 * them from the first touch and timings do not drift as the OS collapses pages later; the trailing guard page
 * follows the last 4 KiB page. Release with ansorc_free only. */
void *ansorc_alloc(size_t bytes);
void ansorc_free(void *p);

/* Monotonic wall clock in seconds. */
double ansorc_now_seconds(void);

/* Writes a buffer of `bytes` (larger than the last-level cache) from every OpenMP thread, evicting the kernel's
 * data from all private and shared caches. The buffer is allocated on first use and kept. */
void ansorc_flush_cache(size_t bytes);

/* Evicts [p, p + bytes) from every cache level (clflush on x86, dc civac on AArch64; nothing elsewhere). */
void ansorc_evict(const void *p, size_t bytes);

typedef struct {
  int number;              /* minimum calls per repeat; raised so that a repeat lasts >= min_repeat_ms */
  int repeat;              /* number of repeats; costs[] receives one mean per repeat */
  int warmup;              /* calls before timing; the last one is timed and seeds the choice of number */
  double first_call_seconds; /* duration of a call the caller made just before (e.g. a correctness check);
                                with warmup 0 it seeds the choice of number instead */
  double min_repeat_ms;
  size_t flush_bytes;      /* 0: no flush; else flush before every timed call and use number = 1 */
  double cut_seconds;      /* 0: never; else stop after a repeat whose mean exceeds it */
  double single_call_cut_min_seconds; /* the warm-up call alone may cut only if it takes longer than this */
  double budget_seconds;   /* 0: none; else skip repeats that would end later than this after the call began,
                              so a slow kernel returns fewer repeats instead of hitting the caller's timeout */
  double contender_seconds; /* 0: always `repeat` repeats; else stop after the first repeat when its mean exceeds
                              it: a program clearly behind the best needs no precise median (not a cut) */
  int n_cold;              /* buffers evicted from every cache before each timed call: the inputs a deployment
                              reads from memory, not warm from the previous kernel (a network's weights) */
  void *const *cold_ptrs;
  const size_t *cold_bytes;
} ansorc_time_config;

typedef struct {
  int repeats_done;        /* entries written to costs[] */
  int number_used;         /* calls per repeat actually used */
  int cut;                 /* 1 when stopped early by cut_seconds */
  double warmup_seconds;   /* duration of the last warm-up call */
} ansorc_time_result;

/* Times fn(args). Returns 0, or the kernel's first non-zero return code (timing stops there).
 * costs must hold cfg->repeat doubles (at least 1). */
int ansorc_time_packed(ansorc_packed_fn fn, void **args, const ansorc_time_config *cfg, double *costs,
                       ansorc_time_result *result);

#ifdef __cplusplus
}
#endif
#endif /* ANSORC_RUNTIME_H */
