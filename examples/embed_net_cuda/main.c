/* Embedding a whole model compiled by ansorc for CUDA in a C application, on the application's own stream.
 *
 *   python -c "import ansorc.net as n; n.compile('model.onnx', target='cuda').export('out')"
 *        (writes out/<model>.{cu,h,weights} and out/lib<model>.so; the CUDA runtime is linked in statically)
 *   cc -Iout -I$CUDA_HOME/include -DMODEL_HEADER='"<model>.h"' examples/embed_net_cuda/main.c \
 *      -Lout -l<model> -Wl,-rpath,out -L$CUDA_HOME/lib64 -lcudart -o app
 *   ./app out/<model>.weights
 *
 * Inputs are generated deterministically (floats in [-1, 1), integers in [0, 7)), copied to the GPU, the model
 * runs twice on a stream this program made (the second run replays the library's CUDA graph), and one line per
 * output is printed: its size and, for float32, its sum. Any model works: ANSORC_MODEL_* describe it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include MODEL_HEADER

#define NARGS (ANSORC_MODEL_NUM_INPUTS + ANSORC_MODEL_NUM_OUTPUTS)

static void generate(void* buf, size_t bytes, const char* dtype, int seed) {
  size_t i;
  if (strcmp(dtype, "float32") == 0) {
    for (i = 0; i < bytes / 4; ++i) ((float*)buf)[i] = (float)((i * 37 + (size_t)seed * 11) % 17) / 8.5f - 1.0f;
  } else if (strcmp(dtype, "int64") == 0) {
    for (i = 0; i < bytes / 8; ++i) ((int64_t*)buf)[i] = (int64_t)((i + (size_t)seed) % 7);
  } else if (strcmp(dtype, "int32") == 0) {
    for (i = 0; i < bytes / 4; ++i) ((int32_t*)buf)[i] = (int32_t)((i + (size_t)seed) % 7);
  } else {
    memset(buf, 0, bytes);
  }
}

int main(int argc, char** argv) {
  static const size_t bytes[NARGS] = ANSORC_MODEL_ARG_BYTES;
  static const char* const dtypes[NARGS] = ANSORC_MODEL_ARG_DTYPES;
  void* host[NARGS] = {0};
  void* dev[NARGS] = {0};
  cudaStream_t stream = NULL;
  int rc = 0, k, run;
  if (argc != 2) {
    fprintf(stderr, "usage: %s WEIGHTS\n", argv[0]);
    return 2;
  }
  for (k = 0; k < NARGS && rc == 0; ++k) {
    host[k] = malloc(bytes[k] ? bytes[k] : 1);
    if (!host[k] || cudaMalloc(&dev[k], bytes[k] ? bytes[k] : 1) != cudaSuccess) rc = 3;
    if (rc == 0 && k < ANSORC_MODEL_NUM_INPUTS) {
      generate(host[k], bytes[k], dtypes[k], k);
      if (cudaMemcpy(dev[k], host[k], bytes[k], cudaMemcpyHostToDevice) != cudaSuccess) rc = 3;
    }
  }
  if (rc == 0 && cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) rc = 3;
  if (rc == 0 && (rc = ANSORC_MODEL_INIT(argv[1])) != 0) {
    fprintf(stderr, "%s: init failed with status %d (%s)\n", argv[1], rc, ANSORC_MODEL_ERROR());
    rc += 10;
  }
  for (run = 0; run < 2 && rc == 0; ++run) {
    if ((rc = ANSORC_MODEL_RUN_PACKED(dev, (void*)stream)) != 0) {
      fprintf(stderr, "run failed with status %d (%s)\n", rc, ANSORC_MODEL_ERROR());
      rc += 20;
    }
  }
  if (rc == 0 && cudaStreamSynchronize(stream) != cudaSuccess) rc = 4;
  for (k = ANSORC_MODEL_NUM_INPUTS; k < NARGS && rc == 0; ++k) {
    double sum = 0.0;
    size_t i;
    if (cudaMemcpy(host[k], dev[k], bytes[k], cudaMemcpyDeviceToHost) != cudaSuccess) { rc = 4; break; }
    if (strcmp(dtypes[k], "float32") == 0)
      for (i = 0; i < bytes[k] / 4; ++i) sum += ((const float*)host[k])[i];
    printf("%s output %d: %s, %zu bytes, sum %.6g\n", ANSORC_MODEL_NAME, k - ANSORC_MODEL_NUM_INPUTS, dtypes[k],
           bytes[k], sum);
  }
  ANSORC_MODEL_FREE();
  for (k = 0; k < NARGS; ++k) { free(host[k]); cudaFree(dev[k]); }
  if (stream) cudaStreamDestroy(stream);
  return rc;
}
