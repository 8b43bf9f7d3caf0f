/* Calling an ansorc CUDA library from C. The library takes device pointers and a stream; this program owns
 * the device memory.
 *
 *   ansorc compile examples/matmul_relu.te --target cuda -o out -D N=256 -D M=192 -D K=128
 *   gcc -Iout -I$CUDA_HOME/include examples/embed_cuda/main.c -Lout -lmatmul_relu \
 *       -L$CUDA_HOME/lib64 -lcudart -Wl,-rpath,out -lm -o app && ./app
 *
 * The sizes come from the header's macros, so the same file works for any -D values. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>

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
  float *da, *db, *dd;
  if (cudaMalloc((void**)&da, sizeof(float) * N * K) != cudaSuccess ||
      cudaMalloc((void**)&db, sizeof(float) * K * M) != cudaSuccess ||
      cudaMalloc((void**)&dd, sizeof(float) * N * M) != cudaSuccess) {
    fprintf(stderr, "cudaMalloc failed (no GPU?)\n");
    return 1;
  }
  cudaMemcpy(da, a, sizeof(float) * N * K, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b, sizeof(float) * K * M, cudaMemcpyHostToDevice);
  int rc = matmul_relu(da, db, dd, NULL);
  if (rc != 0 || cudaDeviceSynchronize() != cudaSuccess) { fprintf(stderr, "kernel failed (%d)\n", rc); return 1; }
  cudaMemcpy(d, dd, sizeof(float) * N * M, cudaMemcpyDeviceToHost);
  double max_err = 0.0;
  for (int i = 0; i < N; ++i) {
    for (int j = 0; j < M; ++j) {
      double acc = 0.0;
      for (int k = 0; k < K; ++k) acc += (double)a[i * K + k] * b[k * M + j];
      double want = acc > 0.0 ? acc : 0.0;
      double err = fabs(d[i * M + j] - want) / (1.0 + fabs(want));
      if (err > max_err) max_err = err;
    }
  }
  printf("matmul_relu %dx%dx%d on the GPU: max relative error %.2e\n", N, M, K, max_err);
  cudaFree(da); cudaFree(db); cudaFree(dd);
  free(a); free(b); free(d);
  return max_err < 1e-4 ? 0 : 1;
}
