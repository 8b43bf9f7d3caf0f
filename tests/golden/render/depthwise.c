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

int best_0(const float* restrict data, const float* restrict kernel, float* restrict conv) {
  volatile int ansorc_status = 0;
  #pragma omp parallel for schedule(static)
  for (int32_t conv_n_h_0_w_0 = 0; conv_n_h_0_w_0 < 784; ++conv_n_h_0_w_0) {
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
  return ansorc_status;
}

int best_0_packed(void** args) {
  return best_0((const float*)args[0], (const float*)args[1], (float*)args[2]);
}
