/* Embedding a whole model compiled by ansorc in a C application.
 *
 *   python -c "import ansorc.net as n; n.compile('model.onnx').export('out')"      (writes out/<model>.{c,h,weights}
 *                                                                                    and out/lib<model>.so)
 *   cc -Iout -DMODEL_HEADER='"<model>.h"' examples/embed_net/main.c -Lout -l<model> -Wl,-rpath,out \
 *      -fopenmp -lm -o app
 *   ./app out/<model>.weights outdir [in0.bin in1.bin ...]
 *
 * Inputs come from the files given (raw, dense, row-major, the model's dtypes), or, when none are given, are
 * generated deterministically. Output k is written to outdir/out<k>.bin, and one line per output is printed
 * (its size and, for float32, its sum). Any model works: the header's ANSORC_MODEL_* names describe it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include MODEL_HEADER

#define NARGS (ANSORC_MODEL_NUM_INPUTS + ANSORC_MODEL_NUM_OUTPUTS)

static int file_io(const char* path, void* buf, size_t bytes, int write) {
  FILE* f = fopen(path, write ? "wb" : "rb");
  if (!f) return 1;
  size_t n = write ? fwrite(buf, 1, bytes, f) : fread(buf, 1, bytes, f);
  int extra = write ? 0 : fgetc(f) != EOF;
  fclose(f);
  return n != bytes || extra;
}

/* The same values for every run: floats in [-1, 1), integers in [0, 7). */
static void generate(void* buf, size_t bytes, const char* dtype, int seed) {
  size_t i;
  if (strcmp(dtype, "float32") == 0) {
    for (i = 0; i < bytes / 4; ++i) ((float*)buf)[i] = (float)((i * 37 + (size_t)seed * 11) % 17) / 8.5f - 1.0f;
  } else if (strcmp(dtype, "float64") == 0) {
    for (i = 0; i < bytes / 8; ++i) ((double*)buf)[i] = (double)((i * 37 + (size_t)seed * 11) % 17) / 8.5 - 1.0;
  } else if (strcmp(dtype, "int32") == 0) {
    for (i = 0; i < bytes / 4; ++i) ((int32_t*)buf)[i] = (int32_t)((i + (size_t)seed) % 7);
  } else if (strcmp(dtype, "int64") == 0) {
    for (i = 0; i < bytes / 8; ++i) ((int64_t*)buf)[i] = (int64_t)((i + (size_t)seed) % 7);
  } else {
    for (i = 0; i < bytes; ++i) ((unsigned char*)buf)[i] = (unsigned char)((i + (size_t)seed) % 2);
  }
}

/* Allocate every argument and fill the inputs (from `files`, or generated when it is NULL): 0, or 3. */
static int prepare(void** args, const size_t* bytes, const char* const* dtypes, char** files) {
  int k;
  for (k = 0; k < NARGS; ++k) {
    args[k] = malloc(bytes[k] ? bytes[k] : 1);
    if (!args[k]) return 3;
    if (k >= ANSORC_MODEL_NUM_INPUTS) continue;
    if (!files) {
      generate(args[k], bytes[k], dtypes[k], k);
    } else if (file_io(files[k], args[k], bytes[k], 0)) {
      fprintf(stderr, "%s: cannot read %zu bytes\n", files[k], bytes[k]);
      return 3;
    }
  }
  return 0;
}

/* Write output k to outdir/out<k>.bin and print its size and (float32) sum: 0, or 4. */
static int report(void** args, const size_t* bytes, const char* const* dtypes, const char* outdir) {
  char path[4096];
  int k;
  for (k = ANSORC_MODEL_NUM_INPUTS; k < NARGS; ++k) {
    int out = k - ANSORC_MODEL_NUM_INPUTS;
    double sum = 0.0;
    size_t i;
    snprintf(path, sizeof path, "%s/out%d.bin", outdir, out);
    if (file_io(path, args[k], bytes[k], 1)) {
      fprintf(stderr, "%s: cannot write\n", path);
      return 4;
    }
    if (strcmp(dtypes[k], "float32") == 0)
      for (i = 0; i < bytes[k] / 4; ++i) sum += ((const float*)args[k])[i];
    printf("%s output %d: %s, %zu bytes, sum %.6g\n", ANSORC_MODEL_NAME, out, dtypes[k], bytes[k], sum);
  }
  return 0;
}

int main(int argc, char** argv) {
  static const size_t bytes[NARGS] = ANSORC_MODEL_ARG_BYTES;
  static const char* const dtypes[NARGS] = ANSORC_MODEL_ARG_DTYPES;
  void* args[NARGS] = {0};
  int rc = 0, k;
  if (argc != 3 && argc != 3 + ANSORC_MODEL_NUM_INPUTS) {
    fprintf(stderr, "usage: %s WEIGHTS OUTDIR [%d input files]\n", argv[0], ANSORC_MODEL_NUM_INPUTS);
    return 2;
  }
  rc = prepare(args, bytes, dtypes, argc == 3 ? NULL : argv + 3);
  if (rc == 0) {
    rc = ANSORC_MODEL_INIT(argv[1]);
    if (rc != 0) fprintf(stderr, "%s: init failed with status %d\n", argv[1], rc);
    rc = rc ? 10 + rc : 0;
  }
  if (rc == 0) {
    rc = ANSORC_MODEL_RUN_PACKED(args);
    if (rc != 0) fprintf(stderr, "run failed with status %d\n", rc);
    rc = rc ? 20 + rc : report(args, bytes, dtypes, argv[2]);
  }
  ANSORC_MODEL_FREE();  /* safe after a failed init too */
  for (k = 0; k < NARGS; ++k) free(args[k]);
  return rc;
}
