"""Expression files (`.te`): a small index-notation language, parsed and checked, never executed as Python.

    prog = load("examples/matmul_relu.te", defines={"N": 256})
    prog.inputs, prog.outputs   # te tensors; prog.tensors is the kernel argument order

See docs/expression-language.md for the grammar, the semantics and the list of errors.
"""
from __future__ import annotations

import os

from .check import Program, build_program
from .errors import TeError, TeSyntaxError
from .lexer import decode_source
from .parser import parse

MAX_FILE_BYTES = 1 << 20  # an expression file is a few lines; anything this large is a mistake


def parse_text(text: str, filename: str = "<string>", defines: dict | None = None) -> Program:
    """Parse and check `text`; raise TeError (one line: file:line:col: error: ...) on any problem."""
    if isinstance(text, (bytes, bytearray)):
        text = decode_source(bytes(text), filename)
    if not isinstance(text, str):
        raise TeError(f"expected the text of an expression file, got {type(text).__name__}", filename)
    module = parse(text, filename)
    return build_program(module, text, filename, defines)


def parse_defines(args) -> dict:
    """`-D` arguments ("N=1024", ...) as a defines dict; values stay text and are checked against the file."""
    defines = {}
    for arg in args or ():
        name, eq, value = str(arg).partition("=")
        if not eq or not name.strip():
            raise TeError(f"-D {arg}: expected NAME=INTEGER, as in -D N=1024", "<command line>")
        defines[name.strip()] = value.strip()
    return defines


def load(path, defines: dict | None = None) -> Program:
    """Read and check an expression file. `defines` overrides size parameters, as `-D N=1024` does."""
    filename = os.fspath(path)
    try:
        with open(filename, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise TeError(f"cannot read the file: {e.strerror or e} (expected a readable .te file)", filename) from None
    if len(data) > MAX_FILE_BYTES:
        raise TeError(f"file is larger than {MAX_FILE_BYTES} bytes (expected a small text file)", filename)
    return parse_text(decode_source(data, filename), filename, defines)


__all__ = ["load", "parse_text", "parse_defines", "Program", "TeError", "TeSyntaxError"]
