"""The C text of a model library besides its kernels: the weights loader (`<model>_init`), `<model>_free`, the
status codes, and `<model>.h`. library.py assembles the translation unit; this file holds only text.

The loader reads the whole weights file (format in weights.py) into one 64-byte aligned block and checks it
against what the library was built for (count, names, dtypes, byte sizes, offsets in bounds and aligned, file
size, the model digest, CRC-32 of everything after the header) before any kernel may read it. Fields are decoded
byte by byte (little-endian file, any host); the weights themselves are in the host's byte order, as numpy wrote
them (x86-64 and AArch64 alike).
"""
from __future__ import annotations

import json
from string import Template

from ..ir.program.dtypes import ITEMSIZE

# status codes of <model>_init and <model>_run; model.py turns them into messages
STATUS = {"OK": 0, "ERR_OPEN": 1, "ERR_FORMAT": 2, "ERR_SIZE": 3, "ERR_MISMATCH": 4, "ERR_CHECKSUM": 5,
          "ERR_NOMEM": 6, "ERR_NOT_INIT": 7, "ERR_VERSION": 8, "ERR_CUDA": 9, "ERR_KERNEL": 1000, "KERNEL_STRIDE": 256}
MESSAGES = {1: "cannot open the weights file", 2: "not an ansorc weights file (or another format version)",
            3: "the weights file is truncated or has trailing bytes", 4: "the weights file is for another model",
            5: "the weights file is corrupt (checksum mismatch)", 6: "out of memory",
            7: "the model is not initialized",
            8: "the weights file is of another format version (written by another ansorc); rebuild the model",
            9: "a CUDA call failed"}

LOADER = Template(r"""
#include <stdio.h>
#include <string.h>
#define ANSORC_NET_NW $nw
static const char* const ansorc_net_wname[$nw1] = {$names};
static const uint32_t ansorc_net_wdtype[$nw1] = {$dtypes};
static const uint64_t ansorc_net_wbytes[$nw1] = {$sizes};
/* the model's digest (weights.py): a file of a model with the same weight names, dtypes and sizes is foreign */
static const unsigned char ansorc_net_digest[32] = {$digest};
static const unsigned char* ansorc_net_w[$nw1];
static unsigned char* ansorc_net_blob = NULL;
static unsigned char* ansorc_net_arena = NULL;
static int ansorc_net_ready = 0;

static uint32_t ansorc_net_rd32(const unsigned char* p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static uint64_t ansorc_net_rd64(const unsigned char* p) {
  return (uint64_t)ansorc_net_rd32(p) | ((uint64_t)ansorc_net_rd32(p + 4) << 32);
}
/* zlib's CRC-32, eight bytes a step (slicing-by-8): a 100 MB weights file in well under a second */
static uint32_t ansorc_net_crc32(const unsigned char* p, uint64_t n) {
  uint32_t t[8][256];
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i)
    for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFFu];
  uint32_t crc = 0xFFFFFFFFu;
  for (; n >= 8; n -= 8, p += 8) {
    uint32_t a = crc ^ ansorc_net_rd32(p), b = ansorc_net_rd32(p + 4);
    crc = t[7][a & 0xFFu] ^ t[6][(a >> 8) & 0xFFu] ^ t[5][(a >> 16) & 0xFFu] ^ t[4][a >> 24] ^
          t[3][b & 0xFFu] ^ t[2][(b >> 8) & 0xFFu] ^ t[1][(b >> 16) & 0xFFu] ^ t[0][b >> 24];
  }
  for (; n > 0; --n, ++p) crc = t[0][(crc ^ *p) & 0xFFu] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}
/* The file's table against this library's: names, dtypes, sizes; offsets aligned and inside the file. */
static int ansorc_net_check(const unsigned char* b, uint64_t size) {
  if (ansorc_net_rd32(b + 12) != (uint32_t)ANSORC_NET_NW) return 4;
  uint64_t data_start = ansorc_net_rd64(b + 16), at = 72;
  if (data_start > size || data_start < at) return 2;
  if (memcmp(b + 40, ansorc_net_digest, 32) != 0) return 4;
  for (int i = 0; i < ANSORC_NET_NW; ++i) {
    if (data_start - at < 4) return 2;
    uint64_t n = ansorc_net_rd32(b + at);
    if (data_start - at - 4 < n + 20) return 2;
    if (n != strlen(ansorc_net_wname[i]) || memcmp(b + at + 4, ansorc_net_wname[i], n) != 0) return 4;
    at += 4 + n;
    uint64_t nbytes = ansorc_net_rd64(b + at + 4), off = ansorc_net_rd64(b + at + 12);
    if (ansorc_net_rd32(b + at) != ansorc_net_wdtype[i] || nbytes != ansorc_net_wbytes[i]) return 4;
    if (off % 64u != 0 || off < data_start || off > size || size - off < nbytes) return 2;
    ansorc_net_w[i] = b + off;
    at += 20;
  }
  if (ansorc_net_crc32(b + 40, size - 40) != ansorc_net_rd32(b + 32)) return 5;
  return 0;
}
static int ansorc_net_load(const char* path) {
  unsigned char head[40];
  FILE* f = path ? fopen(path, "rb") : NULL;
  if (!f) return 1;
  if (fread(head, 1, 40, f) != 40) { fclose(f); return 3; }
  if (memcmp(head, "ANSORCWT", 8) != 0) { fclose(f); return 2; }
  if (ansorc_net_rd32(head + 8) != 2u) { fclose(f); return 8; }
  uint64_t size = ansorc_net_rd64(head + 24);
  if (size != (uint64_t)$file_size) { fclose(f); return 4; }
  ansorc_net_blob = (unsigned char*)ansorc_alloc((size_t)size);
  if (!ansorc_net_blob) { fclose(f); return 6; }
  memcpy(ansorc_net_blob, head, 40);
  size_t got = fread(ansorc_net_blob + 40, 1, (size_t)(size - 40), f);
  int trailing = fgetc(f) != EOF;
  fclose(f);
  if (got != (size_t)(size - 40) || trailing) return 3;
  return ansorc_net_check(ansorc_net_blob, size);
}

${linkage}void ${m}_free(void) {
$forget
  free(ansorc_net_blob);
  free(ansorc_net_arena);
  ansorc_net_blob = NULL;
  ansorc_net_arena = NULL;
  ansorc_net_ready = 0;
}

${linkage}int ${m}_init(const char* weights_path) {
  ${m}_free();
  int rc = ansorc_net_load(weights_path);
  if (rc == 0) {
    ansorc_net_arena = (unsigned char*)ansorc_alloc((size_t)$arena);
    if (!ansorc_net_arena) rc = 6;
  }
  if (rc != 0) { ${m}_free(); return rc; }
  ansorc_net_ready = 1;
  return 0;
}
""")


# Per-call wall time, off unless enabled (one predictable branch per kernel call when off). clock_gettime is
# POSIX: codegen's PRELUDE defines _POSIX_C_SOURCE before any header, as -std=c99 hides it otherwise.
PROFILER = Template(r"""
#include <time.h>
static int ansorc_net_profiling = 0;
static double ansorc_net_prof[$n];
static double ansorc_net_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
/* on != 0: from now on <model>_run adds each kernel call's seconds to its counter; the counters restart at 0 */
void ${m}_profile_enable(int on) {
  ansorc_net_profiling = on != 0;
  memset(ansorc_net_prof, 0, sizeof ansorc_net_prof);
}
/* copies up to n counters (seconds summed over runs, in the order of "calls") into out; returns how many exist */
int ${m}_profile_read(double* out, int n) {
  int total = (int)(sizeof ansorc_net_prof / sizeof ansorc_net_prof[0]);
  for (int k = 0; k < n && k < total; ++k) out[k] = ansorc_net_prof[k];
  return total;
}
""")


def c_string(text: str) -> str:
    """A C string literal holding `text` (UTF-8): anything but plain printable ASCII as a 3-digit octal escape
    (quotes, backslashes, and '?' and '*' too: no trigraph, no comment end where the string is quoted)."""
    out = []
    for b in str(text).encode():
        ch = chr(b)
        out.append(ch if (ch.isalnum() or ch in " _.-:/,;()[]{}<>=+#@!^~|&") and b < 128 else f"\\{b:03o}")
    return '"' + "".join(out) + '"'


def loader(m: str, entries, file_size: int, arena_bytes: int, dtype_code: dict, digest: bytes, forget=(),
           linkage: str = "") -> str:
    """The weights loader, `<model>_init` and `<model>_free`; `forget`: lines of `_free` marking the kernels' kept
    copies of the weights stale; linkage "static " keeps both inside the library (a GPU library's own init
    reads the file through them, then uploads it)."""
    n = len(entries)
    return LOADER.substitute(
        m=m, linkage=linkage, nw=n, nw1=max(n, 1), file_size=f"{file_size}u", arena=f"{arena_bytes}u",
        digest=", ".join(f"0x{b:02x}" for b in digest),
        forget="\n".join(forget) or "  /* no kernel keeps a copy of the weights */",
        names=", ".join(c_string(e.name) for e in entries) or "0",
        dtypes=", ".join(f"{dtype_code[e.dtype]}u" for e in entries) or "0",
        sizes=", ".join(f"{e.nbytes}u" for e in entries) or "0")


def _comment_json(data) -> str:
    # "\/" is JSON for "/": a name holding "*/" cannot end the comment
    return json.dumps(data, separators=(",", ":")).replace("/", "\\/")


def header(m: str, run_proto: str, signature: dict, build_line: str) -> str:
    guard = f"ANSORC_NET_{m.upper()}_H"
    sig = signature
    lines = [f"/* {m}.h: a whole model compiled by ansorc. Do not edit.", " *",
             f" * Build the library:  {build_line}",
             f" * Link an application: cc app.c -L. -l{m} -fopenmp -lm", " *",
             f" *   int {m}_init(const char* weights_path);  load {m}.weights and allocate the arena",
             f" *   int {m}_run(inputs..., outputs...);      run the model (after init; one call at a time)",
             f" *   void {m}_free(void);                     release what init took (init may be called again)",
             " * init and run return 0 on success, else one of the status codes below. Arrays are dense, row-major,",
             " * any alignment, outputs not overlapping inputs; in the model's input and output order:"]
    tail = [" * A run status >= ERR_KERNEL: kernel call k = (status - ERR_KERNEL) / KERNEL_STRIDE (order of",
            " * \"calls\" below) returned (status - ERR_KERNEL) % KERNEL_STRIDE: 1 a workspace allocation failed,",
            " * >= 2 an index read from the data (a Gather index, ...) was out of range."]
    for kind in ("inputs", "outputs"):
        for k, t in enumerate(sig[kind]):
            lines.append(f" *   {kind[:-1]} {k}: {t['dtype']}{list(t['shape'])}  {_comment_json(t['name'])}")
    lines += [f" * Arena: {sig['arena_bytes']} bytes for {sig['intermediate_bytes']} bytes of intermediates;"
              f" {sig['groups']} kernel calls.", *tail, " *",
              f" * ansorc-network: {_comment_json(sig)}", " */", "",
              f"#ifndef {guard}", f"#define {guard}", "", "#include <stdint.h>", "",
              "#ifdef __cplusplus", 'extern "C" {', "#endif", ""]
    lines += [f"#define {m.upper()}_{k} {v}" for k, v in STATUS.items()]
    lines.append(f"#define {m.upper()}_NUM_INPUTS {len(sig['inputs'])}")
    lines.append(f"#define {m.upper()}_NUM_OUTPUTS {len(sig['outputs'])}")
    for kind, tag in (("inputs", "IN"), ("outputs", "OUT")):
        for k, t in enumerate(sig[kind]):
            size = 1
            for d in t["te_shape"]:
                size *= d
            lines.append(f"#define {m.upper()}_{tag}{k}_SIZE {size}")
    lines += generic_names(m, sig)
    lines += ["", f"int {m}_init(const char* weights_path);", run_proto,
              f"int {m}_run_packed(void** args);  /* args[i]: input i, then the outputs */", f"void {m}_free(void);",
              f"void {m}_profile_enable(int on);  /* time each kernel call of run (0: off, the default) */",
              f"int {m}_profile_read(double* seconds, int n);  /* per call, summed since enable; returns the count */",
              f"extern const char {m}_signature[];  /* the ansorc-network JSON above */", "",
              "#ifdef __cplusplus", "}", "#endif", "", f"#endif /* {guard} */", ""]
    return "\n".join(lines)


def generic_names(m: str, sig: dict) -> list:
    """Model-independent aliases, so that one driver source (examples/embed_net) embeds any model's header."""
    args = [*sig["inputs"], *sig["outputs"]]
    nbytes = []
    for t in args:
        n = ITEMSIZE[t["dtype"]]
        for d in t["te_shape"]:
            n *= d
        nbytes.append(f"{n}u")
    return ["", "#ifndef ANSORC_MODEL_INIT  /* the first model header included defines them */",
            f"#define ANSORC_MODEL_NAME \"{m}\"", f"#define ANSORC_MODEL_INIT {m}_init",
            f"#define ANSORC_MODEL_RUN_PACKED {m}_run_packed", f"#define ANSORC_MODEL_FREE {m}_free",
            f"#define ANSORC_MODEL_NUM_INPUTS {len(sig['inputs'])}",
            f"#define ANSORC_MODEL_NUM_OUTPUTS {len(sig['outputs'])}",
            f"#define ANSORC_MODEL_ARG_BYTES {{{', '.join(nbytes)}}}",
            f"#define ANSORC_MODEL_ARG_DTYPES {{{', '.join(json.dumps(t['dtype']) for t in args)}}}", "#endif"]


def read_network_signature(header_text: str) -> dict:
    marker = "ansorc-network:"
    for line in header_text.splitlines():
        if marker in line:
            return json.loads(line.split(marker, 1)[1].strip())
    raise ValueError("not an ansorc model header: no 'ansorc-network' line")


__all__ = ["loader", "header", "c_string", "read_network_signature", "STATUS", "MESSAGES", "PROFILER"]
