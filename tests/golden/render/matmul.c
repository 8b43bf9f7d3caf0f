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

int best_0(const float* restrict A, const float* restrict B, float* restrict C) {
  volatile int ansorc_status = 0;
  #pragma omp parallel for schedule(static)
  for (int32_t C_b_i_0 = 0; C_b_i_0 < 32; ++C_b_i_0) {
    for (int32_t C_j_0 = 0; C_j_0 < 32; ++C_j_0) {
      float C_local[1024] __attribute__((aligned(64)));
      for (int32_t C_local_b = 0; C_local_b < 1; ++C_local_b) {
        for (int32_t C_local_i_0 = 0; C_local_i_0 < 1; ++C_local_i_0) {
          for (int32_t C_local_j_0 = 0; C_local_j_0 < 1; ++C_local_j_0) {
            for (int32_t C_local_i_1 = 0; C_local_i_1 < 4; ++C_local_i_1) {
              {
                __m512 C_local_r0;
                __m512 C_local_r1;
                __m512 C_local_r2;
                __m512 C_local_r3;
                __m512 C_local_r4;
                __m512 C_local_r5;
                __m512 C_local_r6;
                __m512 C_local_r7;
                __m512 C_local_r8;
                __m512 C_local_r9;
                __m512 C_local_r10;
                __m512 C_local_r11;
                __m512 C_local_r12;
                __m512 C_local_r13;
                __m512 C_local_r14;
                __m512 C_local_r15;
                for (int32_t C_local_j_1 = 0; C_local_j_1 < 1; ++C_local_j_1) {
                  C_local_r0 = _mm512_set1_ps(0.0f);
                  C_local_r1 = _mm512_set1_ps(0.0f);
                  C_local_r2 = _mm512_set1_ps(0.0f);
                  C_local_r3 = _mm512_set1_ps(0.0f);
                  C_local_r4 = _mm512_set1_ps(0.0f);
                  C_local_r5 = _mm512_set1_ps(0.0f);
                  C_local_r6 = _mm512_set1_ps(0.0f);
                  C_local_r7 = _mm512_set1_ps(0.0f);
                  C_local_r8 = _mm512_set1_ps(0.0f);
                  C_local_r9 = _mm512_set1_ps(0.0f);
                  C_local_r10 = _mm512_set1_ps(0.0f);
                  C_local_r11 = _mm512_set1_ps(0.0f);
                  C_local_r12 = _mm512_set1_ps(0.0f);
                  C_local_r13 = _mm512_set1_ps(0.0f);
                  C_local_r14 = _mm512_set1_ps(0.0f);
                  C_local_r15 = _mm512_set1_ps(0.0f);
                  for (int32_t C_local_k_0 = 0; C_local_k_0 < 512; ++C_local_k_0) {
                    C_local_r0 = _mm512_fmadd_ps(_mm512_set1_ps(A[(((C_b_i_0 * 32768) + (C_local_i_1 * 8192)) + (C_local_k_0 * 2))]), _mm512_loadu_ps((B + ((C_local_k_0 * 2048) + (C_j_0 * 32)))), C_local_r0);
                    C_local_r1 = _mm512_fmadd_ps(_mm512_set1_ps(A[(((C_b_i_0 * 32768) + (C_local_i_1 * 8192)) + (C_local_k_0 * 2))]), _mm512_loadu_ps((B + (((C_local_k_0 * 2048) + (C_j_0 * 32)) + 16))), C_local_r1);
                    C_local_r2 = _mm512_fmadd_ps(_mm512_set1_ps(A[((((C_b_i_0 * 32768) + (C_local_i_1 * 8192)) + (C_local_k_0 * 2)) + 1024)]), _mm512_loadu_ps((B + ((C_local_k_0 * 2048) + (C_j_0 * 32)))), C_local_r2);
                    C_local_r3 = _mm512_fmadd_ps(_mm512_set1_ps(A[((((C_b_i_0 * 32768) + (C_local_i_1 * 8192)) + (C_local_k_0 * 2)) + 1024)]), _mm512_loadu_ps((B + (((C_local_k_0 * 2048) + (C_j_0 * 32)) + 16))), C_local_r3);
                    C_local_r4 = _mm512_fmadd_ps(_mm512_set1_ps(A[((((C_b_i_0 * 32768) + (C_local_i_1 * 8192)) + (C_local_k_0 * 2)) + 2048)]), _mm512_loadu_ps((B + ((C_local_k_0 * 2048) + (C_j_0 * 32)))), C_local_r4);
                    C_local_r5 = _mm512_fmadd_ps(_mm512_set1_ps(A[((((C_b_i_0 * 32768) + (C_local_i_1 * 8192)) + (C_local_k_0 * 2)) + 2048)]), _mm512_loadu_ps((B + (((C_local_k_0 * 2048) + (C_j_0 * 32)) + 16))), C_local_r5);
                    C_local_r6 = _mm512_fmadd_ps(_mm512_set1_ps(A[((((C_b_i_0 * 32768) + (C_local_i_1 * 8192)) + (C_local_k_0 * 2)) + 3072)]), _mm512_loadu_ps((B + ((C_local_k_0 * 2048) + (C_j_0 * 32)))), C_local_r6);
                    C_local_r7 = _mm512_fmadd_ps(_mm512_set1_ps(A[((((C_b_i_0 * 32768) + (C_local_i_1 * 8192)) + (C_local_k_0 * 2)) + 3072)]), _mm512_loadu_ps((B + (((C_local_k_0 * 2048) + (C_j_0 * 32)) + 16))), C_local_r7);
                    C_local_r0 = _mm512_fmadd_ps(_mm512_set1_ps(A[((((C_b_i_0 * 32768) + (C_local_i_1 * 8192)) + (C_local_k_0 * 2)) + 1)]), _mm512_loadu_ps((B + (((C_local_k_0 * 2048) + (C_j_0 * 32)) + 1024))), C_local_r0);
                    C_local_r1 = _mm512_fmadd_ps(_mm512_set1_ps(A[((((C_b_i_0 * 32768) + (C_local_i_1 * 8192)) + (C_local_k_0 * 2)) + 1)]), _mm512_loadu_ps((B + (((C_local_k_0 * 2048) + (C_j_0 * 32)) + 1040))), C_local_r1);
                    C_local_r2 = _mm512_fmadd_ps(_mm512_set1_ps(A[((((C_b_i_0 * 32768) + (C_local_i_1 * 8192)) + (C_local_k_0 * 2)) + 1025)]), _mm512_loadu_ps((B + (((C_local_k_0 * 2048) + (C_j_0 * 32)) + 1024))), C_local_r2);
                    C_local_r3 = _mm512_fmadd_ps(_mm512_set1_ps(A[((((C_b_i_0 * 32768) + (C_local_i_1 * 8192)) + (C_local_k_0 * 2)) + 1025)]), _mm512_loadu_ps((B + (((C_local_k_0 * 2048) + (C_j_0 * 32)) + 1040))), C_local_r3);
                    C_local_r4 = _mm512_fmadd_ps(_mm512_set1_ps(A[((((C_b_i_0 * 32768) + (C_local_i_1 * 8192)) + (C_local_k_0 * 2)) + 2049)]), _mm512_loadu_ps((B + (((C_local_k_0 * 2048) + (C_j_0 * 32)) + 1024))), C_local_r4);
                    C_local_r5 = _mm512_fmadd_ps(_mm512_set1_ps(A[((((C_b_i_0 * 32768) + (C_local_i_1 * 8192)) + (C_local_k_0 * 2)) + 2049)]), _mm512_loadu_ps((B + (((C_local_k_0 * 2048) + (C_j_0 * 32)) + 1040))), C_local_r5);
                    C_local_r6 = _mm512_fmadd_ps(_mm512_set1_ps(A[((((C_b_i_0 * 32768) + (C_local_i_1 * 8192)) + (C_local_k_0 * 2)) + 3073)]), _mm512_loadu_ps((B + (((C_local_k_0 * 2048) + (C_j_0 * 32)) + 1024))), C_local_r6);
                    C_local_r7 = _mm512_fmadd_ps(_mm512_set1_ps(A[((((C_b_i_0 * 32768) + (C_local_i_1 * 8192)) + (C_local_k_0 * 2)) + 3073)]), _mm512_loadu_ps((B + (((C_local_k_0 * 2048) + (C_j_0 * 32)) + 1040))), C_local_r7);
                    C_local_r8 = _mm512_fmadd_ps(_mm512_set1_ps(A[((((C_b_i_0 * 32768) + (C_local_i_1 * 8192)) + (C_local_k_0 * 2)) + 4096)]), _mm512_loadu_ps((B + ((C_local_k_0 * 2048) + (C_j_0 * 32)))), C_local_r8);
                    C_local_r9 = _mm512_fmadd_ps(_mm512_set1_ps(A[((((C_b_i_0 * 32768) + (C_local_i_1 * 8192)) + (C_local_k_0 * 2)) + 4096)]), _mm512_loadu_ps((B + (((C_local_k_0 * 2048) + (C_j_0 * 32)) + 16))), C_local_r9);
                    C_local_r10 = _mm512_fmadd_ps(_mm512_set1_ps(A[((((C_b_i_0 * 32768) + (C_local_i_1 * 8192)) + (C_local_k_0 * 2)) + 5120)]), _mm512_loadu_ps((B + ((C_local_k_0 * 2048) + (C_j_0 * 32)))), C_local_r10);
                    C_local_r11 = _mm512_fmadd_ps(_mm512_set1_ps(A[((((C_b_i_0 * 32768) + (C_local_i_1 * 8192)) + (C_local_k_0 * 2)) + 5120)]), _mm512_loadu_ps((B + (((C_local_k_0 * 2048) + (C_j_0 * 32)) + 16))), C_local_r11);
                    C_local_r12 = _mm512_fmadd_ps(_mm512_set1_ps(A[((((C_b_i_0 * 32768) + (C_local_i_1 * 8192)) + (C_local_k_0 * 2)) + 6144)]), _mm512_loadu_ps((B + ((C_local_k_0 * 2048) + (C_j_0 * 32)))), C_local_r12);
                    C_local_r13 = _mm512_fmadd_ps(_mm512_set1_ps(A[((((C_b_i_0 * 32768) + (C_local_i_1 * 8192)) + (C_local_k_0 * 2)) + 6144)]), _mm512_loadu_ps((B + (((C_local_k_0 * 2048) + (C_j_0 * 32)) + 16))), C_local_r13);
                    C_local_r14 = _mm512_fmadd_ps(_mm512_set1_ps(A[((((C_b_i_0 * 32768) + (C_local_i_1 * 8192)) + (C_local_k_0 * 2)) + 7168)]), _mm512_loadu_ps((B + ((C_local_k_0 * 2048) + (C_j_0 * 32)))), C_local_r14);
                    C_local_r15 = _mm512_fmadd_ps(_mm512_set1_ps(A[((((C_b_i_0 * 32768) + (C_local_i_1 * 8192)) + (C_local_k_0 * 2)) + 7168)]), _mm512_loadu_ps((B + (((C_local_k_0 * 2048) + (C_j_0 * 32)) + 16))), C_local_r15);
                    C_local_r8 = _mm512_fmadd_ps(_mm512_set1_ps(A[((((C_b_i_0 * 32768) + (C_local_i_1 * 8192)) + (C_local_k_0 * 2)) + 4097)]), _mm512_loadu_ps((B + (((C_local_k_0 * 2048) + (C_j_0 * 32)) + 1024))), C_local_r8);
                    C_local_r9 = _mm512_fmadd_ps(_mm512_set1_ps(A[((((C_b_i_0 * 32768) + (C_local_i_1 * 8192)) + (C_local_k_0 * 2)) + 4097)]), _mm512_loadu_ps((B + (((C_local_k_0 * 2048) + (C_j_0 * 32)) + 1040))), C_local_r9);
                    C_local_r10 = _mm512_fmadd_ps(_mm512_set1_ps(A[((((C_b_i_0 * 32768) + (C_local_i_1 * 8192)) + (C_local_k_0 * 2)) + 5121)]), _mm512_loadu_ps((B + (((C_local_k_0 * 2048) + (C_j_0 * 32)) + 1024))), C_local_r10);
                    C_local_r11 = _mm512_fmadd_ps(_mm512_set1_ps(A[((((C_b_i_0 * 32768) + (C_local_i_1 * 8192)) + (C_local_k_0 * 2)) + 5121)]), _mm512_loadu_ps((B + (((C_local_k_0 * 2048) + (C_j_0 * 32)) + 1040))), C_local_r11);
                    C_local_r12 = _mm512_fmadd_ps(_mm512_set1_ps(A[((((C_b_i_0 * 32768) + (C_local_i_1 * 8192)) + (C_local_k_0 * 2)) + 6145)]), _mm512_loadu_ps((B + (((C_local_k_0 * 2048) + (C_j_0 * 32)) + 1024))), C_local_r12);
                    C_local_r13 = _mm512_fmadd_ps(_mm512_set1_ps(A[((((C_b_i_0 * 32768) + (C_local_i_1 * 8192)) + (C_local_k_0 * 2)) + 6145)]), _mm512_loadu_ps((B + (((C_local_k_0 * 2048) + (C_j_0 * 32)) + 1040))), C_local_r13);
                    C_local_r14 = _mm512_fmadd_ps(_mm512_set1_ps(A[((((C_b_i_0 * 32768) + (C_local_i_1 * 8192)) + (C_local_k_0 * 2)) + 7169)]), _mm512_loadu_ps((B + (((C_local_k_0 * 2048) + (C_j_0 * 32)) + 1024))), C_local_r14);
                    C_local_r15 = _mm512_fmadd_ps(_mm512_set1_ps(A[((((C_b_i_0 * 32768) + (C_local_i_1 * 8192)) + (C_local_k_0 * 2)) + 7169)]), _mm512_loadu_ps((B + (((C_local_k_0 * 2048) + (C_j_0 * 32)) + 1040))), C_local_r15);
                  }
                }
                _mm512_storeu_ps((C_local + (C_local_i_1 * 256)), C_local_r0);
                _mm512_storeu_ps((C_local + ((C_local_i_1 * 256) + 16)), C_local_r1);
                _mm512_storeu_ps((C_local + ((C_local_i_1 * 256) + 32)), C_local_r2);
                _mm512_storeu_ps((C_local + ((C_local_i_1 * 256) + 48)), C_local_r3);
                _mm512_storeu_ps((C_local + ((C_local_i_1 * 256) + 64)), C_local_r4);
                _mm512_storeu_ps((C_local + ((C_local_i_1 * 256) + 80)), C_local_r5);
                _mm512_storeu_ps((C_local + ((C_local_i_1 * 256) + 96)), C_local_r6);
                _mm512_storeu_ps((C_local + ((C_local_i_1 * 256) + 112)), C_local_r7);
                _mm512_storeu_ps((C_local + ((C_local_i_1 * 256) + 128)), C_local_r8);
                _mm512_storeu_ps((C_local + ((C_local_i_1 * 256) + 144)), C_local_r9);
                _mm512_storeu_ps((C_local + ((C_local_i_1 * 256) + 160)), C_local_r10);
                _mm512_storeu_ps((C_local + ((C_local_i_1 * 256) + 176)), C_local_r11);
                _mm512_storeu_ps((C_local + ((C_local_i_1 * 256) + 192)), C_local_r12);
                _mm512_storeu_ps((C_local + ((C_local_i_1 * 256) + 208)), C_local_r13);
                _mm512_storeu_ps((C_local + ((C_local_i_1 * 256) + 224)), C_local_r14);
                _mm512_storeu_ps((C_local + ((C_local_i_1 * 256) + 240)), C_local_r15);
              }
            }
          }
        }
      }
      for (int32_t C_i_1 = 0; C_i_1 < 32; ++C_i_1) {
        _mm512_storeu_ps((C + (((C_b_i_0 * 32768) + (C_i_1 * 1024)) + (C_j_0 * 32))), _mm512_loadu_ps((C_local + (C_i_1 * 32))));
        _mm512_storeu_ps((C + ((((C_b_i_0 * 32768) + (C_i_1 * 1024)) + (C_j_0 * 32)) + 16)), _mm512_loadu_ps((C_local + ((C_i_1 * 32) + 16))));
      }
    }
  }
  return ansorc_status;
}

int best_0_packed(void** args) {
  return best_0((const float*)args[0], (const float*)args[1], (float*)args[2]);
}
