/* Embedding an ansorc kernel in a C application.
 *
 *   ansorc compile examples/matmul_relu.te -o out -D N=64 -D M=48 -D K=32
 *   cc -Iout examples/embed/main.c -Lout -lmatmul_relu -Wl,-rpath,out -fopenmp -lm -o app && ./app
 *
 * The sizes come from the header's macros, so the same file works for any -D values. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "matmul_relu.h"

#define N MATMUL_RELU_A_DIM0
#define K MATMUL_RELU_A_DIM1
#define M MATMUL_RELU_B_DIM1

int main(void) {
  float* a = malloc(sizeof(float) * N * K);
  float* b = malloc(sizeof(float) * K * M);
  float* d = malloc(sizeof(float) * N * M);
  if (!a || !b || !d) return 2;
  for (int i = 0; i < N * K; ++i) a[i] = (float)((i * 37) % 17) / 8.0f - 1.0f;
  for (int i = 0; i < K * M; ++i) b[i] = (float)((i * 11) % 13) / 6.0f - 1.0f;
  if (matmul_relu(a, b, d) != 0) { fprintf(stderr, "kernel failed\n"); return 1; }
  double max_err = 0.0;
  for (int i = 0; i < N; ++i) {
    for (int j = 0; j < M; ++j) {
      double acc = 0.0;
      for (int k = 0; k < K; ++k) acc += (double)a[i * K + k] * b[k * M + j];
      double want = acc > 0.0 ? acc : 0.0;
      double err = fabs(want - d[i * M + j]) / (1.0 + fabs(want));
      if (err > max_err) max_err = err;
    }
  }
  printf("matmul_relu %dx%dx%d: max relative error %.3g\n", N, M, K, max_err);
  free(a); free(b); free(d);
  return max_err < 1e-4 ? 0 : 1;
}
