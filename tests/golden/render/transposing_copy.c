#if !defined(_POSIX_C_SOURCE) || _POSIX_C_SOURCE < 200112L
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

#ifndef ANSORC_POOL
#define ANSORC_POOL
#include <sched.h>
#define ANSORC_POOL_SLOTS 8
#define ANSORC_HUGE_BYTES ((size_t)2 << 20)
typedef struct { void* p; size_t n; int busy; } ansorc_slot;
static ansorc_slot ansorc_pool[ANSORC_POOL_SLOTS];
static int ansorc_pool_lock;
#ifdef __linux__
int madvise(void* addr, size_t length, int advice);
#endif
static void* ansorc_fresh(size_t bytes) {
  void* p = NULL;
  size_t align = bytes >= ANSORC_HUGE_BYTES ? ANSORC_HUGE_BYTES : 64;
  if (posix_memalign(&p, align, bytes ? bytes : 64) != 0) return NULL;
#ifdef __linux__
  if (align == ANSORC_HUGE_BYTES) madvise(p, bytes, 14); /* MADV_HUGEPAGE, best effort */
#endif
  return p;
}
static void ansorc_pool_enter(void) {
  while (__atomic_exchange_n(&ansorc_pool_lock, 1, __ATOMIC_ACQUIRE)) sched_yield();
}
static void ansorc_pool_leave(void) { __atomic_store_n(&ansorc_pool_lock, 0, __ATOMIC_RELEASE); }
static void* ansorc_workspace_take(size_t bytes) {
  ansorc_slot* fit = NULL; ansorc_slot* spare = NULL;
  ansorc_pool_enter();
  for (int i = 0; i < ANSORC_POOL_SLOTS; ++i) {
    ansorc_slot* s = &ansorc_pool[i];
    if (s->busy) continue;
    if (s->n >= bytes && (!fit || s->n < fit->n)) fit = s;
    if (!spare || s->n < spare->n) spare = s;
  }
  if (!fit && spare) {
    free(spare->p);
    spare->p = ansorc_fresh(bytes);
    spare->n = spare->p ? bytes : 0;
    fit = spare->p ? spare : NULL;
  }
  if (fit) fit->busy = 1;
  ansorc_pool_leave();
  return fit ? fit->p : (spare ? NULL : ansorc_fresh(bytes));
}
static void ansorc_workspace_give(void* p) {
  ansorc_pool_enter();
  for (int i = 0; i < ANSORC_POOL_SLOTS; ++i) {
    if (ansorc_pool[i].busy && ansorc_pool[i].p == p) { ansorc_pool[i].busy = 0; ansorc_pool_leave(); return; }
  }
  ansorc_pool_leave();
  free(p);
}
#ifdef __GNUC__
__attribute__((destructor)) static void ansorc_pool_release(void) {
  for (int i = 0; i < ANSORC_POOL_SLOTS; ++i) {
    free(ansorc_pool[i].p); ansorc_pool[i].p = NULL; ansorc_pool[i].n = 0;
  }
}
#endif
#endif

#include <immintrin.h>
static inline void ansorc_transpose_m512(const float* s, int64_t ss, float* d, int64_t ds) { __m512 r0 = _mm512_loadu_ps(s + 0 * ss), r1 = _mm512_loadu_ps(s + 1 * ss), r2 = _mm512_loadu_ps(s + 2 * ss), r3 = _mm512_loadu_ps(s + 3 * ss), r4 = _mm512_loadu_ps(s + 4 * ss), r5 = _mm512_loadu_ps(s + 5 * ss), r6 = _mm512_loadu_ps(s + 6 * ss), r7 = _mm512_loadu_ps(s + 7 * ss), r8 = _mm512_loadu_ps(s + 8 * ss), r9 = _mm512_loadu_ps(s + 9 * ss), r10 = _mm512_loadu_ps(s + 10 * ss), r11 = _mm512_loadu_ps(s + 11 * ss), r12 = _mm512_loadu_ps(s + 12 * ss), r13 = _mm512_loadu_ps(s + 13 * ss), r14 = _mm512_loadu_ps(s + 14 * ss), r15 = _mm512_loadu_ps(s + 15 * ss); __m512 t0 = _mm512_unpacklo_ps(r0, r1), t1 = _mm512_unpackhi_ps(r0, r1); __m512 t2 = _mm512_unpacklo_ps(r2, r3), t3 = _mm512_unpackhi_ps(r2, r3); __m512 t4 = _mm512_unpacklo_ps(r4, r5), t5 = _mm512_unpackhi_ps(r4, r5); __m512 t6 = _mm512_unpacklo_ps(r6, r7), t7 = _mm512_unpackhi_ps(r6, r7); __m512 t8 = _mm512_unpacklo_ps(r8, r9), t9 = _mm512_unpackhi_ps(r8, r9); __m512 t10 = _mm512_unpacklo_ps(r10, r11), t11 = _mm512_unpackhi_ps(r10, r11); __m512 t12 = _mm512_unpacklo_ps(r12, r13), t13 = _mm512_unpackhi_ps(r12, r13); __m512 t14 = _mm512_unpacklo_ps(r14, r15), t15 = _mm512_unpackhi_ps(r14, r15); __m512 u0 = _mm512_shuffle_ps(t0, t2, 0x44); __m512 u1 = _mm512_shuffle_ps(t0, t2, 0xEE); __m512 u2 = _mm512_shuffle_ps(t1, t3, 0x44); __m512 u3 = _mm512_shuffle_ps(t1, t3, 0xEE); __m512 u4 = _mm512_shuffle_ps(t4, t6, 0x44); __m512 u5 = _mm512_shuffle_ps(t4, t6, 0xEE); __m512 u6 = _mm512_shuffle_ps(t5, t7, 0x44); __m512 u7 = _mm512_shuffle_ps(t5, t7, 0xEE); __m512 u8 = _mm512_shuffle_ps(t8, t10, 0x44); __m512 u9 = _mm512_shuffle_ps(t8, t10, 0xEE); __m512 u10 = _mm512_shuffle_ps(t9, t11, 0x44); __m512 u11 = _mm512_shuffle_ps(t9, t11, 0xEE); __m512 u12 = _mm512_shuffle_ps(t12, t14, 0x44); __m512 u13 = _mm512_shuffle_ps(t12, t14, 0xEE); __m512 u14 = _mm512_shuffle_ps(t13, t15, 0x44); __m512 u15 = _mm512_shuffle_ps(t13, t15, 0xEE); __m512 a0 = _mm512_shuffle_f32x4(u0, u4, 0x88), b0 = _mm512_shuffle_f32x4(u0, u4, 0xDD), e0 = _mm512_shuffle_f32x4(u8, u12, 0x88), f0 = _mm512_shuffle_f32x4(u8, u12, 0xDD); __m512 c0 = _mm512_shuffle_f32x4(a0, e0, 0x88), c8 = _mm512_shuffle_f32x4(a0, e0, 0xDD), c4 = _mm512_shuffle_f32x4(b0, f0, 0x88), c12 = _mm512_shuffle_f32x4(b0, f0, 0xDD); __m512 a1 = _mm512_shuffle_f32x4(u1, u5, 0x88), b1 = _mm512_shuffle_f32x4(u1, u5, 0xDD), e1 = _mm512_shuffle_f32x4(u9, u13, 0x88), f1 = _mm512_shuffle_f32x4(u9, u13, 0xDD); __m512 c1 = _mm512_shuffle_f32x4(a1, e1, 0x88), c9 = _mm512_shuffle_f32x4(a1, e1, 0xDD), c5 = _mm512_shuffle_f32x4(b1, f1, 0x88), c13 = _mm512_shuffle_f32x4(b1, f1, 0xDD); __m512 a2 = _mm512_shuffle_f32x4(u2, u6, 0x88), b2 = _mm512_shuffle_f32x4(u2, u6, 0xDD), e2 = _mm512_shuffle_f32x4(u10, u14, 0x88), f2 = _mm512_shuffle_f32x4(u10, u14, 0xDD); __m512 c2 = _mm512_shuffle_f32x4(a2, e2, 0x88), c10 = _mm512_shuffle_f32x4(a2, e2, 0xDD), c6 = _mm512_shuffle_f32x4(b2, f2, 0x88), c14 = _mm512_shuffle_f32x4(b2, f2, 0xDD); __m512 a3 = _mm512_shuffle_f32x4(u3, u7, 0x88), b3 = _mm512_shuffle_f32x4(u3, u7, 0xDD), e3 = _mm512_shuffle_f32x4(u11, u15, 0x88), f3 = _mm512_shuffle_f32x4(u11, u15, 0xDD); __m512 c3 = _mm512_shuffle_f32x4(a3, e3, 0x88), c11 = _mm512_shuffle_f32x4(a3, e3, 0xDD), c7 = _mm512_shuffle_f32x4(b3, f3, 0x88), c15 = _mm512_shuffle_f32x4(b3, f3, 0xDD); _mm512_storeu_ps(d + 0 * ds, c0); _mm512_storeu_ps(d + 1 * ds, c1); _mm512_storeu_ps(d + 2 * ds, c2); _mm512_storeu_ps(d + 3 * ds, c3); _mm512_storeu_ps(d + 4 * ds, c4); _mm512_storeu_ps(d + 5 * ds, c5); _mm512_storeu_ps(d + 6 * ds, c6); _mm512_storeu_ps(d + 7 * ds, c7); _mm512_storeu_ps(d + 8 * ds, c8); _mm512_storeu_ps(d + 9 * ds, c9); _mm512_storeu_ps(d + 10 * ds, c10); _mm512_storeu_ps(d + 11 * ds, c11); _mm512_storeu_ps(d + 12 * ds, c12); _mm512_storeu_ps(d + 13 * ds, c13); _mm512_storeu_ps(d + 14 * ds, c14); _mm512_storeu_ps(d + 15 * ds, c15); }

#ifndef ANSORC_THREADS
#define ANSORC_THREADS
typedef void (*ansorc_task_fn)(void*, int32_t, int32_t);
#ifdef _OPENMP
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <omp.h>
#ifdef __linux__
int sched_setaffinity(int pid, size_t bytes, const void* mask);   /* glibc declares it only with _GNU_SOURCE */
#endif
#ifndef ANSORC_SPIN_NS
#define ANSORC_SPIN_NS 1000000L
#endif
#define ANSORC_MAX_THREADS 256
#if defined(__x86_64__) || defined(__i386__)
#define ANSORC_PAUSE() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define ANSORC_PAUSE() __asm__ __volatile__("yield")
#else
#define ANSORC_PAUSE() ((void)0)
#endif
typedef struct {
  pthread_mutex_t mu; pthread_cond_t cv;
  pthread_t tid[ANSORC_MAX_THREADS]; char alive[ANSORC_MAX_THREADS]; char joinable[ANSORC_MAX_THREADS];
  int team, live, sleepers, stop, busy, hooked, place;
  uint64_t word;   /* job generation << 32 | next unclaimed iteration */
  ansorc_task_fn fn; void* ctx; int32_t n, chunk, done;
} ansorc_team_t;
static ansorc_team_t ansorc_team = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER};
static long ansorc_ns_since(const struct timespec* t0) {
  struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
  return (long)(t.tv_sec - t0->tv_sec) * 1000000000L + (t.tv_nsec - t0->tv_nsec);
}
/* Claims and runs iterations of job `gen` until none is left; a claim of another generation's job fails. */
static void ansorc_claim(ansorc_team_t* p, uint32_t gen) {
  for (;;) {
    uint64_t w = __atomic_load_n(&p->word, __ATOMIC_ACQUIRE);
    if ((uint32_t)(w >> 32) != gen) return;
    int32_t next = (int32_t)(uint32_t)w, n = __atomic_load_n(&p->n, __ATOMIC_RELAXED);
    int32_t chunk = __atomic_load_n(&p->chunk, __ATOMIC_RELAXED);
    ansorc_task_fn fn = __atomic_load_n(&p->fn, __ATOMIC_RELAXED);
    void* ctx = __atomic_load_n(&p->ctx, __ATOMIC_RELAXED);
    if (next >= n) return;
    int32_t size = chunk > 0 ? chunk : chunk < 0 ? (n - 1) / p->team + 1 : (n - next) / (2 * p->team);
    size = size < 1 ? 1 : (size > n - next ? n - next : size);
    if (!__atomic_compare_exchange_n(&p->word, &w, w + (uint64_t)size, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      continue;
    fn(ctx, next, next + size);
    __atomic_fetch_add(&p->done, size, __ATOMIC_RELEASE);
  }
}
/* Spin, then sleep until a job other than `seen` is published; 0 when the worker is to exit (idle, or closing). */
static int ansorc_await(ansorc_team_t* p, uint32_t seen, int me) {
  struct timespec t0, deadline; clock_gettime(CLOCK_MONOTONIC, &t0);
  for (long k = 1;; ++k) {
    if ((uint32_t)(__atomic_load_n(&p->word, __ATOMIC_ACQUIRE) >> 32) != seen) return 1;
    ANSORC_PAUSE();
    if ((k & 63) == 0 && ansorc_ns_since(&t0) > ANSORC_SPIN_NS) break;
  }
  pthread_mutex_lock(&p->mu);
  __atomic_fetch_add(&p->sleepers, 1, __ATOMIC_SEQ_CST);
  clock_gettime(CLOCK_REALTIME, &deadline); deadline.tv_sec += 1;
  int rc = 0, fresh = 0;
  while (!p->stop && rc != ETIMEDOUT &&
         !(fresh = (uint32_t)(__atomic_load_n(&p->word, __ATOMIC_SEQ_CST) >> 32) != seen))
    rc = pthread_cond_timedwait(&p->cv, &p->mu, &deadline);
  __atomic_fetch_sub(&p->sleepers, 1, __ATOMIC_SEQ_CST);
  int stay = fresh && !p->stop;
  if (!stay) { p->alive[me] = 0; __atomic_fetch_sub(&p->live, 1, __ATOMIC_RELAXED); }
  pthread_mutex_unlock(&p->mu);
  return stay;
}
/* With OMP_PROC_BIND the calling thread is bound to one place and a new thread inherits that mask: worker `me`
   takes the place `me + 1` after the caller's, as an OpenMP team's thread would. */
static void ansorc_bind(ansorc_team_t* p, int me) {
#ifdef __linux__
  int places = omp_get_num_places();
  if (omp_get_proc_bind() == omp_proc_bind_false || places < 2 || p->place < 0) return;
  int place = (p->place + me + 1) % places, n = omp_get_place_num_procs(place), ids[1024];
  const int word = 8 * sizeof(unsigned long);
  unsigned long mask[1024 / (8 * sizeof(unsigned long))] = {0};
  if (n < 1 || n > 1024) return;
  omp_get_place_proc_ids(place, ids);
  for (int i = 0; i < n; ++i)
    if (ids[i] >= 0 && ids[i] < 1024) mask[ids[i] / word] |= 1ul << (ids[i] % word);
  sched_setaffinity(0, sizeof(mask), mask);
#else
  (void)p; (void)me;
#endif
}
static void* ansorc_worker(void* arg) {
  ansorc_team_t* p = &ansorc_team; int me = (int)(intptr_t)arg;
  ansorc_bind(p, me);
  uint32_t seen = 0xffffffffu;   /* none: a new worker joins the job under way, if any */
  for (;;) {
    uint32_t gen = (uint32_t)(__atomic_load_n(&p->word, __ATOMIC_ACQUIRE) >> 32);
    if (gen != seen) { seen = gen; ansorc_claim(p, gen); continue; }
    if (!ansorc_await(p, seen, me)) return NULL;
  }
}
static void ansorc_team_child(void) {   /* after fork: the child has none of the parent's workers */
  ansorc_team_t* p = &ansorc_team;
  pthread_mutex_init(&p->mu, NULL); pthread_cond_init(&p->cv, NULL);
  for (int i = 0; i < ANSORC_MAX_THREADS; ++i) p->alive[i] = p->joinable[i] = 0;
  p->live = p->sleepers = p->busy = 0;
}
__attribute__((destructor)) static void ansorc_team_close(void) {   /* before dlclose unmaps the workers' code */
  ansorc_team_t* p = &ansorc_team;
  pthread_mutex_lock(&p->mu); p->stop = 1; pthread_cond_broadcast(&p->cv); pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < ANSORC_MAX_THREADS; ++i)
    if (p->joinable[i]) { pthread_join(p->tid[i], NULL); p->joinable[i] = 0; }
}
static void ansorc_team_grow(ansorc_team_t* p) {
  pthread_mutex_lock(&p->mu);
  if (!p->hooked) { pthread_atfork(NULL, NULL, ansorc_team_child); p->hooked = 1; p->place = omp_get_place_num(); }
  pthread_attr_t attr; pthread_attr_init(&attr); pthread_attr_setstacksize(&attr, (size_t)8 << 20);
  for (int i = 0; i < p->team - 1 && !p->stop; ++i) {
    if (p->alive[i]) continue;
    if (p->joinable[i]) { pthread_join(p->tid[i], NULL); p->joinable[i] = 0; }   /* exited when idle */
    if (pthread_create(&p->tid[i], &attr, ansorc_worker, (void*)(intptr_t)i) != 0) break;
    p->alive[i] = p->joinable[i] = 1; __atomic_fetch_add(&p->live, 1, __ATOMIC_RELAXED);
  }
  pthread_attr_destroy(&attr);
  pthread_mutex_unlock(&p->mu);
}
/* Runs fn(ctx, lo, hi) over [0, n) on the team; chunk 0: guided claims, -1: one range per thread (OpenMP's
   static schedule), else claims of `chunk` iterations.
   A call made while the team is busy (another thread's call) runs on its own thread. */
static void ansorc_parallel_for(ansorc_task_fn fn, void* ctx, int32_t n, int32_t chunk) {
  ansorc_team_t* p = &ansorc_team;
  if (n <= 0) return;
  if (!p->team) {
    int t = omp_get_max_threads(); p->team = t < 1 ? 1 : t > ANSORC_MAX_THREADS ? ANSORC_MAX_THREADS : t;
  }
  if (p->team == 1 || n == 1 || __atomic_exchange_n(&p->busy, 1, __ATOMIC_ACQUIRE)) { fn(ctx, 0, n); return; }
  if (__atomic_load_n(&p->live, __ATOMIC_RELAXED) < p->team - 1) ansorc_team_grow(p);
  __atomic_store_n(&p->fn, fn, __ATOMIC_RELAXED); __atomic_store_n(&p->ctx, ctx, __ATOMIC_RELAXED);
  __atomic_store_n(&p->n, n, __ATOMIC_RELAXED); __atomic_store_n(&p->chunk, chunk, __ATOMIC_RELAXED);
  __atomic_store_n(&p->done, 0, __ATOMIC_RELAXED);
  uint32_t gen = (uint32_t)(__atomic_load_n(&p->word, __ATOMIC_RELAXED) >> 32) + 1u;
  if (gen == 0xffffffffu) gen = 0;
  __atomic_store_n(&p->word, (uint64_t)gen << 32, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&p->sleepers, __ATOMIC_SEQ_CST)) {
    pthread_mutex_lock(&p->mu); pthread_cond_broadcast(&p->cv); pthread_mutex_unlock(&p->mu);
  }
  ansorc_claim(p, gen);
  for (long k = 0; __atomic_load_n(&p->done, __ATOMIC_ACQUIRE) < n; ++k) {
    if (k < 4096) ANSORC_PAUSE(); else sched_yield();   /* a claimed chunk runs on a thread without a core */
  }
  __atomic_store_n(&p->busy, 0, __ATOMIC_RELEASE);
}
#else
static void ansorc_parallel_for(ansorc_task_fn fn, void* ctx, int32_t n, int32_t chunk) {
  (void)chunk; if (n > 0) fn(ctx, 0, n);
}
#endif
#endif

struct tbg_0_par0_ctx {
  const float* query;
  const float* key;
  float* scores;
  float* query_T;
  float* key_T;
  volatile int* ansorc_status_p;
};
static void tbg_0_par0(void* ansorc_ctx_, int32_t ansorc_lo, int32_t ansorc_hi) {
  const struct tbg_0_par0_ctx* ansorc_ctx = (const struct tbg_0_par0_ctx*)ansorc_ctx_;
  const float* restrict query = ansorc_ctx->query;
  const float* restrict key = ansorc_ctx->key;
  float* restrict scores = ansorc_ctx->scores;
  float* restrict query_T = ansorc_ctx->query_T;
  float* restrict key_T = ansorc_ctx->key_T;
  volatile int ansorc_status = 0;
  for (int32_t query_T_b_h_i = ansorc_lo; query_T_b_h_i < ansorc_hi; ++query_T_b_h_i) {
    _mm512_storeu_ps((query_T + (query_T_b_h_i * 64)), _mm512_loadu_ps((query + (((query_T_b_h_i % 128) * 768) + ((query_T_b_h_i / 128) * 64)))));
    _mm512_storeu_ps((query_T + ((query_T_b_h_i * 64) + 16)), _mm512_loadu_ps((query + ((((query_T_b_h_i % 128) * 768) + ((query_T_b_h_i / 128) * 64)) + 16))));
    _mm512_storeu_ps((query_T + ((query_T_b_h_i * 64) + 32)), _mm512_loadu_ps((query + ((((query_T_b_h_i % 128) * 768) + ((query_T_b_h_i / 128) * 64)) + 32))));
    _mm512_storeu_ps((query_T + ((query_T_b_h_i * 64) + 48)), _mm512_loadu_ps((query + ((((query_T_b_h_i % 128) * 768) + ((query_T_b_h_i / 128) * 64)) + 48))));
  }
  if (ansorc_status) *ansorc_ctx->ansorc_status_p = ansorc_status;
}

struct tbg_0_par1_ctx {
  const float* query;
  const float* key;
  float* scores;
  float* query_T;
  float* key_T;
  volatile int* ansorc_status_p;
};
static void tbg_0_par1(void* ansorc_ctx_, int32_t ansorc_lo, int32_t ansorc_hi) {
  const struct tbg_0_par1_ctx* ansorc_ctx = (const struct tbg_0_par1_ctx*)ansorc_ctx_;
  const float* restrict query = ansorc_ctx->query;
  const float* restrict key = ansorc_ctx->key;
  float* restrict scores = ansorc_ctx->scores;
  float* restrict query_T = ansorc_ctx->query_T;
  float* restrict key_T = ansorc_ctx->key_T;
  volatile int ansorc_status = 0;
  for (int32_t key_T_b_h_d_0_j_0 = ansorc_lo; key_T_b_h_d_0_j_0 < ansorc_hi; ++key_T_b_h_d_0_j_0) {
    for (int32_t key_T_d_1 = 0; key_T_d_1 < 4; ++key_T_d_1) {
      ansorc_transpose_m512((key + ((((key_T_b_h_d_0_j_0 % 4) * 24576) + ((key_T_b_h_d_0_j_0 / 4) * 64)) + (key_T_d_1 * 16))), 768, (key_T + ((((key_T_b_h_d_0_j_0 / 4) * 8192) + (key_T_d_1 * 2048)) + ((key_T_b_h_d_0_j_0 % 4) * 32))), 128);
      ansorc_transpose_m512((key + (((((key_T_b_h_d_0_j_0 % 4) * 24576) + ((key_T_b_h_d_0_j_0 / 4) * 64)) + (key_T_d_1 * 16)) + 12288)), 768, (key_T + (((((key_T_b_h_d_0_j_0 / 4) * 8192) + (key_T_d_1 * 2048)) + ((key_T_b_h_d_0_j_0 % 4) * 32)) + 16)), 128);
    }
  }
  if (ansorc_status) *ansorc_ctx->ansorc_status_p = ansorc_status;
}

struct tbg_0_par2_ctx {
  const float* query;
  const float* key;
  float* scores;
  float* query_T;
  float* key_T;
  volatile int* ansorc_status_p;
};
static void tbg_0_par2(void* ansorc_ctx_, int32_t ansorc_lo, int32_t ansorc_hi) {
  const struct tbg_0_par2_ctx* ansorc_ctx = (const struct tbg_0_par2_ctx*)ansorc_ctx_;
  const float* restrict query = ansorc_ctx->query;
  const float* restrict key = ansorc_ctx->key;
  float* restrict scores = ansorc_ctx->scores;
  float* restrict query_T = ansorc_ctx->query_T;
  float* restrict key_T = ansorc_ctx->key_T;
  volatile int ansorc_status = 0;
  for (int32_t scores_b_h_0_i_0_j_0_h_1_i_1 = ansorc_lo; scores_b_h_0_i_0_j_0_h_1_i_1 < ansorc_hi; ++scores_b_h_0_i_0_j_0_h_1_i_1) {
    for (int32_t scores_j_1 = 0; scores_j_1 < 64; ++scores_j_1) {
      float scores_local[12] __attribute__((aligned(64)));
      for (int32_t scores_local_b = 0; scores_local_b < 1; ++scores_local_b) {
        for (int32_t scores_local_h_0 = 0; scores_local_h_0 < 1; ++scores_local_h_0) {
          for (int32_t scores_local_i_0 = 0; scores_local_i_0 < 1; ++scores_local_i_0) {
            for (int32_t scores_local_j_0 = 0; scores_local_j_0 < 1; ++scores_local_j_0) {
              for (int32_t scores_local_h_1 = 0; scores_local_h_1 < 1; ++scores_local_h_1) {
                for (int32_t scores_local_i_1 = 0; scores_local_i_1 < 1; ++scores_local_i_1) {
                  for (int32_t scores_local_j_1 = 0; scores_local_j_1 < 1; ++scores_local_j_1) {
                    #pragma omp simd
                    for (int32_t scores_local_j_3 = 0; scores_local_j_3 < 2; ++scores_local_j_3) {
                      scores_local[scores_local_j_3] = 0.0f;
                    }
                    #pragma omp simd
                    for (int32_t scores_local_j_3 = 0; scores_local_j_3 < 2; ++scores_local_j_3) {
                      scores_local[(scores_local_j_3 + 2)] = 0.0f;
                    }
                    #pragma omp simd
                    for (int32_t scores_local_j_3 = 0; scores_local_j_3 < 2; ++scores_local_j_3) {
                      scores_local[(scores_local_j_3 + 4)] = 0.0f;
                    }
                    #pragma omp simd
                    for (int32_t scores_local_j_3 = 0; scores_local_j_3 < 2; ++scores_local_j_3) {
                      scores_local[(scores_local_j_3 + 6)] = 0.0f;
                    }
                    #pragma omp simd
                    for (int32_t scores_local_j_3 = 0; scores_local_j_3 < 2; ++scores_local_j_3) {
                      scores_local[(scores_local_j_3 + 8)] = 0.0f;
                    }
                    #pragma omp simd
                    for (int32_t scores_local_j_3 = 0; scores_local_j_3 < 2; ++scores_local_j_3) {
                      scores_local[(scores_local_j_3 + 10)] = 0.0f;
                    }
                    for (int32_t scores_local_r_0 = 0; scores_local_r_0 < 2; ++scores_local_r_0) {
                      for (int32_t scores_local_r_1 = 0; scores_local_r_1 < 32; ++scores_local_r_1) {
                        #pragma omp simd
                        for (int32_t scores_local_j_3 = 0; scores_local_j_3 < 2; ++scores_local_j_3) {
                          scores_local[scores_local_j_3] = (scores_local[scores_local_j_3] + (query_T[(((((((scores_b_h_0_i_0_j_0_h_1_i_1 / 16) % 4) * 24576) + ((scores_b_h_0_i_0_j_0_h_1_i_1 / 64) * 2048)) + ((scores_b_h_0_i_0_j_0_h_1_i_1 % 16) * 128)) + (scores_local_r_0 * 32)) + scores_local_r_1)] * key_T[(((((((scores_b_h_0_i_0_j_0_h_1_i_1 / 16) % 4) * 24576) + (scores_local_r_0 * 4096)) + (scores_local_r_1 * 128)) + (scores_j_1 * 2)) + scores_local_j_3)]));
                        }
                        #pragma omp simd
                        for (int32_t scores_local_j_3 = 0; scores_local_j_3 < 2; ++scores_local_j_3) {
                          scores_local[(scores_local_j_3 + 2)] = (scores_local[(scores_local_j_3 + 2)] + (query_T[((((((((scores_b_h_0_i_0_j_0_h_1_i_1 / 16) % 4) * 24576) + ((scores_b_h_0_i_0_j_0_h_1_i_1 / 64) * 2048)) + ((scores_b_h_0_i_0_j_0_h_1_i_1 % 16) * 128)) + (scores_local_r_0 * 32)) + scores_local_r_1) + 64)] * key_T[(((((((scores_b_h_0_i_0_j_0_h_1_i_1 / 16) % 4) * 24576) + (scores_local_r_0 * 4096)) + (scores_local_r_1 * 128)) + (scores_j_1 * 2)) + scores_local_j_3)]));
                        }
                        #pragma omp simd
                        for (int32_t scores_local_j_3 = 0; scores_local_j_3 < 2; ++scores_local_j_3) {
                          scores_local[(scores_local_j_3 + 4)] = (scores_local[(scores_local_j_3 + 4)] + (query_T[((((((((scores_b_h_0_i_0_j_0_h_1_i_1 / 16) % 4) * 24576) + ((scores_b_h_0_i_0_j_0_h_1_i_1 / 64) * 2048)) + ((scores_b_h_0_i_0_j_0_h_1_i_1 % 16) * 128)) + (scores_local_r_0 * 32)) + scores_local_r_1) + 8192)] * key_T[((((((((scores_b_h_0_i_0_j_0_h_1_i_1 / 16) % 4) * 24576) + (scores_local_r_0 * 4096)) + (scores_local_r_1 * 128)) + (scores_j_1 * 2)) + scores_local_j_3) + 8192)]));
                        }
                        #pragma omp simd
                        for (int32_t scores_local_j_3 = 0; scores_local_j_3 < 2; ++scores_local_j_3) {
                          scores_local[(scores_local_j_3 + 6)] = (scores_local[(scores_local_j_3 + 6)] + (query_T[((((((((scores_b_h_0_i_0_j_0_h_1_i_1 / 16) % 4) * 24576) + ((scores_b_h_0_i_0_j_0_h_1_i_1 / 64) * 2048)) + ((scores_b_h_0_i_0_j_0_h_1_i_1 % 16) * 128)) + (scores_local_r_0 * 32)) + scores_local_r_1) + 8256)] * key_T[((((((((scores_b_h_0_i_0_j_0_h_1_i_1 / 16) % 4) * 24576) + (scores_local_r_0 * 4096)) + (scores_local_r_1 * 128)) + (scores_j_1 * 2)) + scores_local_j_3) + 8192)]));
                        }
                        #pragma omp simd
                        for (int32_t scores_local_j_3 = 0; scores_local_j_3 < 2; ++scores_local_j_3) {
                          scores_local[(scores_local_j_3 + 8)] = (scores_local[(scores_local_j_3 + 8)] + (query_T[((((((((scores_b_h_0_i_0_j_0_h_1_i_1 / 16) % 4) * 24576) + ((scores_b_h_0_i_0_j_0_h_1_i_1 / 64) * 2048)) + ((scores_b_h_0_i_0_j_0_h_1_i_1 % 16) * 128)) + (scores_local_r_0 * 32)) + scores_local_r_1) + 16384)] * key_T[((((((((scores_b_h_0_i_0_j_0_h_1_i_1 / 16) % 4) * 24576) + (scores_local_r_0 * 4096)) + (scores_local_r_1 * 128)) + (scores_j_1 * 2)) + scores_local_j_3) + 16384)]));
                        }
                        #pragma omp simd
                        for (int32_t scores_local_j_3 = 0; scores_local_j_3 < 2; ++scores_local_j_3) {
                          scores_local[(scores_local_j_3 + 10)] = (scores_local[(scores_local_j_3 + 10)] + (query_T[((((((((scores_b_h_0_i_0_j_0_h_1_i_1 / 16) % 4) * 24576) + ((scores_b_h_0_i_0_j_0_h_1_i_1 / 64) * 2048)) + ((scores_b_h_0_i_0_j_0_h_1_i_1 % 16) * 128)) + (scores_local_r_0 * 32)) + scores_local_r_1) + 16448)] * key_T[((((((((scores_b_h_0_i_0_j_0_h_1_i_1 / 16) % 4) * 24576) + (scores_local_r_0 * 4096)) + (scores_local_r_1 * 128)) + (scores_j_1 * 2)) + scores_local_j_3) + 16384)]));
                        }
                      }
                    }
                  }
                }
              }
            }
          }
        }
      }
      for (int32_t scores_h_2 = 0; scores_h_2 < 3; ++scores_h_2) {
        for (int32_t scores_i_2 = 0; scores_i_2 < 2; ++scores_i_2) {
          #pragma omp simd
          for (int32_t scores_j_2 = 0; scores_j_2 < 2; ++scores_j_2) {
            scores[(((((((((scores_b_h_0_i_0_j_0_h_1_i_1 / 16) % 4) * 49152) + (scores_h_2 * 16384)) + ((scores_b_h_0_i_0_j_0_h_1_i_1 / 64) * 4096)) + ((scores_b_h_0_i_0_j_0_h_1_i_1 % 16) * 256)) + (scores_i_2 * 128)) + (scores_j_1 * 2)) + scores_j_2)] = scores_local[(((scores_h_2 * 4) + (scores_i_2 * 2)) + scores_j_2)];
          }
        }
      }
    }
  }
  if (ansorc_status) *ansorc_ctx->ansorc_status_p = ansorc_status;
}

int tbg_0(const float* restrict query, const float* restrict key, float* restrict scores) {
  volatile int ansorc_status = 0;
  float* restrict query_T = (float*)ansorc_workspace_take(393216u);
  if (query_T == NULL) { ansorc_status = 1; } else {
    float* restrict key_T = (float*)ansorc_workspace_take(393216u);
    if (key_T == NULL) { ansorc_status = 1; } else {
      {
        struct tbg_0_par0_ctx ansorc_c = {query, key, scores, query_T, key_T, &ansorc_status};
        ansorc_parallel_for(tbg_0_par0, &ansorc_c, 1536, -1);
      }
      {
        struct tbg_0_par1_ctx ansorc_c = {query, key, scores, query_T, key_T, &ansorc_status};
        ansorc_parallel_for(tbg_0_par1, &ansorc_c, 48, -1);
      }
      {
        struct tbg_0_par2_ctx ansorc_c = {query, key, scores, query_T, key_T, &ansorc_status};
        ansorc_parallel_for(tbg_0_par2, &ansorc_c, 256, -1);
      }
      ansorc_workspace_give(key_T);
    }
    ansorc_workspace_give(query_T);
  }
  return ansorc_status;
}

int tbg_0_packed(void** args) {
  return tbg_0((const float*)args[0], (const float*)args[1], (float*)args[2]);
}
