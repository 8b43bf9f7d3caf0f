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

int best_0(const float* restrict data, const float* restrict kernel, float* restrict conv) {
  volatile int ansorc_status = 0;
  float* restrict pad = (float*)ansorc_workspace_take(861184u);
  if (pad == NULL) { ansorc_status = 1; } else {
    #pragma omp parallel for schedule(static)
    for (int32_t pad_i0_i1 = 0; pad_i0_i1 < 58; ++pad_i0_i1) {
      for (int32_t pad_i2 = 0; pad_i2 < 58; ++pad_i2) {
        _mm512_storeu_ps((pad + ((pad_i0_i1 * 3712) + (pad_i2 * 64))), (((((pad_i0_i1 >= 1) && (pad_i0_i1 < 57)) && (pad_i2 >= 1)) && (pad_i2 < 57)) ? _mm512_loadu_ps((data + (((pad_i0_i1 * 3584) + (pad_i2 * 64)) - 3648))) : _mm512_set1_ps(0.0f)));
        _mm512_storeu_ps((pad + (((pad_i0_i1 * 3712) + (pad_i2 * 64)) + 16)), (((((pad_i0_i1 >= 1) && (pad_i0_i1 < 57)) && (pad_i2 >= 1)) && (pad_i2 < 57)) ? _mm512_loadu_ps((data + (((pad_i0_i1 * 3584) + (pad_i2 * 64)) - 3632))) : _mm512_set1_ps(0.0f)));
        _mm512_storeu_ps((pad + (((pad_i0_i1 * 3712) + (pad_i2 * 64)) + 32)), (((((pad_i0_i1 >= 1) && (pad_i0_i1 < 57)) && (pad_i2 >= 1)) && (pad_i2 < 57)) ? _mm512_loadu_ps((data + (((pad_i0_i1 * 3584) + (pad_i2 * 64)) - 3616))) : _mm512_set1_ps(0.0f)));
        _mm512_storeu_ps((pad + (((pad_i0_i1 * 3712) + (pad_i2 * 64)) + 48)), (((((pad_i0_i1 >= 1) && (pad_i0_i1 < 57)) && (pad_i2 >= 1)) && (pad_i2 < 57)) ? _mm512_loadu_ps((data + (((pad_i0_i1 * 3584) + (pad_i2 * 64)) - 3600))) : _mm512_set1_ps(0.0f)));
      }
    }
    #pragma omp parallel for schedule(static)
    for (int32_t conv_n_h_0_w_0_co_0 = 0; conv_n_h_0_w_0_co_0 < 28; ++conv_n_h_0_w_0_co_0) {
      float conv_local[7168] __attribute__((aligned(64)));
      for (int32_t conv_local_n = 0; conv_local_n < 1; ++conv_local_n) {
        for (int32_t conv_local_h_0 = 0; conv_local_h_0 < 1; ++conv_local_h_0) {
          for (int32_t conv_local_w_0 = 0; conv_local_w_0 < 1; ++conv_local_w_0) {
            for (int32_t conv_local_co_0 = 0; conv_local_co_0 < 1; ++conv_local_co_0) {
              for (int32_t conv_local_h_1 = 0; conv_local_h_1 < 1; ++conv_local_h_1) {
                for (int32_t conv_local_w_1 = 0; conv_local_w_1 < 2; ++conv_local_w_1) {
                  for (int32_t conv_local_co_1 = 0; conv_local_co_1 < 2; ++conv_local_co_1) {
                    for (int32_t conv_local_h_2 = 0; conv_local_h_2 < 7; ++conv_local_h_2) {
                      for (int32_t conv_local_w_2 = 0; conv_local_w_2 < 1; ++conv_local_w_2) {
                        for (int32_t conv_local_co_2 = 0; conv_local_co_2 < 2; ++conv_local_co_2) {
                          for (int32_t conv_local_h_3 = 0; conv_local_h_3 < 4; ++conv_local_h_3) {
                            for (int32_t conv_local_w_3 = 0; conv_local_w_3 < 2; ++conv_local_w_3) {
                              _mm512_storeu_ps((conv_local + ((((((conv_local_h_2 * 1024) + (conv_local_h_3 * 256)) + (conv_local_w_1 * 128)) + (conv_local_w_3 * 64)) + (conv_local_co_1 * 32)) + (conv_local_co_2 * 16))), _mm512_set1_ps(0.0f));
                            }
                          }
                        }
                      }
                    }
                    for (int32_t conv_local_rh_0 = 0; conv_local_rh_0 < 1; ++conv_local_rh_0) {
                      for (int32_t conv_local_rw_0 = 0; conv_local_rw_0 < 1; ++conv_local_rw_0) {
                        for (int32_t conv_local_rc_0 = 0; conv_local_rc_0 < 1; ++conv_local_rc_0) {
                          for (int32_t conv_local_h_2 = 0; conv_local_h_2 < 7; ++conv_local_h_2) {
                            for (int32_t conv_local_w_2 = 0; conv_local_w_2 < 1; ++conv_local_w_2) {
                              for (int32_t conv_local_co_2 = 0; conv_local_co_2 < 2; ++conv_local_co_2) {
                                for (int32_t conv_local_rh_1 = 0; conv_local_rh_1 < 3; ++conv_local_rh_1) {
                                  for (int32_t conv_local_rw_1 = 0; conv_local_rw_1 < 3; ++conv_local_rw_1) {
                                    for (int32_t conv_local_rc_1 = 0; conv_local_rc_1 < 64; ++conv_local_rc_1) {
                                      for (int32_t conv_local_h_3 = 0; conv_local_h_3 < 4; ++conv_local_h_3) {
                                        for (int32_t conv_local_w_3 = 0; conv_local_w_3 < 2; ++conv_local_w_3) {
                                          _mm512_storeu_ps((conv_local + ((((((conv_local_h_2 * 1024) + (conv_local_h_3 * 256)) + (conv_local_w_1 * 128)) + (conv_local_w_3 * 64)) + (conv_local_co_1 * 32)) + (conv_local_co_2 * 16))), _mm512_fmadd_ps(_mm512_set1_ps(pad[((((((((((conv_n_h_0_w_0_co_0 / 14) * 103936) + (conv_local_h_2 * 14848)) + (conv_local_h_3 * 3712)) + (conv_local_rh_1 * 3712)) + ((conv_n_h_0_w_0_co_0 % 14) * 256)) + (conv_local_w_1 * 128)) + (conv_local_w_3 * 64)) + (conv_local_rw_1 * 64)) + conv_local_rc_1)]), _mm512_loadu_ps((kernel + (((((conv_local_rh_1 * 12288) + (conv_local_rw_1 * 4096)) + (conv_local_rc_1 * 64)) + (conv_local_co_1 * 32)) + (conv_local_co_2 * 16)))), _mm512_loadu_ps((conv_local + ((((((conv_local_h_2 * 1024) + (conv_local_h_3 * 256)) + (conv_local_w_1 * 128)) + (conv_local_w_3 * 64)) + (conv_local_co_1 * 32)) + (conv_local_co_2 * 16))))));
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
                    }
                  }
                }
              }
            }
          }
        }
      }
      for (int32_t conv_h_1 = 0; conv_h_1 < 28; ++conv_h_1) {
        for (int32_t conv_w_1 = 0; conv_w_1 < 4; ++conv_w_1) {
          _mm512_storeu_ps((conv + (((((conv_n_h_0_w_0_co_0 / 14) * 100352) + (conv_h_1 * 3584)) + ((conv_n_h_0_w_0_co_0 % 14) * 256)) + (conv_w_1 * 64))), _mm512_loadu_ps((conv_local + ((conv_h_1 * 256) + (conv_w_1 * 64)))));
          _mm512_storeu_ps((conv + ((((((conv_n_h_0_w_0_co_0 / 14) * 100352) + (conv_h_1 * 3584)) + ((conv_n_h_0_w_0_co_0 % 14) * 256)) + (conv_w_1 * 64)) + 16)), _mm512_loadu_ps((conv_local + (((conv_h_1 * 256) + (conv_w_1 * 64)) + 16))));
          _mm512_storeu_ps((conv + ((((((conv_n_h_0_w_0_co_0 / 14) * 100352) + (conv_h_1 * 3584)) + ((conv_n_h_0_w_0_co_0 % 14) * 256)) + (conv_w_1 * 64)) + 32)), _mm512_loadu_ps((conv_local + (((conv_h_1 * 256) + (conv_w_1 * 64)) + 32))));
          _mm512_storeu_ps((conv + ((((((conv_n_h_0_w_0_co_0 / 14) * 100352) + (conv_h_1 * 3584)) + ((conv_n_h_0_w_0_co_0 % 14) * 256)) + (conv_w_1 * 64)) + 48)), _mm512_loadu_ps((conv_local + (((conv_h_1 * 256) + (conv_w_1 * 64)) + 48))));
        }
      }
    }
    ansorc_workspace_give(pad);
  }
  return ansorc_status;
}

int best_0_packed(void** args) {
  return best_0((const float*)args[0], (const float*)args[1], (float*)args[2]);
}
