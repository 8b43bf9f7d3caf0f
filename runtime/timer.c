/* Timing harness and measurement buffers; see ansorc_runtime.h. Built once into a small cached .so. */
#define _GNU_SOURCE
#include "ansorc_runtime.h"

#include <math.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#define HUGE_PAGE_BYTES ((size_t)2 << 20)
#define MAX_NUMBER 1000000000.0
#define COLD_MAX_NUMBER 8 /* timed calls per repeat with cold inputs: each one pays an eviction first */

/* Every buffer carries this header in the readable page just below its leading guard page, so ansorc_free knows
 * how to release it. */
typedef struct {
  void *base;
  size_t total;   /* mmap length */
} alloc_header;

/* Every buffer is its own mapping with a PROT_NONE page before its first page and after its last one, so a
 * candidate that reads (or writes) well past either end of a buffer faults instead of silently reading a
 * neighbour. Buffers under 2 MiB end where the trailing guard page starts (their start rounded down to 64 bytes,
 * a cache line and an AVX-512 vector): with a size that is a multiple of 64 bytes, a read one element past the
 * end faults; before the start, only reads beyond the first page's slack do. Buffers of 2 MiB and more start on a
 * 2 MiB boundary, are never recycled heap memory already backed by small pages (glibc raises its mmap threshold
 * after frees, so malloc would hand those out), and are advised to be backed by transparent huge pages from the
 * first touch; past their end, up to the rest of the last 4 KiB page is readable. */
void *ansorc_alloc(size_t bytes) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  if (bytes == 0) bytes = 1;
  size_t span = (bytes + page - 1) / page * page;
  size_t align = bytes >= HUGE_PAGE_BYTES ? HUGE_PAGE_BYTES : page;
  size_t total = span + align + 3 * page;
  unsigned char *base = (unsigned char *)mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return NULL;
  unsigned char *first = (unsigned char *)(((size_t)base + 2 * page + align - 1) / align * align);
  mprotect(first - page, page, PROT_NONE);
  mprotect(first + span, page, PROT_NONE);
  unsigned char *p = first;
  if (align == HUGE_PAGE_BYTES) {
#ifdef MADV_HUGEPAGE
    madvise(first, span, MADV_HUGEPAGE); /* best effort: THP may be off, which is fine */
#endif
  } else {
    p = (unsigned char *)((size_t)(first + span - bytes) & ~(size_t)63);
  }
  alloc_header h = {base, total};
  memcpy(first - page - sizeof h, &h, sizeof h);
  return p;
}

void ansorc_free(void *p) {
  if (!p) return;
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  unsigned char *first = (unsigned char *)((size_t)p & ~(page - 1)); /* the buffer's first page */
  alloc_header h;
  memcpy(&h, first - page - sizeof h, sizeof h);
  munmap(h.base, h.total);
}

double ansorc_now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static unsigned char *flush_buffer = NULL;
static size_t flush_buffer_bytes = 0;
static unsigned flush_round = 0;

void ansorc_flush_cache(size_t bytes) {
  if (bytes == 0) return;
  if (flush_buffer_bytes < bytes) {
    ansorc_free(flush_buffer);
    flush_buffer = (unsigned char *)ansorc_alloc(bytes);
    flush_buffer_bytes = flush_buffer ? bytes : 0;
    if (!flush_buffer) return;
  }
  /* A new value every round so no layer can skip the stores; every thread writes a slice so that each core's
   * private caches are evicted too, not only the caller's. */
  unsigned char value = (unsigned char)(++flush_round);
  long chunks = (long)(bytes / 4096);
#pragma omp parallel for schedule(static)
  for (long c = 0; c < chunks; ++c) memset(flush_buffer + (size_t)c * 4096, value, 4096);
}

void ansorc_evict(const void *p, size_t bytes) {
  const unsigned char *c = (const unsigned char *)p;
  if (!c || bytes == 0) return;
#if defined(__x86_64__) || defined(__i386__)
  long lines = (long)((bytes + 63) / 64);
#pragma omp parallel for schedule(static)
  for (long i = 0; i < lines; ++i) _mm_clflush(c + (size_t)i * 64);
  _mm_mfence();
#elif defined(__aarch64__)
  unsigned long ctr;
  __asm__ volatile("mrs %0, ctr_el0" : "=r"(ctr));
  size_t line = (size_t)4 << ((ctr >> 16) & 0xF);
  for (size_t i = 0; i < bytes; i += line) __asm__ volatile("dc civac, %0" : : "r"(c + i) : "memory");
  __asm__ volatile("dsb ish" : : : "memory");
#endif
}

/* Before a timed call: the whole-cache flush and the eviction of cold inputs that cfg asks for. */
static void make_cold(const ansorc_time_config *cfg) {
  if (cfg->flush_bytes > 0) ansorc_flush_cache(cfg->flush_bytes);
  for (int i = 0; i < cfg->n_cold; ++i) ansorc_evict(cfg->cold_ptrs[i], cfg->cold_bytes[i]);
}

/* True when one more repeat lasting `next_seconds` would end past the budget. */
static int over_budget(const ansorc_time_config *cfg, double t_begin, double next_seconds) {
  return cfg->budget_seconds > 0 && ansorc_now_seconds() - t_begin + next_seconds > cfg->budget_seconds;
}

int ansorc_time_packed(ansorc_packed_fn fn, void **args, const ansorc_time_config *cfg, double *costs,
                       ansorc_time_result *result) {
  int rc = 0;
  double t_begin = ansorc_now_seconds();
  memset(result, 0, sizeof(*result));
  int warmup = cfg->warmup > 0 ? cfg->warmup : 0;
  for (int w = 0; w < warmup; ++w) {
    double t0 = ansorc_now_seconds();
    if ((rc = fn(args)) != 0) return rc;
    result->warmup_seconds = ansorc_now_seconds() - t0;
  }
  if (warmup == 0) result->warmup_seconds = cfg->first_call_seconds;
  /* One warm call already slower than the cut is enough evidence; tiny kernels are cheap to time anyway. */
  if (cfg->cut_seconds > 0 && warmup > 0 && result->warmup_seconds > cfg->cut_seconds &&
      result->warmup_seconds > cfg->single_call_cut_min_seconds) {
    costs[0] = result->warmup_seconds;
    result->repeats_done = 1;
    result->number_used = 1;
    result->cut = 1;
    return 0;
  }
  int repeat = cfg->repeat > 0 ? cfg->repeat : 1;
  double min_repeat_s = cfg->min_repeat_ms * 1e-3;

  if (cfg->flush_bytes > 0 || cfg->n_cold > 0) {
    /* Each timed call follows its own flush or eviction, which is not timed: a whole-cache flush allows one call
     * per repeat (it costs many calls), an eviction of the cold inputs a few, as min_repeat_ms asks. */
    long calls = 1;
    if (cfg->flush_bytes == 0 && min_repeat_s > 0 && result->warmup_seconds > 0)
      calls = (long)ceil(min_repeat_s / result->warmup_seconds);
    if (calls > COLD_MAX_NUMBER) calls = COLD_MAX_NUMBER;
    if (calls < 1) calls = 1;
    result->number_used = (int)calls;
    for (int r = 0; r < repeat; ++r) {
      if (r > 0 && over_budget(cfg, t_begin, costs[r - 1] * calls)) break;
      double total = 0.0;
      for (long i = 0; i < calls; ++i) {
        make_cold(cfg);
        double t0 = ansorc_now_seconds();
        if ((rc = fn(args)) != 0) return rc;
        total += ansorc_now_seconds() - t0;
      }
      costs[r] = total / (double)calls;
      result->repeats_done = r + 1;
      if (cfg->cut_seconds > 0 && costs[r] > cfg->cut_seconds) { result->cut = 1; break; }
      if (r == 0 && cfg->contender_seconds > 0 && costs[0] > cfg->contender_seconds) break;
    }
    return 0;
  }

  double number = cfg->number > 0 ? cfg->number : 1;
  if (min_repeat_s > 0 && result->warmup_seconds > 0) {
    double estimate = ceil(min_repeat_s / result->warmup_seconds);
    if (estimate > number) number = estimate;
  }
  if (number > MAX_NUMBER) number = MAX_NUMBER;
  int recalibrations = 0;
  for (int r = 0; r < repeat; ++r) {
    if (r > 0 && over_budget(cfg, t_begin, costs[r - 1] * number)) break;
    long calls = (long)number;
    double t0 = ansorc_now_seconds();
    for (long i = 0; i < calls; ++i)
      if ((rc = fn(args)) != 0) return rc;
    double elapsed = ansorc_now_seconds() - t0;
    /* The warm-up call can be slower than steady state; if the first repeat fell well short of the minimum,
     * scale number up and redo it rather than report a noisy short repeat. */
    if (r == 0 && recalibrations < 3 && elapsed < 0.5 * min_repeat_s) {
      double scaled = ceil(number * 1.2 * min_repeat_s / (elapsed > 1e-9 ? elapsed : 1e-9));
      number = scaled > MAX_NUMBER ? MAX_NUMBER : scaled;
      ++recalibrations;
      --r;
      continue;
    }
    costs[r] = elapsed / (double)calls;
    result->repeats_done = r + 1;
    result->number_used = (int)calls;
    if (cfg->cut_seconds > 0 && costs[r] > cfg->cut_seconds) { result->cut = 1; break; }
    if (r == 0 && cfg->contender_seconds > 0 && costs[0] > cfg->contender_seconds) break;
  }
  return 0;
}
