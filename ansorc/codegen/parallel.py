"""Parallel loops run on the library's own thread pool (THREADS_PRELUDE), not as OpenMP `parallel for`.

Why: an OpenMP team ends every parallel loop at a barrier, each thread owns a fixed share of the iterations, and
libgomp's threads spin for about 300k pauses while they wait. When another process shares the cores (one busy
process on a 2-core machine is enough), a thread that owns half a loop waits for a core while its partner spins
at the barrier, and whole networks ran many times slower than onnxruntime (docs/perf-notes.md, "Tuning a model
for wall time").

In this pool the iterations are claimed, the calling thread claims too, and a call ends when every iteration
is done, not when every worker has arrived: a worker that has not woken up takes nothing and holds nobody up.
A loop is claimed in one range per thread, OpenMP's static partition: the caller claims first and takes the
first range, so each core meets the same part of the data from call to call and layer to layer (guided claims,
chunk 0, measured no better on a quiet machine). Loops whose iterations differ in work are dealt out one
iteration at a time. Workers spin for ANSORC_SPIN_NS (1 ms; libgomp spins about 300k pauses), then sleep;
idle for a second they exit (a measuring process loads many kernel libraries, each with its own pool).
Without -fopenmp (the scalar target) parallel loops run serially and no thread is made. The team size is
OpenMP's: $OMP_NUM_THREADS, else the cores the process may run on (omp_get_max_threads, read once).

A parallel loop's body becomes a static function of (context, first iteration, end iteration). The context
struct carries every name in scope at the loop (the arguments, buffers, enclosing loop variables, registers)
and where the body reports a status; the body's own status is a local that is copied out when set."""
from __future__ import annotations

from ..ir.lowering.stmt import For
from ..ir.program.dtypes import C_TYPE

CALL = "ansorc_parallel_for"
CHUNK_GUIDED, CHUNK_ONE, CHUNK_RANGES = 0, 1, -1

THREADS_PRELUDE = r"""#ifndef ANSORC_THREADS
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
"""


def outline(r, s: For, ind: int, chunk: int, fence: str | None) -> None:
    """Emits, in renderer r, the call of parallel loop s on the pool; its body goes to r.outlined as a function."""
    fn = f"{r.func.name}_par{len(r.outlined)}"
    names = captured(r)
    saved = r.lines
    r.lines = []
    r.parallel_depth += 1
    r.bounds[s.var] = (0, s.extent - 1)
    r.emit(f"for (int32_t {s.var} = ansorc_lo; {s.var} < ansorc_hi; ++{s.var}) {{", 1)
    r.stmt(s.body, 2)
    r.emit("}", 1)
    if fence:   # streaming stores are weakly ordered: fenced before the claim is counted done
        r.emit(fence + ";", 1)
    del r.bounds[s.var]
    r.parallel_depth -= 1
    body, r.lines = r.lines, saved
    fields = [f"  {ctype} {name};" for ctype, name, _ in names]
    unpack = [f"  {local} = ansorc_ctx->{name};" for _, name, local in names]
    r.outlined.append("\n".join([
        f"struct {fn}_ctx {{", *fields, "  volatile int* ansorc_status_p;", "};",
        f"static void {fn}(void* ansorc_ctx_, int32_t ansorc_lo, int32_t ansorc_hi) {{",
        f"  const struct {fn}_ctx* ansorc_ctx = (const struct {fn}_ctx*)ansorc_ctx_;", *unpack,
        "  volatile int ansorc_status = 0;", *body,
        "  if (ansorc_status) *ansorc_ctx->ansorc_status_p = ansorc_status;", "}", ""]))
    values = ", ".join([*(name for _, name, _ in names), "&ansorc_status"])
    r.emit("{", ind)
    r.emit(f"struct {fn}_ctx ansorc_c = {{{values}}};", ind + 1)
    r.emit(f"{CALL}({fn}, &ansorc_c, {s.extent}, {chunk});", ind + 1)
    r.emit("}", ind)


def captured(r) -> list:
    """(field type, name, local declaration) of every name in scope: the arguments, then r.scope outermost first."""
    out = []
    for k, b in enumerate(r.func.args):
        const = "const " if k < r.func.n_inputs else ""
        out.append((f"{const}{C_TYPE[b.dtype]}*", b.name, f"{const}{C_TYPE[b.dtype]}* restrict {b.name}"))
    for ctype, name, pointer in r.scope:
        local = f"{ctype}* restrict {name}" if pointer else f"const {ctype} {name}"
        out.append((f"{ctype}*" if pointer else ctype, name, local))
    return out


__all__ = ["THREADS_PRELUDE", "CALL", "CHUNK_GUIDED", "CHUNK_ONE", "CHUNK_RANGES", "outline", "captured"]
