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

#include <immintrin.h>

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

struct best_0_par0_ctx {
  const float* data;
  const float* kernel;
  float* conv;
  volatile int* ansorc_status_p;
};
static void best_0_par0(void* ansorc_ctx_, int32_t ansorc_lo, int32_t ansorc_hi) {
  const struct best_0_par0_ctx* ansorc_ctx = (const struct best_0_par0_ctx*)ansorc_ctx_;
  const float* restrict data = ansorc_ctx->data;
  const float* restrict kernel = ansorc_ctx->kernel;
  float* restrict conv = ansorc_ctx->conv;
  volatile int ansorc_status = 0;
  for (int32_t conv_n_h_0_w_0 = ansorc_lo; conv_n_h_0_w_0 < ansorc_hi; ++conv_n_h_0_w_0) {
    for (int32_t conv_c_0 = 0; conv_c_0 < 1; ++conv_c_0) {
      float conv_local[512] __attribute__((aligned(64)));
      for (int32_t conv_local_n = 0; conv_local_n < 1; ++conv_local_n) {
        for (int32_t conv_local_h_0 = 0; conv_local_h_0 < 1; ++conv_local_h_0) {
          for (int32_t conv_local_w_0 = 0; conv_local_w_0 < 1; ++conv_local_w_0) {
            for (int32_t conv_local_c_0 = 0; conv_local_c_0 < 1; ++conv_local_c_0) {
              for (int32_t conv_local_h_1 = 0; conv_local_h_1 < 1; ++conv_local_h_1) {
                for (int32_t conv_local_w_1 = 0; conv_local_w_1 < 4; ++conv_local_w_1) {
                  {
                    __m512 conv_local_r0;
                    __m512 conv_local_r1;
                    __m512 conv_local_r2;
                    __m512 conv_local_r3;
                    __m512 conv_local_r4;
                    __m512 conv_local_r5;
                    __m512 conv_local_r6;
                    __m512 conv_local_r7;
                    float pad[512] __attribute__((aligned(64)));
                    _mm512_storeu_ps((pad + 0), (((((conv_n_h_0_w_0 / 14) * 2) >= 1) && ((((conv_n_h_0_w_0 % 14) * 8) + (conv_local_w_1 * 2)) >= 1)) ? _mm512_loadu_ps((data + (((((conv_n_h_0_w_0 / 14) * 7168) + ((conv_n_h_0_w_0 % 14) * 256)) + (conv_local_w_1 * 64)) - 3616))) : _mm512_set1_ps(0.0f)));
                    _mm512_storeu_ps((pad + 16), (((((conv_n_h_0_w_0 / 14) * 2) >= 1) && ((((conv_n_h_0_w_0 % 14) * 8) + (conv_local_w_1 * 2)) >= 1)) ? _mm512_loadu_ps((data + (((((conv_n_h_0_w_0 / 14) * 7168) + ((conv_n_h_0_w_0 % 14) * 256)) + (conv_local_w_1 * 64)) - 3600))) : _mm512_set1_ps(0.0f)));
                    _mm512_storeu_ps((pad + 32), ((((conv_n_h_0_w_0 / 14) * 2) >= 1) ? _mm512_loadu_ps((data + (((((conv_n_h_0_w_0 / 14) * 7168) + ((conv_n_h_0_w_0 % 14) * 256)) + (conv_local_w_1 * 64)) - 3584))) : _mm512_set1_ps(0.0f)));
                    _mm512_storeu_ps((pad + 48), ((((conv_n_h_0_w_0 / 14) * 2) >= 1) ? _mm512_loadu_ps((data + (((((conv_n_h_0_w_0 / 14) * 7168) + ((conv_n_h_0_w_0 % 14) * 256)) + (conv_local_w_1 * 64)) - 3568))) : _mm512_set1_ps(0.0f)));
                    _mm512_storeu_ps((pad + 64), ((((conv_n_h_0_w_0 / 14) * 2) >= 1) ? _mm512_loadu_ps((data + (((((conv_n_h_0_w_0 / 14) * 7168) + ((conv_n_h_0_w_0 % 14) * 256)) + (conv_local_w_1 * 64)) - 3552))) : _mm512_set1_ps(0.0f)));
                    _mm512_storeu_ps((pad + 80), ((((conv_n_h_0_w_0 / 14) * 2) >= 1) ? _mm512_loadu_ps((data + (((((conv_n_h_0_w_0 / 14) * 7168) + ((conv_n_h_0_w_0 % 14) * 256)) + (conv_local_w_1 * 64)) - 3536))) : _mm512_set1_ps(0.0f)));
                    _mm512_storeu_ps((pad + 96), (((((conv_n_h_0_w_0 / 14) * 2) >= 1) && (((((conv_n_h_0_w_0 % 14) * 8) + (conv_local_w_1 * 2)) + 3) < 113)) ? _mm512_loadu_ps((data + (((((conv_n_h_0_w_0 / 14) * 7168) + ((conv_n_h_0_w_0 % 14) * 256)) + (conv_local_w_1 * 64)) - 3520))) : _mm512_set1_ps(0.0f)));
                    _mm512_storeu_ps((pad + 112), (((((conv_n_h_0_w_0 / 14) * 2) >= 1) && (((((conv_n_h_0_w_0 % 14) * 8) + (conv_local_w_1 * 2)) + 3) < 113)) ? _mm512_loadu_ps((data + (((((conv_n_h_0_w_0 / 14) * 7168) + ((conv_n_h_0_w_0 % 14) * 256)) + (conv_local_w_1 * 64)) - 3504))) : _mm512_set1_ps(0.0f)));
                    _mm512_storeu_ps((pad + 128), (((((conv_n_h_0_w_0 % 14) * 8) + (conv_local_w_1 * 2)) >= 1) ? _mm512_loadu_ps((data + (((((conv_n_h_0_w_0 / 14) * 7168) + ((conv_n_h_0_w_0 % 14) * 256)) + (conv_local_w_1 * 64)) - 32))) : _mm512_set1_ps(0.0f)));
                    _mm512_storeu_ps((pad + 144), (((((conv_n_h_0_w_0 % 14) * 8) + (conv_local_w_1 * 2)) >= 1) ? _mm512_loadu_ps((data + (((((conv_n_h_0_w_0 / 14) * 7168) + ((conv_n_h_0_w_0 % 14) * 256)) + (conv_local_w_1 * 64)) - 16))) : _mm512_set1_ps(0.0f)));
                    _mm512_storeu_ps((pad + 160), _mm512_loadu_ps((data + ((((conv_n_h_0_w_0 / 14) * 7168) + ((conv_n_h_0_w_0 % 14) * 256)) + (conv_local_w_1 * 64)))));
                    _mm512_storeu_ps((pad + 176), _mm512_loadu_ps((data + (((((conv_n_h_0_w_0 / 14) * 7168) + ((conv_n_h_0_w_0 % 14) * 256)) + (conv_local_w_1 * 64)) + 16))));
                    _mm512_storeu_ps((pad + 192), _mm512_loadu_ps((data + (((((conv_n_h_0_w_0 / 14) * 7168) + ((conv_n_h_0_w_0 % 14) * 256)) + (conv_local_w_1 * 64)) + 32))));
                    _mm512_storeu_ps((pad + 208), _mm512_loadu_ps((data + (((((conv_n_h_0_w_0 / 14) * 7168) + ((conv_n_h_0_w_0 % 14) * 256)) + (conv_local_w_1 * 64)) + 48))));
                    _mm512_storeu_ps((pad + 224), ((((((conv_n_h_0_w_0 % 14) * 8) + (conv_local_w_1 * 2)) + 3) < 113) ? _mm512_loadu_ps((data + (((((conv_n_h_0_w_0 / 14) * 7168) + ((conv_n_h_0_w_0 % 14) * 256)) + (conv_local_w_1 * 64)) + 64))) : _mm512_set1_ps(0.0f)));
                    _mm512_storeu_ps((pad + 240), ((((((conv_n_h_0_w_0 % 14) * 8) + (conv_local_w_1 * 2)) + 3) < 113) ? _mm512_loadu_ps((data + (((((conv_n_h_0_w_0 / 14) * 7168) + ((conv_n_h_0_w_0 % 14) * 256)) + (conv_local_w_1 * 64)) + 80))) : _mm512_set1_ps(0.0f)));
                    _mm512_storeu_ps((pad + 256), (((((conv_n_h_0_w_0 % 14) * 8) + (conv_local_w_1 * 2)) >= 1) ? _mm512_loadu_ps((data + (((((conv_n_h_0_w_0 / 14) * 7168) + ((conv_n_h_0_w_0 % 14) * 256)) + (conv_local_w_1 * 64)) + 3552))) : _mm512_set1_ps(0.0f)));
                    _mm512_storeu_ps((pad + 272), (((((conv_n_h_0_w_0 % 14) * 8) + (conv_local_w_1 * 2)) >= 1) ? _mm512_loadu_ps((data + (((((conv_n_h_0_w_0 / 14) * 7168) + ((conv_n_h_0_w_0 % 14) * 256)) + (conv_local_w_1 * 64)) + 3568))) : _mm512_set1_ps(0.0f)));
                    _mm512_storeu_ps((pad + 288), _mm512_loadu_ps((data + (((((conv_n_h_0_w_0 / 14) * 7168) + ((conv_n_h_0_w_0 % 14) * 256)) + (conv_local_w_1 * 64)) + 3584))));
                    _mm512_storeu_ps((pad + 304), _mm512_loadu_ps((data + (((((conv_n_h_0_w_0 / 14) * 7168) + ((conv_n_h_0_w_0 % 14) * 256)) + (conv_local_w_1 * 64)) + 3600))));
                    _mm512_storeu_ps((pad + 320), _mm512_loadu_ps((data + (((((conv_n_h_0_w_0 / 14) * 7168) + ((conv_n_h_0_w_0 % 14) * 256)) + (conv_local_w_1 * 64)) + 3616))));
                    _mm512_storeu_ps((pad + 336), _mm512_loadu_ps((data + (((((conv_n_h_0_w_0 / 14) * 7168) + ((conv_n_h_0_w_0 % 14) * 256)) + (conv_local_w_1 * 64)) + 3632))));
                    _mm512_storeu_ps((pad + 352), ((((((conv_n_h_0_w_0 % 14) * 8) + (conv_local_w_1 * 2)) + 3) < 113) ? _mm512_loadu_ps((data + (((((conv_n_h_0_w_0 / 14) * 7168) + ((conv_n_h_0_w_0 % 14) * 256)) + (conv_local_w_1 * 64)) + 3648))) : _mm512_set1_ps(0.0f)));
                    _mm512_storeu_ps((pad + 368), ((((((conv_n_h_0_w_0 % 14) * 8) + (conv_local_w_1 * 2)) + 3) < 113) ? _mm512_loadu_ps((data + (((((conv_n_h_0_w_0 / 14) * 7168) + ((conv_n_h_0_w_0 % 14) * 256)) + (conv_local_w_1 * 64)) + 3664))) : _mm512_set1_ps(0.0f)));
                    _mm512_storeu_ps((pad + 384), ((((((conv_n_h_0_w_0 / 14) * 2) + 3) < 113) && ((((conv_n_h_0_w_0 % 14) * 8) + (conv_local_w_1 * 2)) >= 1)) ? _mm512_loadu_ps((data + (((((conv_n_h_0_w_0 / 14) * 7168) + ((conv_n_h_0_w_0 % 14) * 256)) + (conv_local_w_1 * 64)) + 7136))) : _mm512_set1_ps(0.0f)));
                    _mm512_storeu_ps((pad + 400), ((((((conv_n_h_0_w_0 / 14) * 2) + 3) < 113) && ((((conv_n_h_0_w_0 % 14) * 8) + (conv_local_w_1 * 2)) >= 1)) ? _mm512_loadu_ps((data + (((((conv_n_h_0_w_0 / 14) * 7168) + ((conv_n_h_0_w_0 % 14) * 256)) + (conv_local_w_1 * 64)) + 7152))) : _mm512_set1_ps(0.0f)));
                    _mm512_storeu_ps((pad + 416), (((((conv_n_h_0_w_0 / 14) * 2) + 3) < 113) ? _mm512_loadu_ps((data + (((((conv_n_h_0_w_0 / 14) * 7168) + ((conv_n_h_0_w_0 % 14) * 256)) + (conv_local_w_1 * 64)) + 7168))) : _mm512_set1_ps(0.0f)));
                    _mm512_storeu_ps((pad + 432), (((((conv_n_h_0_w_0 / 14) * 2) + 3) < 113) ? _mm512_loadu_ps((data + (((((conv_n_h_0_w_0 / 14) * 7168) + ((conv_n_h_0_w_0 % 14) * 256)) + (conv_local_w_1 * 64)) + 7184))) : _mm512_set1_ps(0.0f)));
                    _mm512_storeu_ps((pad + 448), (((((conv_n_h_0_w_0 / 14) * 2) + 3) < 113) ? _mm512_loadu_ps((data + (((((conv_n_h_0_w_0 / 14) * 7168) + ((conv_n_h_0_w_0 % 14) * 256)) + (conv_local_w_1 * 64)) + 7200))) : _mm512_set1_ps(0.0f)));
                    _mm512_storeu_ps((pad + 464), (((((conv_n_h_0_w_0 / 14) * 2) + 3) < 113) ? _mm512_loadu_ps((data + (((((conv_n_h_0_w_0 / 14) * 7168) + ((conv_n_h_0_w_0 % 14) * 256)) + (conv_local_w_1 * 64)) + 7216))) : _mm512_set1_ps(0.0f)));
                    _mm512_storeu_ps((pad + 480), ((((((conv_n_h_0_w_0 / 14) * 2) + 3) < 113) && (((((conv_n_h_0_w_0 % 14) * 8) + (conv_local_w_1 * 2)) + 3) < 113)) ? _mm512_loadu_ps((data + (((((conv_n_h_0_w_0 / 14) * 7168) + ((conv_n_h_0_w_0 % 14) * 256)) + (conv_local_w_1 * 64)) + 7232))) : _mm512_set1_ps(0.0f)));
                    _mm512_storeu_ps((pad + 496), ((((((conv_n_h_0_w_0 / 14) * 2) + 3) < 113) && (((((conv_n_h_0_w_0 % 14) * 8) + (conv_local_w_1 * 2)) + 3) < 113)) ? _mm512_loadu_ps((data + (((((conv_n_h_0_w_0 / 14) * 7168) + ((conv_n_h_0_w_0 % 14) * 256)) + (conv_local_w_1 * 64)) + 7248))) : _mm512_set1_ps(0.0f)));
                    for (int32_t conv_local_c_1 = 0; conv_local_c_1 < 1; ++conv_local_c_1) {
                      conv_local_r0 = _mm512_set1_ps(0.0f);
                      conv_local_r1 = _mm512_set1_ps(0.0f);
                      conv_local_r2 = _mm512_set1_ps(0.0f);
                      conv_local_r3 = _mm512_set1_ps(0.0f);
                      conv_local_r4 = _mm512_set1_ps(0.0f);
                      conv_local_r5 = _mm512_set1_ps(0.0f);
                      conv_local_r6 = _mm512_set1_ps(0.0f);
                      conv_local_r7 = _mm512_set1_ps(0.0f);
                      for (int32_t conv_local_rh_0 = 0; conv_local_rh_0 < 3; ++conv_local_rh_0) {
                        conv_local_r0 = _mm512_fmadd_ps(_mm512_loadu_ps((pad + (conv_local_rh_0 * 128))), _mm512_loadu_ps((kernel + (conv_local_rh_0 * 96))), conv_local_r0);
                        conv_local_r1 = _mm512_fmadd_ps(_mm512_loadu_ps((pad + ((conv_local_rh_0 * 128) + 16))), _mm512_loadu_ps((kernel + ((conv_local_rh_0 * 96) + 16))), conv_local_r1);
                        conv_local_r0 = _mm512_fmadd_ps(_mm512_loadu_ps((pad + ((conv_local_rh_0 * 128) + 32))), _mm512_loadu_ps((kernel + ((conv_local_rh_0 * 96) + 32))), conv_local_r0);
                        conv_local_r1 = _mm512_fmadd_ps(_mm512_loadu_ps((pad + ((conv_local_rh_0 * 128) + 48))), _mm512_loadu_ps((kernel + ((conv_local_rh_0 * 96) + 48))), conv_local_r1);
                        conv_local_r0 = _mm512_fmadd_ps(_mm512_loadu_ps((pad + ((conv_local_rh_0 * 128) + 64))), _mm512_loadu_ps((kernel + ((conv_local_rh_0 * 96) + 64))), conv_local_r0);
                        conv_local_r1 = _mm512_fmadd_ps(_mm512_loadu_ps((pad + ((conv_local_rh_0 * 128) + 80))), _mm512_loadu_ps((kernel + ((conv_local_rh_0 * 96) + 80))), conv_local_r1);
                        conv_local_r2 = _mm512_fmadd_ps(_mm512_loadu_ps((pad + ((conv_local_rh_0 * 128) + 32))), _mm512_loadu_ps((kernel + (conv_local_rh_0 * 96))), conv_local_r2);
                        conv_local_r3 = _mm512_fmadd_ps(_mm512_loadu_ps((pad + ((conv_local_rh_0 * 128) + 48))), _mm512_loadu_ps((kernel + ((conv_local_rh_0 * 96) + 16))), conv_local_r3);
                        conv_local_r2 = _mm512_fmadd_ps(_mm512_loadu_ps((pad + ((conv_local_rh_0 * 128) + 64))), _mm512_loadu_ps((kernel + ((conv_local_rh_0 * 96) + 32))), conv_local_r2);
                        conv_local_r3 = _mm512_fmadd_ps(_mm512_loadu_ps((pad + ((conv_local_rh_0 * 128) + 80))), _mm512_loadu_ps((kernel + ((conv_local_rh_0 * 96) + 48))), conv_local_r3);
                        conv_local_r2 = _mm512_fmadd_ps(_mm512_loadu_ps((pad + ((conv_local_rh_0 * 128) + 96))), _mm512_loadu_ps((kernel + ((conv_local_rh_0 * 96) + 64))), conv_local_r2);
                        conv_local_r3 = _mm512_fmadd_ps(_mm512_loadu_ps((pad + ((conv_local_rh_0 * 128) + 112))), _mm512_loadu_ps((kernel + ((conv_local_rh_0 * 96) + 80))), conv_local_r3);
                        conv_local_r4 = _mm512_fmadd_ps(_mm512_loadu_ps((pad + ((conv_local_rh_0 * 128) + 128))), _mm512_loadu_ps((kernel + (conv_local_rh_0 * 96))), conv_local_r4);
                        conv_local_r5 = _mm512_fmadd_ps(_mm512_loadu_ps((pad + ((conv_local_rh_0 * 128) + 144))), _mm512_loadu_ps((kernel + ((conv_local_rh_0 * 96) + 16))), conv_local_r5);
                        conv_local_r4 = _mm512_fmadd_ps(_mm512_loadu_ps((pad + ((conv_local_rh_0 * 128) + 160))), _mm512_loadu_ps((kernel + ((conv_local_rh_0 * 96) + 32))), conv_local_r4);
                        conv_local_r5 = _mm512_fmadd_ps(_mm512_loadu_ps((pad + ((conv_local_rh_0 * 128) + 176))), _mm512_loadu_ps((kernel + ((conv_local_rh_0 * 96) + 48))), conv_local_r5);
                        conv_local_r4 = _mm512_fmadd_ps(_mm512_loadu_ps((pad + ((conv_local_rh_0 * 128) + 192))), _mm512_loadu_ps((kernel + ((conv_local_rh_0 * 96) + 64))), conv_local_r4);
                        conv_local_r5 = _mm512_fmadd_ps(_mm512_loadu_ps((pad + ((conv_local_rh_0 * 128) + 208))), _mm512_loadu_ps((kernel + ((conv_local_rh_0 * 96) + 80))), conv_local_r5);
                        conv_local_r6 = _mm512_fmadd_ps(_mm512_loadu_ps((pad + ((conv_local_rh_0 * 128) + 160))), _mm512_loadu_ps((kernel + (conv_local_rh_0 * 96))), conv_local_r6);
                        conv_local_r7 = _mm512_fmadd_ps(_mm512_loadu_ps((pad + ((conv_local_rh_0 * 128) + 176))), _mm512_loadu_ps((kernel + ((conv_local_rh_0 * 96) + 16))), conv_local_r7);
                        conv_local_r6 = _mm512_fmadd_ps(_mm512_loadu_ps((pad + ((conv_local_rh_0 * 128) + 192))), _mm512_loadu_ps((kernel + ((conv_local_rh_0 * 96) + 32))), conv_local_r6);
                        conv_local_r7 = _mm512_fmadd_ps(_mm512_loadu_ps((pad + ((conv_local_rh_0 * 128) + 208))), _mm512_loadu_ps((kernel + ((conv_local_rh_0 * 96) + 48))), conv_local_r7);
                        conv_local_r6 = _mm512_fmadd_ps(_mm512_loadu_ps((pad + ((conv_local_rh_0 * 128) + 224))), _mm512_loadu_ps((kernel + ((conv_local_rh_0 * 96) + 64))), conv_local_r6);
                        conv_local_r7 = _mm512_fmadd_ps(_mm512_loadu_ps((pad + ((conv_local_rh_0 * 128) + 240))), _mm512_loadu_ps((kernel + ((conv_local_rh_0 * 96) + 80))), conv_local_r7);
                      }
                    }
                    _mm512_storeu_ps((conv_local + (conv_local_w_1 * 64)), conv_local_r0);
                    _mm512_storeu_ps((conv_local + ((conv_local_w_1 * 64) + 16)), conv_local_r1);
                    _mm512_storeu_ps((conv_local + ((conv_local_w_1 * 64) + 32)), conv_local_r2);
                    _mm512_storeu_ps((conv_local + ((conv_local_w_1 * 64) + 48)), conv_local_r3);
                    _mm512_storeu_ps((conv_local + ((conv_local_w_1 * 64) + 256)), conv_local_r4);
                    _mm512_storeu_ps((conv_local + ((conv_local_w_1 * 64) + 272)), conv_local_r5);
                    _mm512_storeu_ps((conv_local + ((conv_local_w_1 * 64) + 288)), conv_local_r6);
                    _mm512_storeu_ps((conv_local + ((conv_local_w_1 * 64) + 304)), conv_local_r7);
                  }
                }
              }
            }
          }
        }
      }
      for (int32_t conv_h_1 = 0; conv_h_1 < 2; ++conv_h_1) {
        for (int32_t conv_w_1 = 0; conv_w_1 < 8; ++conv_w_1) {
          _mm512_storeu_ps((conv + (((((conv_n_h_0_w_0 / 14) * 7168) + (conv_h_1 * 3584)) + ((conv_n_h_0_w_0 % 14) * 256)) + (conv_w_1 * 32))), _mm512_loadu_ps((conv_local + ((conv_h_1 * 256) + (conv_w_1 * 32)))));
          _mm512_storeu_ps((conv + ((((((conv_n_h_0_w_0 / 14) * 7168) + (conv_h_1 * 3584)) + ((conv_n_h_0_w_0 % 14) * 256)) + (conv_w_1 * 32)) + 16)), _mm512_loadu_ps((conv_local + (((conv_h_1 * 256) + (conv_w_1 * 32)) + 16))));
        }
      }
    }
  }
  if (ansorc_status) *ansorc_ctx->ansorc_status_p = ansorc_status;
}

int best_0(const float* restrict data, const float* restrict kernel, float* restrict conv) {
  volatile int ansorc_status = 0;
  {
    struct best_0_par0_ctx ansorc_c = {data, kernel, conv, &ansorc_status};
    ansorc_parallel_for(best_0_par0, &ansorc_c, 784, -1);
  }
  return ansorc_status;
}

int best_0_packed(void** args) {
  return best_0((const float*)args[0], (const float*)args[1], (float*)args[2]);
}
