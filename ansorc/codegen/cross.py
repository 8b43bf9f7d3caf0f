"""The C `main` that turns a kernel into a stand-alone program, for running it where it cannot be dlopen'ed
(another architecture, under an emulator: measure/cross.py builds and runs such programs).

The driver reads the inputs from binary files, calls ENTRY_packed, and writes the outputs; it is run as
`prog in0.bin ... out0.bin ...`.
"""
from __future__ import annotations

from ..ir.program.dtypes import itemsize
from .source import Source

DRIVER = """
#include <stdio.h>
static int ansorc_file(const char* path, void* buf, size_t bytes, int out) {{
  FILE* f = fopen(path, out ? "wb" : "rb");
  if (!f) return 1;
  size_t n = out ? fwrite(buf, 1, bytes, f) : fread(buf, 1, bytes, f);
  fclose(f);
  return n != bytes;
}}
int main(int argc, char** argv) {{
  static const size_t bytes[{n}] = {{{sizes}}};
  void* args[{n}];
  if (argc != {n} + 1) {{ fprintf(stderr, "usage: %s {usage}\\n", argv[0]); return 2; }}
  for (int i = 0; i < {n}; ++i) {{
    args[i] = ansorc_alloc(bytes[i]);
    if (!args[i] || (i < {n_in} && ansorc_file(argv[i + 1], args[i], bytes[i], 0))) return 3;
  }}
  int rc = {entry}_packed(args);
  if (rc) return 10 + rc;
  for (int i = {n_in}; i < {n}; ++i)
    if (ansorc_file(argv[i + 1], args[i], bytes[i], 1)) return 4;
  return 0;
}}
"""


def driver(source: Source) -> str:
    sizes = ", ".join(f"{a.size * itemsize(a.dtype)}u" for a in source.args)
    return DRIVER.format(n=len(source.args), n_in=len(source.inputs), sizes=sizes, entry=source.entry,
                         usage=" ".join(a.name + ".bin" for a in source.args))


__all__ = ["driver", "DRIVER"]
