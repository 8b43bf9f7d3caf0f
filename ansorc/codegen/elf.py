"""The signature a library carries in its own ELF section, read from the file without loading it.

Loading a shared library (dlopen) runs its constructors: code of whoever wrote the file. So `ansorc.load` and
`Model.load` first read the library's signature from the section `.ansorc_sig` of the file, with this small ELF
reader (no dependency), and refuse a file that is not an ELF shared object, has no such section, or whose
signature is not the one its header describes, before anything is loaded.
"""
from __future__ import annotations

import json
import mmap
import os
import struct

from ..errors import AnsorcError

SECTION = ".ansorc_sig"
# on the one constant string of the signature; `used`: kept even where nothing in the library reads it
SECTION_ATTRIBUTE = f'__attribute__((section("{SECTION}"), used))'
MAX_SIGNATURE = 16 << 20   # bytes: a signature is JSON of the arguments; a larger section is not one of ours
ET_DYN = 3


class SignatureError(AnsorcError, ValueError):
    """A library file without a readable ansorc signature section (not ELF, not built by this ansorc, damaged)."""


def _header(blob: bytes, path) -> tuple:
    """(struct byte-order prefix, section header format, e_shoff, e_shentsize, e_shnum, e_shstrndx)."""
    if len(blob) < 64 or blob[:4] != b"\x7fELF" or blob[4] not in (1, 2) or blob[5] not in (1, 2):
        raise SignatureError(f"{path}: not an ELF shared library")
    end = "<" if blob[5] == 1 else ">"
    wide = blob[4] == 2
    (e_type,) = struct.unpack_from(end + "H", blob, 16)
    if wide:
        shoff, = struct.unpack_from(end + "Q", blob, 40)
        shentsize, shnum, shstrndx = struct.unpack_from(end + "HHH", blob, 58)
        fmt = end + "IIQQQQIIQQ"
    else:
        shoff, = struct.unpack_from(end + "I", blob, 32)
        shentsize, shnum, shstrndx = struct.unpack_from(end + "HHH", blob, 46)
        fmt = end + "IIIIIIIIII"
    if e_type != ET_DYN:
        raise SignatureError(f"{path}: an ELF file but not a shared library")
    if shentsize < struct.calcsize(fmt) or shstrndx >= shnum or shoff + shnum * shentsize > len(blob):
        raise SignatureError(f"{path}: damaged ELF file (its section table lies outside the file)")
    return fmt, shoff, shentsize, shnum, shstrndx


def _sections(blob: bytes, path) -> dict:
    """Section name -> (file offset, size), every range checked to lie inside the file."""
    fmt, shoff, shentsize, shnum, shstrndx = _header(blob, path)
    heads = []
    for k in range(shnum):
        name, _type, _flags, _addr, offset, size = struct.unpack_from(fmt, blob, shoff + k * shentsize)[:6]
        heads.append((name, _type, offset, size))
    _, _, str_off, str_size = heads[shstrndx]
    if str_off + str_size > len(blob):
        raise SignatureError(f"{path}: damaged ELF file (its section names lie outside the file)")
    names = blob[str_off:str_off + str_size]
    out = {}
    for name, kind, offset, size in heads:
        end = names.find(b"\0", name)
        if name < len(names) and end >= 0 and kind != 8:   # 8: SHT_NOBITS, no bytes in the file
            out[names[name:end].decode("latin-1")] = (offset, size)
    return out


def read_section_signature(path) -> dict:
    """The JSON object in the `.ansorc_sig` section of the library at `path`, read without loading it."""
    try:   # mapped, not read: a library of any size costs no memory
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size < 64:
                raise SignatureError(f"{path}: not an ELF shared library")
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as blob:
                return _signature(blob, path)
    except (OSError, ValueError) as exc:   # ValueError: mmap of an empty file
        if isinstance(exc, SignatureError):
            raise
        raise SignatureError(f"{path}: cannot read the library ({getattr(exc, 'strerror', None) or exc})") from None


def _signature(blob, path) -> dict:
    where = _sections(blob, path).get(SECTION)
    if where is None:
        raise SignatureError(f"{path}: no {SECTION} section: not a library built by this ansorc (rebuild it)")
    offset, size = where
    if size > MAX_SIGNATURE or offset + size > len(blob):
        raise SignatureError(f"{path}: damaged {SECTION} section")
    text = blob[offset:offset + size].split(b"\0", 1)[0]
    try:
        sig = json.loads(text.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise SignatureError(f"{path}: its {SECTION} section is not a JSON signature") from None
    if not isinstance(sig, dict):
        raise SignatureError(f"{path}: its {SECTION} section is not a JSON signature")
    return sig


__all__ = ["SECTION", "SECTION_ATTRIBUTE", "SignatureError", "read_section_signature"]
