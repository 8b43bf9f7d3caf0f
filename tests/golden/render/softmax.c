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
static inline float ansorc_reduce_add_m512(__m512 v) { __m256 h0 = _mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))); __m128 h1 = _mm_add_ps(_mm256_castps256_ps128(h0), _mm256_extractf128_ps(h0, 1)); __m128 h2 = _mm_add_ps(h1, _mm_movehl_ps(h1, h1)); __m128 h3 = _mm_add_ps(h2, _mm_movehdup_ps(h2)); return _mm_cvtss_f32(h3); }
static inline float ansorc_reduce_max_m512(__m512 v) { __m256 h0 = _mm256_max_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))); __m128 h1 = _mm_max_ps(_mm256_castps256_ps128(h0), _mm256_extractf128_ps(h0, 1)); __m128 h2 = _mm_max_ps(h1, _mm_movehl_ps(h1, h1)); __m128 h3 = _mm_max_ps(h2, _mm_movehdup_ps(h2)); return _mm_cvtss_f32(h3); }
static inline float ansorc_reduce_add_m256(__m256 v) { __m128 h0 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1)); __m128 h1 = _mm_add_ps(h0, _mm_movehl_ps(h0, h0)); __m128 h2 = _mm_add_ps(h1, _mm_movehdup_ps(h1)); return _mm_cvtss_f32(h2); }
static inline __m512 ansorc_exp_m512(__m512 x) { x = _mm512_max_ps(_mm512_set1_ps(-87.5f), _mm512_min_ps(_mm512_set1_ps(88.8f), x)); __m512 t = _mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504089f), _mm512_set1_ps(12583038.0f)); __m512 fn = _mm512_sub_ps(t, _mm512_set1_ps(12583038.0f)); __m512 r = _mm512_fnmadd_ps(fn, _mm512_set1_ps(0.693359375f), x); r = _mm512_fnmadd_ps(fn, _mm512_set1_ps(-2.12194440e-4f), r); return _mm512_mul_ps(_mm512_fmadd_ps(_mm512_fmadd_ps(_mm512_fmadd_ps(_mm512_fmadd_ps(_mm512_fmadd_ps(_mm512_fmadd_ps(_mm512_set1_ps(0.00276288f), r, _mm512_set1_ps(0.016737614f)), r, _mm512_set1_ps(0.083336792f)), r, _mm512_set1_ps(0.3333304f)), r, _mm512_set1_ps(0.99999988f)), r, _mm512_set1_ps(2.0f)), r, _mm512_set1_ps(2.0f)), _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_castps_si512(t), 23))); }

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

struct sfm_0_par0_ctx {
  const float* A;
  float* softmax;
  float* row_max_rf;
  float* row_max;
  float* u_exp;
  float* row_sum_rf;
  volatile int* ansorc_status_p;
};
static void sfm_0_par0(void* ansorc_ctx_, int32_t ansorc_lo, int32_t ansorc_hi) {
  const struct sfm_0_par0_ctx* ansorc_ctx = (const struct sfm_0_par0_ctx*)ansorc_ctx_;
  const float* restrict A = ansorc_ctx->A;
  float* restrict softmax = ansorc_ctx->softmax;
  float* restrict row_max_rf = ansorc_ctx->row_max_rf;
  float* restrict row_max = ansorc_ctx->row_max;
  float* restrict u_exp = ansorc_ctx->u_exp;
  float* restrict row_sum_rf = ansorc_ctx->row_sum_rf;
  volatile int ansorc_status = 0;
  for (int32_t row_max_rf_i = ansorc_lo; row_max_rf_i < ansorc_hi; ++row_max_rf_i) {
    for (int32_t row_max_rf_k_0_v = 0; row_max_rf_k_0_v < 128; ++row_max_rf_k_0_v) {
      row_max_rf[((row_max_rf_i * 128) + row_max_rf_k_0_v)] = (-INFINITY);
      for (int32_t row_max_rf_k_1 = 0; row_max_rf_k_1 < 2; ++row_max_rf_k_1) {
        row_max_rf[((row_max_rf_i * 128) + row_max_rf_k_0_v)] = ansorc_max_f32(row_max_rf[((row_max_rf_i * 128) + row_max_rf_k_0_v)], A[(((row_max_rf_i * 256) + (row_max_rf_k_0_v * 2)) + row_max_rf_k_1)]);
      }
    }
  }
  if (ansorc_status) *ansorc_ctx->ansorc_status_p = ansorc_status;
}

struct sfm_0_par1_ctx {
  const float* A;
  float* softmax;
  float* row_max_rf;
  float* row_max;
  float* u_exp;
  float* row_sum_rf;
  volatile int* ansorc_status_p;
};
static void sfm_0_par1(void* ansorc_ctx_, int32_t ansorc_lo, int32_t ansorc_hi) {
  const struct sfm_0_par1_ctx* ansorc_ctx = (const struct sfm_0_par1_ctx*)ansorc_ctx_;
  const float* restrict A = ansorc_ctx->A;
  float* restrict softmax = ansorc_ctx->softmax;
  float* restrict row_max_rf = ansorc_ctx->row_max_rf;
  float* restrict row_max = ansorc_ctx->row_max;
  float* restrict u_exp = ansorc_ctx->u_exp;
  float* restrict row_sum_rf = ansorc_ctx->row_sum_rf;
  volatile int ansorc_status = 0;
  for (int32_t row_max_i = ansorc_lo; row_max_i < ansorc_hi; ++row_max_i) {
    row_max[row_max_i] = (-INFINITY);
    {
      __m512 row_max_acc = _mm512_set1_ps((-INFINITY));
      __m512 row_max_acc1 = _mm512_set1_ps((-INFINITY));
      __m512 row_max_acc2 = _mm512_set1_ps((-INFINITY));
      __m512 row_max_acc3 = _mm512_set1_ps((-INFINITY));
      row_max_acc = _mm512_max_ps(row_max_acc, _mm512_loadu_ps((row_max_rf + (row_max_i * 128))));
      row_max_acc1 = _mm512_max_ps(row_max_acc1, _mm512_loadu_ps((row_max_rf + ((row_max_i * 128) + 16))));
      row_max_acc2 = _mm512_max_ps(row_max_acc2, _mm512_loadu_ps((row_max_rf + ((row_max_i * 128) + 32))));
      row_max_acc3 = _mm512_max_ps(row_max_acc3, _mm512_loadu_ps((row_max_rf + ((row_max_i * 128) + 48))));
      row_max_acc = _mm512_max_ps(row_max_acc, _mm512_loadu_ps((row_max_rf + ((row_max_i * 128) + 64))));
      row_max_acc1 = _mm512_max_ps(row_max_acc1, _mm512_loadu_ps((row_max_rf + ((row_max_i * 128) + 80))));
      row_max_acc2 = _mm512_max_ps(row_max_acc2, _mm512_loadu_ps((row_max_rf + ((row_max_i * 128) + 96))));
      row_max_acc3 = _mm512_max_ps(row_max_acc3, _mm512_loadu_ps((row_max_rf + ((row_max_i * 128) + 112))));
      row_max_acc = _mm512_max_ps(row_max_acc, row_max_acc1);
      row_max_acc = _mm512_max_ps(row_max_acc, row_max_acc2);
      row_max_acc = _mm512_max_ps(row_max_acc, row_max_acc3);
      row_max[row_max_i] = ansorc_max_f32(row_max[row_max_i], ansorc_reduce_max_m512(row_max_acc));
    }
  }
  if (ansorc_status) *ansorc_ctx->ansorc_status_p = ansorc_status;
}

struct sfm_0_par2_ctx {
  const float* A;
  float* softmax;
  float* row_max_rf;
  float* row_max;
  float* u_exp;
  float* row_sum_rf;
  volatile int* ansorc_status_p;
};
static void sfm_0_par2(void* ansorc_ctx_, int32_t ansorc_lo, int32_t ansorc_hi) {
  const struct sfm_0_par2_ctx* ansorc_ctx = (const struct sfm_0_par2_ctx*)ansorc_ctx_;
  const float* restrict A = ansorc_ctx->A;
  float* restrict softmax = ansorc_ctx->softmax;
  float* restrict row_max_rf = ansorc_ctx->row_max_rf;
  float* restrict row_max = ansorc_ctx->row_max;
  float* restrict u_exp = ansorc_ctx->u_exp;
  float* restrict row_sum_rf = ansorc_ctx->row_sum_rf;
  volatile int ansorc_status = 0;
  for (int32_t exp_i = ansorc_lo; exp_i < ansorc_hi; ++exp_i) {
    for (int32_t exp_j_c = 0; exp_j_c < 16; ++exp_j_c) {
      _mm512_storeu_ps((u_exp + ((exp_i * 256) + (exp_j_c * 16))), ansorc_exp_m512(_mm512_sub_ps(_mm512_loadu_ps((A + ((exp_i * 256) + (exp_j_c * 16)))), _mm512_set1_ps(row_max[exp_i]))));
    }
  }
  if (ansorc_status) *ansorc_ctx->ansorc_status_p = ansorc_status;
}

struct sfm_0_par3_ctx {
  const float* A;
  float* softmax;
  float* row_max_rf;
  float* row_max;
  float* u_exp;
  float* row_sum_rf;
  volatile int* ansorc_status_p;
};
static void sfm_0_par3(void* ansorc_ctx_, int32_t ansorc_lo, int32_t ansorc_hi) {
  const struct sfm_0_par3_ctx* ansorc_ctx = (const struct sfm_0_par3_ctx*)ansorc_ctx_;
  const float* restrict A = ansorc_ctx->A;
  float* restrict softmax = ansorc_ctx->softmax;
  float* restrict row_max_rf = ansorc_ctx->row_max_rf;
  float* restrict row_max = ansorc_ctx->row_max;
  float* restrict u_exp = ansorc_ctx->u_exp;
  float* restrict row_sum_rf = ansorc_ctx->row_sum_rf;
  volatile int ansorc_status = 0;
  for (int32_t row_sum_rf_i = ansorc_lo; row_sum_rf_i < ansorc_hi; ++row_sum_rf_i) {
    row_sum_rf[(row_sum_rf_i * 32)] = 0.0f;
    row_sum_rf[(row_sum_rf_i * 32)] = (row_sum_rf[(row_sum_rf_i * 32)] + ansorc_reduce_add_m256(_mm256_loadu_ps((u_exp + (row_sum_rf_i * 256)))));
    row_sum_rf[((row_sum_rf_i * 32) + 1)] = 0.0f;
    row_sum_rf[((row_sum_rf_i * 32) + 1)] = (row_sum_rf[((row_sum_rf_i * 32) + 1)] + ansorc_reduce_add_m256(_mm256_loadu_ps((u_exp + ((row_sum_rf_i * 256) + 8)))));
    row_sum_rf[((row_sum_rf_i * 32) + 2)] = 0.0f;
    row_sum_rf[((row_sum_rf_i * 32) + 2)] = (row_sum_rf[((row_sum_rf_i * 32) + 2)] + ansorc_reduce_add_m256(_mm256_loadu_ps((u_exp + ((row_sum_rf_i * 256) + 16)))));
    row_sum_rf[((row_sum_rf_i * 32) + 3)] = 0.0f;
    row_sum_rf[((row_sum_rf_i * 32) + 3)] = (row_sum_rf[((row_sum_rf_i * 32) + 3)] + ansorc_reduce_add_m256(_mm256_loadu_ps((u_exp + ((row_sum_rf_i * 256) + 24)))));
    row_sum_rf[((row_sum_rf_i * 32) + 4)] = 0.0f;
    row_sum_rf[((row_sum_rf_i * 32) + 4)] = (row_sum_rf[((row_sum_rf_i * 32) + 4)] + ansorc_reduce_add_m256(_mm256_loadu_ps((u_exp + ((row_sum_rf_i * 256) + 32)))));
    row_sum_rf[((row_sum_rf_i * 32) + 5)] = 0.0f;
    row_sum_rf[((row_sum_rf_i * 32) + 5)] = (row_sum_rf[((row_sum_rf_i * 32) + 5)] + ansorc_reduce_add_m256(_mm256_loadu_ps((u_exp + ((row_sum_rf_i * 256) + 40)))));
    row_sum_rf[((row_sum_rf_i * 32) + 6)] = 0.0f;
    row_sum_rf[((row_sum_rf_i * 32) + 6)] = (row_sum_rf[((row_sum_rf_i * 32) + 6)] + ansorc_reduce_add_m256(_mm256_loadu_ps((u_exp + ((row_sum_rf_i * 256) + 48)))));
    row_sum_rf[((row_sum_rf_i * 32) + 7)] = 0.0f;
    row_sum_rf[((row_sum_rf_i * 32) + 7)] = (row_sum_rf[((row_sum_rf_i * 32) + 7)] + ansorc_reduce_add_m256(_mm256_loadu_ps((u_exp + ((row_sum_rf_i * 256) + 56)))));
    row_sum_rf[((row_sum_rf_i * 32) + 8)] = 0.0f;
    row_sum_rf[((row_sum_rf_i * 32) + 8)] = (row_sum_rf[((row_sum_rf_i * 32) + 8)] + ansorc_reduce_add_m256(_mm256_loadu_ps((u_exp + ((row_sum_rf_i * 256) + 64)))));
    row_sum_rf[((row_sum_rf_i * 32) + 9)] = 0.0f;
    row_sum_rf[((row_sum_rf_i * 32) + 9)] = (row_sum_rf[((row_sum_rf_i * 32) + 9)] + ansorc_reduce_add_m256(_mm256_loadu_ps((u_exp + ((row_sum_rf_i * 256) + 72)))));
    row_sum_rf[((row_sum_rf_i * 32) + 10)] = 0.0f;
    row_sum_rf[((row_sum_rf_i * 32) + 10)] = (row_sum_rf[((row_sum_rf_i * 32) + 10)] + ansorc_reduce_add_m256(_mm256_loadu_ps((u_exp + ((row_sum_rf_i * 256) + 80)))));
    row_sum_rf[((row_sum_rf_i * 32) + 11)] = 0.0f;
    row_sum_rf[((row_sum_rf_i * 32) + 11)] = (row_sum_rf[((row_sum_rf_i * 32) + 11)] + ansorc_reduce_add_m256(_mm256_loadu_ps((u_exp + ((row_sum_rf_i * 256) + 88)))));
    row_sum_rf[((row_sum_rf_i * 32) + 12)] = 0.0f;
    row_sum_rf[((row_sum_rf_i * 32) + 12)] = (row_sum_rf[((row_sum_rf_i * 32) + 12)] + ansorc_reduce_add_m256(_mm256_loadu_ps((u_exp + ((row_sum_rf_i * 256) + 96)))));
    row_sum_rf[((row_sum_rf_i * 32) + 13)] = 0.0f;
    row_sum_rf[((row_sum_rf_i * 32) + 13)] = (row_sum_rf[((row_sum_rf_i * 32) + 13)] + ansorc_reduce_add_m256(_mm256_loadu_ps((u_exp + ((row_sum_rf_i * 256) + 104)))));
    row_sum_rf[((row_sum_rf_i * 32) + 14)] = 0.0f;
    row_sum_rf[((row_sum_rf_i * 32) + 14)] = (row_sum_rf[((row_sum_rf_i * 32) + 14)] + ansorc_reduce_add_m256(_mm256_loadu_ps((u_exp + ((row_sum_rf_i * 256) + 112)))));
    row_sum_rf[((row_sum_rf_i * 32) + 15)] = 0.0f;
    row_sum_rf[((row_sum_rf_i * 32) + 15)] = (row_sum_rf[((row_sum_rf_i * 32) + 15)] + ansorc_reduce_add_m256(_mm256_loadu_ps((u_exp + ((row_sum_rf_i * 256) + 120)))));
    row_sum_rf[((row_sum_rf_i * 32) + 16)] = 0.0f;
    row_sum_rf[((row_sum_rf_i * 32) + 16)] = (row_sum_rf[((row_sum_rf_i * 32) + 16)] + ansorc_reduce_add_m256(_mm256_loadu_ps((u_exp + ((row_sum_rf_i * 256) + 128)))));
    row_sum_rf[((row_sum_rf_i * 32) + 17)] = 0.0f;
    row_sum_rf[((row_sum_rf_i * 32) + 17)] = (row_sum_rf[((row_sum_rf_i * 32) + 17)] + ansorc_reduce_add_m256(_mm256_loadu_ps((u_exp + ((row_sum_rf_i * 256) + 136)))));
    row_sum_rf[((row_sum_rf_i * 32) + 18)] = 0.0f;
    row_sum_rf[((row_sum_rf_i * 32) + 18)] = (row_sum_rf[((row_sum_rf_i * 32) + 18)] + ansorc_reduce_add_m256(_mm256_loadu_ps((u_exp + ((row_sum_rf_i * 256) + 144)))));
    row_sum_rf[((row_sum_rf_i * 32) + 19)] = 0.0f;
    row_sum_rf[((row_sum_rf_i * 32) + 19)] = (row_sum_rf[((row_sum_rf_i * 32) + 19)] + ansorc_reduce_add_m256(_mm256_loadu_ps((u_exp + ((row_sum_rf_i * 256) + 152)))));
    row_sum_rf[((row_sum_rf_i * 32) + 20)] = 0.0f;
    row_sum_rf[((row_sum_rf_i * 32) + 20)] = (row_sum_rf[((row_sum_rf_i * 32) + 20)] + ansorc_reduce_add_m256(_mm256_loadu_ps((u_exp + ((row_sum_rf_i * 256) + 160)))));
    row_sum_rf[((row_sum_rf_i * 32) + 21)] = 0.0f;
    row_sum_rf[((row_sum_rf_i * 32) + 21)] = (row_sum_rf[((row_sum_rf_i * 32) + 21)] + ansorc_reduce_add_m256(_mm256_loadu_ps((u_exp + ((row_sum_rf_i * 256) + 168)))));
    row_sum_rf[((row_sum_rf_i * 32) + 22)] = 0.0f;
    row_sum_rf[((row_sum_rf_i * 32) + 22)] = (row_sum_rf[((row_sum_rf_i * 32) + 22)] + ansorc_reduce_add_m256(_mm256_loadu_ps((u_exp + ((row_sum_rf_i * 256) + 176)))));
    row_sum_rf[((row_sum_rf_i * 32) + 23)] = 0.0f;
    row_sum_rf[((row_sum_rf_i * 32) + 23)] = (row_sum_rf[((row_sum_rf_i * 32) + 23)] + ansorc_reduce_add_m256(_mm256_loadu_ps((u_exp + ((row_sum_rf_i * 256) + 184)))));
    row_sum_rf[((row_sum_rf_i * 32) + 24)] = 0.0f;
    row_sum_rf[((row_sum_rf_i * 32) + 24)] = (row_sum_rf[((row_sum_rf_i * 32) + 24)] + ansorc_reduce_add_m256(_mm256_loadu_ps((u_exp + ((row_sum_rf_i * 256) + 192)))));
    row_sum_rf[((row_sum_rf_i * 32) + 25)] = 0.0f;
    row_sum_rf[((row_sum_rf_i * 32) + 25)] = (row_sum_rf[((row_sum_rf_i * 32) + 25)] + ansorc_reduce_add_m256(_mm256_loadu_ps((u_exp + ((row_sum_rf_i * 256) + 200)))));
    row_sum_rf[((row_sum_rf_i * 32) + 26)] = 0.0f;
    row_sum_rf[((row_sum_rf_i * 32) + 26)] = (row_sum_rf[((row_sum_rf_i * 32) + 26)] + ansorc_reduce_add_m256(_mm256_loadu_ps((u_exp + ((row_sum_rf_i * 256) + 208)))));
    row_sum_rf[((row_sum_rf_i * 32) + 27)] = 0.0f;
    row_sum_rf[((row_sum_rf_i * 32) + 27)] = (row_sum_rf[((row_sum_rf_i * 32) + 27)] + ansorc_reduce_add_m256(_mm256_loadu_ps((u_exp + ((row_sum_rf_i * 256) + 216)))));
    row_sum_rf[((row_sum_rf_i * 32) + 28)] = 0.0f;
    row_sum_rf[((row_sum_rf_i * 32) + 28)] = (row_sum_rf[((row_sum_rf_i * 32) + 28)] + ansorc_reduce_add_m256(_mm256_loadu_ps((u_exp + ((row_sum_rf_i * 256) + 224)))));
    row_sum_rf[((row_sum_rf_i * 32) + 29)] = 0.0f;
    row_sum_rf[((row_sum_rf_i * 32) + 29)] = (row_sum_rf[((row_sum_rf_i * 32) + 29)] + ansorc_reduce_add_m256(_mm256_loadu_ps((u_exp + ((row_sum_rf_i * 256) + 232)))));
    row_sum_rf[((row_sum_rf_i * 32) + 30)] = 0.0f;
    row_sum_rf[((row_sum_rf_i * 32) + 30)] = (row_sum_rf[((row_sum_rf_i * 32) + 30)] + ansorc_reduce_add_m256(_mm256_loadu_ps((u_exp + ((row_sum_rf_i * 256) + 240)))));
    row_sum_rf[((row_sum_rf_i * 32) + 31)] = 0.0f;
    row_sum_rf[((row_sum_rf_i * 32) + 31)] = (row_sum_rf[((row_sum_rf_i * 32) + 31)] + ansorc_reduce_add_m256(_mm256_loadu_ps((u_exp + ((row_sum_rf_i * 256) + 248)))));
  }
  if (ansorc_status) *ansorc_ctx->ansorc_status_p = ansorc_status;
}

struct sfm_0_par4_ctx {
  const float* A;
  float* softmax;
  float* row_max_rf;
  float* row_max;
  float* u_exp;
  float* row_sum_rf;
  volatile int* ansorc_status_p;
};
static void sfm_0_par4(void* ansorc_ctx_, int32_t ansorc_lo, int32_t ansorc_hi) {
  const struct sfm_0_par4_ctx* ansorc_ctx = (const struct sfm_0_par4_ctx*)ansorc_ctx_;
  const float* restrict A = ansorc_ctx->A;
  float* restrict softmax = ansorc_ctx->softmax;
  float* restrict row_max_rf = ansorc_ctx->row_max_rf;
  float* restrict row_max = ansorc_ctx->row_max;
  float* restrict u_exp = ansorc_ctx->u_exp;
  float* restrict row_sum_rf = ansorc_ctx->row_sum_rf;
  volatile int ansorc_status = 0;
  for (int32_t softmax_i = ansorc_lo; softmax_i < ansorc_hi; ++softmax_i) {
    for (int32_t softmax_j = 0; softmax_j < 256; ++softmax_j) {
      float row_sum[1] __attribute__((aligned(64)));
      for (int32_t row_sum_i = 0; row_sum_i < 1; ++row_sum_i) {
        row_sum[0] = 0.0f;
        {
          __m512 row_sum_acc = _mm512_set1_ps(0.0f);
          __m512 row_sum_acc1 = _mm512_set1_ps(0.0f);
          row_sum_acc = _mm512_add_ps(row_sum_acc, _mm512_loadu_ps((row_sum_rf + (softmax_i * 32))));
          row_sum_acc1 = _mm512_add_ps(row_sum_acc1, _mm512_loadu_ps((row_sum_rf + ((softmax_i * 32) + 16))));
          row_sum_acc = _mm512_add_ps(row_sum_acc, row_sum_acc1);
          row_sum[0] = (row_sum[0] + ansorc_reduce_add_m512(row_sum_acc));
        }
      }
      softmax[((softmax_i * 256) + softmax_j)] = (u_exp[((softmax_i * 256) + softmax_j)] / row_sum[0]);
    }
  }
  if (ansorc_status) *ansorc_ctx->ansorc_status_p = ansorc_status;
}

int sfm_0(const float* restrict A, float* restrict softmax) {
  volatile int ansorc_status = 0;
  float* restrict row_max_rf = (float*)ansorc_workspace_take(131072u);
  if (row_max_rf == NULL) { ansorc_status = 1; } else {
    float* restrict row_max = (float*)ansorc_workspace_take(1024u);
    if (row_max == NULL) { ansorc_status = 1; } else {
      float* restrict u_exp = (float*)ansorc_workspace_take(262144u);
      if (u_exp == NULL) { ansorc_status = 1; } else {
        float* restrict row_sum_rf = (float*)ansorc_workspace_take(32768u);
        if (row_sum_rf == NULL) { ansorc_status = 1; } else {
          {
            struct sfm_0_par0_ctx ansorc_c = {A, softmax, row_max_rf, row_max, u_exp, row_sum_rf, &ansorc_status};
            ansorc_parallel_for(sfm_0_par0, &ansorc_c, 256, -1);
          }
          {
            struct sfm_0_par1_ctx ansorc_c = {A, softmax, row_max_rf, row_max, u_exp, row_sum_rf, &ansorc_status};
            ansorc_parallel_for(sfm_0_par1, &ansorc_c, 256, -1);
          }
          {
            struct sfm_0_par2_ctx ansorc_c = {A, softmax, row_max_rf, row_max, u_exp, row_sum_rf, &ansorc_status};
            ansorc_parallel_for(sfm_0_par2, &ansorc_c, 256, -1);
          }
          {
            struct sfm_0_par3_ctx ansorc_c = {A, softmax, row_max_rf, row_max, u_exp, row_sum_rf, &ansorc_status};
            ansorc_parallel_for(sfm_0_par3, &ansorc_c, 256, -1);
          }
          {
            struct sfm_0_par4_ctx ansorc_c = {A, softmax, row_max_rf, row_max, u_exp, row_sum_rf, &ansorc_status};
            ansorc_parallel_for(sfm_0_par4, &ansorc_c, 256, -1);
          }
          ansorc_workspace_give(row_sum_rf);
        }
        ansorc_workspace_give(u_exp);
      }
      ansorc_workspace_give(row_max);
    }
    ansorc_workspace_give(row_max_rf);
  }
  return ansorc_status;
}

int sfm_0_packed(void** args) {
  return sfm_0((const float*)args[0], (float*)args[1]);
}
