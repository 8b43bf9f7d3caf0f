"""The weights file of a model library: written here, read by the library's `<model>_init` (library.py).

Layout, little-endian:
    offset 0   8 bytes  magic "ANSORCWT"
           8   u32      format version (2)
          12   u32      count of weights
          16   u64      data_start: where the first weight's bytes begin (a multiple of 64)
          24   u64      file_size: the whole file, in bytes
          32   u32      CRC-32 (zlib's) of bytes [40, file_size): the model digest, the table and the data
          36   u32      reserved, 0
          40   32 bytes the model digest: SHA-256 of the model's structure and of this table (library.py)
          72   per weight: u32 name length, the name (UTF-8), u32 dtype code, u64 byte size, u64 offset
    then zero padding to data_start, then each weight's bytes at its offset (64-byte aligned, zero padded).
Weights are in the order the library expects (sorted by name), which it checks with their names, dtypes and sizes;
the digest tells a file of another model whose weights have the same names, dtypes and sizes from its own.
Version 1 files (no digest; the CRC covered only the data) are refused with a message saying to rebuild.
"""
from __future__ import annotations

import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .network import NetError

MAGIC = b"ANSORCWT"
VERSION = 2
ALIGN = 64
HEADER = struct.Struct("<8sIIQQII")
DIGEST_BYTES = 32    # the model digest follows the header
TABLE_START = HEADER.size + DIGEST_BYTES
CRC_START = HEADER.size   # the CRC covers the digest and the table too: a flipped offset is a corrupt file
NO_DIGEST = bytes(DIGEST_BYTES)
ENTRY_TAIL = struct.Struct("<IQQ")   # after the name: dtype code, byte size, offset
DTYPE_CODE = {"float32": 1, "float64": 2, "int32": 3, "int64": 4, "bool": 5, "int8": 6, "uint8": 7}
CODE_DTYPE = {v: k for k, v in DTYPE_CODE.items()}


@dataclass(frozen=True)
class WeightEntry:
    name: str
    dtype: str
    nbytes: int
    offset: int


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def layout(weights: dict, order=None) -> tuple:
    """(entries, data_start, file_size) of the file holding `weights` (name -> array) in `order` (default sorted)."""
    names = list(order) if order is not None else sorted(weights)
    table = sum(4 + len(n.encode()) + ENTRY_TAIL.size for n in names)
    at = data_start = _align(TABLE_START + table)
    entries = []
    for n in names:
        arr = weights[n]
        if str(arr.dtype) not in DTYPE_CODE:
            raise NetError(f"weight {n!r}: dtype {arr.dtype} has no place in a weights file")
        entries.append(WeightEntry(n, str(arr.dtype), int(arr.nbytes), at))
        at = _align(at + arr.nbytes)
    return tuple(entries), data_start, at


def table_bytes(entries) -> bytes:
    """The file's table of `entries` (what the model digest covers besides the model's structure)."""
    return b"".join(struct.pack("<I", len(e.name.encode())) + e.name.encode()
                    + ENTRY_TAIL.pack(DTYPE_CODE[e.dtype], e.nbytes, e.offset) for e in entries)


def write_weights(path, weights: dict, order=None, digest: bytes = NO_DIGEST) -> tuple:
    """Write the weights file (under a temporary name, then renamed: a library reading the old file never sees
    a half-written one); `digest`: the model's (Library.digest), which its `<model>_init` requires. Returns the
    entries written."""
    if len(digest) != DIGEST_BYTES:
        raise NetError(f"weights file {path}: a model digest has {DIGEST_BYTES} bytes, got {len(digest)}")
    entries, data_start, size = layout(weights, order)
    prefix = digest + table_bytes(entries)
    prefix += b"\0" * (data_start - HEADER.size - len(prefix))
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp.{os.getpid()}")
    crc = zlib.crc32(prefix)
    try:
        with open(tmp, "wb") as f:
            f.write(b"\0" * HEADER.size + prefix)
            for e in entries:
                data = np.ascontiguousarray(weights[e.name]).reshape(-1).view(np.uint8)  # no copy of the bytes
                pad = b"\0" * (_align(e.offset + e.nbytes) - e.offset - e.nbytes)
                f.write(data)
                f.write(pad)
                crc = zlib.crc32(pad, zlib.crc32(data, crc))
            f.seek(0)
            f.write(HEADER.pack(MAGIC, VERSION, len(entries), data_start, size, crc, 0))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return entries


def read_digest(path) -> bytes:
    """The model digest of a weights file (checked as read_weights checks the file)."""
    return _checked(path)[TABLE_START - DIGEST_BYTES:TABLE_START]


def _checked(path) -> bytes:
    blob = Path(path).read_bytes()
    if len(blob) < HEADER.size:
        raise NetError(f"{path}: truncated weights file")
    magic, version, count, data_start, size, crc, _ = HEADER.unpack_from(blob)
    if magic != MAGIC:
        raise NetError(f"{path}: not an ansorc weights file")
    if version != VERSION:
        raise NetError(f"{path}: a weights file of format version {version}, this ansorc reads {VERSION}; "
                       "rebuild the model")
    if size != len(blob) or not TABLE_START <= data_start <= size:
        raise NetError(f"{path}: the file has {len(blob)} bytes, its header says {size}")
    if zlib.crc32(blob[CRC_START:]) != crc:
        raise NetError(f"{path}: the weights' checksum does not match (corrupt file)")
    return blob


def read_weights(path) -> dict:
    """The weights in a file written by write_weights (name -> array), checking what `<model>_init` checks."""
    blob = _checked(path)
    count = HEADER.unpack_from(blob)[2]
    out, at = {}, TABLE_START
    for _ in range(count):
        (n,) = struct.unpack_from("<I", blob, at)
        name = blob[at + 4:at + 4 + n].decode()
        code, nbytes, offset = ENTRY_TAIL.unpack_from(blob, at + 4 + n)
        at += 4 + n + ENTRY_TAIL.size
        out[name] = np.frombuffer(blob, CODE_DTYPE[code], nbytes // np.dtype(CODE_DTYPE[code]).itemsize, offset)
    return out


__all__ = ["write_weights", "read_weights", "read_digest", "table_bytes", "layout", "NO_DIGEST", "WeightEntry",
           "DTYPE_CODE", "MAGIC", "VERSION"]
