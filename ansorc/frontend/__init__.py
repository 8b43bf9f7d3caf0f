"""Expression files (`.te`): a small index-notation language, parsed and checked, never executed as Python.

    prog = load("examples/matmul_relu.te", defines={"N": 256})
    prog.inputs, prog.outputs   # te tensors; prog.tensors is the kernel argument order

See docs/expression-language.md for the grammar, the semantics and the list of errors.
"""
from __future__ import annotations

import os
import re

from .check import Program, build_program
from .errors import TeError, TeSyntaxError
from .lexer import decode_source
from .parser import parse

_ASCII_INT = re.compile(r"[+-]?[0-9]+")
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
    """`-D` arguments ("N=1024", ...) as a defines dict; values stay text and are checked against the file. Only
    ASCII digits make a value (int() would also take '١٢٨'), and a name given twice is an error, not the last."""
    defines = {}
    for arg in args or ():
        name, eq, value = str(arg).partition("=")
        name, value = name.strip(), value.strip()
        if not eq or not name:
            raise TeError(f"-D {arg}: expected NAME=INTEGER, as in -D N=1024", "<command line>")
        if not _ASCII_INT.fullmatch(value):
            raise TeError(f"non-integer size: -D {printable_arg(arg)} (expected an integer in ASCII digits, as in "
                          f"-D {printable_arg(name)}=1024)", "<command line>")
        if name in defines:
            raise TeError(f"-D {printable_arg(name)} is given twice ({defines[name]} and {value}; expected it once)",
                          "<command line>")
        defines[name] = value
    return defines


def printable_arg(text: str) -> str:
    """A command-line value as it may be echoed in one line: non-printable characters escaped."""
    return text if text.isprintable() else text.encode("unicode_escape").decode("ascii")


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
