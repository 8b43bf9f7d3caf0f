"""The weights file format (ansorc/net/weights.py), the arena planner (arena.py) and C names of the library."""
from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest

from ansorc.net.arena import Interval, overlaps, plan_arena
from ansorc.net.library import model_ident
from ansorc.net.library_c import c_string
from ansorc.net.network import NetError
from ansorc.net.weights import HEADER, MAGIC, TABLE_START, layout, read_digest, read_weights, write_weights


def sample_weights():
    rng = np.random.default_rng(0)
    return {"b": rng.standard_normal(3).astype(np.float32), "a": rng.integers(0, 9, (2, 5)).astype(np.int64),
            "mask": np.array([True, False, True]), "w/1": rng.standard_normal((4, 4))}


def test_weights_round_trip_aligned_and_sorted(tmp_path):
    w = sample_weights()
    entries = write_weights(tmp_path / "m.weights", w)
    assert [e.name for e in entries] == sorted(w)
    assert all(e.offset % 64 == 0 for e in entries)
    back = read_weights(tmp_path / "m.weights")
    assert list(back) == sorted(w)
    for name, arr in w.items():
        assert back[name].dtype == arr.dtype
        np.testing.assert_array_equal(back[name], arr.reshape(-1))


def test_header_fields_describe_the_file(tmp_path):
    w = sample_weights()
    entries, data_start, size = layout(w)
    write_weights(tmp_path / "m.weights", w)
    blob = (tmp_path / "m.weights").read_bytes()
    magic, version, count, start, fsize, crc, _ = HEADER.unpack_from(blob)
    assert (magic, version, count, start, fsize) == (MAGIC, 2, 4, data_start, size) and len(blob) == size
    assert crc == zlib.crc32(blob[HEADER.size:])   # the digest and the table too, not only the data
    assert blob[HEADER.size:TABLE_START] == bytes(32)
    assert struct.unpack_from("<I", blob, TABLE_START)[0] == len(entries[0].name)


def test_the_model_digest_is_kept_and_a_flipped_table_byte_is_a_corrupt_file(tmp_path):
    """Issue 50.6: the file carries its model's digest, and the CRC covers the table (an offset changed by one
    bit was accepted before: the CRC covered only the data)."""
    path, digest = tmp_path / "m.weights", bytes(range(32))
    write_weights(path, sample_weights(), digest=digest)
    assert read_digest(path) == digest
    blob = bytearray(path.read_bytes())
    blob[TABLE_START + 4] ^= 1     # a byte of the first weight's name
    path.write_bytes(bytes(blob))
    with pytest.raises(NetError, match="checksum"):
        read_weights(path)


def test_an_old_format_file_says_to_rebuild(tmp_path):
    path = tmp_path / "m.weights"
    write_weights(path, sample_weights())
    blob = bytearray(path.read_bytes())
    blob[8] = 1
    path.write_bytes(bytes(blob))
    with pytest.raises(NetError, match="format version 1.*rebuild the model"):
        read_weights(path)


def test_corrupt_files_are_refused(tmp_path):
    path = tmp_path / "m.weights"
    write_weights(path, sample_weights())
    blob = bytearray(path.read_bytes())
    path.write_bytes(blob[:-10])
    with pytest.raises(NetError, match="header says"):
        read_weights(path)
    blob[-1] ^= 1
    path.write_bytes(bytes(blob))
    with pytest.raises(NetError, match="checksum"):
        read_weights(path)


def test_an_unwritable_dtype_is_a_net_error(tmp_path):
    with pytest.raises(NetError, match="float16"):
        write_weights(tmp_path / "x", {"h": np.zeros(2, np.float16)})


def test_arena_chain_reuses_two_slots():
    ivs = [Interval(f"t{k}", 1000, k, k + 1) for k in range(6)]
    plan = plan_arena(ivs)
    assert plan.size == 2 * 1024 and plan.naive_size == 6 * 1024 and overlaps(plan, ivs) == []


def test_arena_random_lifetimes_never_overlap():
    rng = np.random.default_rng(3)
    for _ in range(100):
        ivs = []
        for k in range(int(rng.integers(1, 15))):
            first = int(rng.integers(0, 10))
            ivs.append(Interval(f"t{k}", int(rng.integers(1, 5000)), first, first + int(rng.integers(0, 4))))
        plan = plan_arena(ivs)
        assert overlaps(plan, ivs) == []
        assert all(off % 64 == 0 for off in plan.offsets.values())
        assert max(iv.nbytes for iv in ivs) <= plan.size <= plan.naive_size


@pytest.mark.parametrize("name,want", [("resnet18", "resnet18"), ("9lives", "m_9lives"), ("int", "m_int"),
                                       ("my model.onnx", "my_model_onnx"), ("", "m_"), ("ansorc_x", "m_ansorc_x"),
                                       ("sem", "m_sem"), ("pthread_mutex", "m_pthread_mutex")])  # sem_init ...
def test_model_ident_is_a_safe_c_prefix(name, want):
    assert model_ident(name) == want


def test_c_string_escapes_everything_unusual():
    assert c_string('a"b\\c\n*/é??=') == '"a\\042b\\134c\\012\\052/\\303\\251\\077\\077="'
