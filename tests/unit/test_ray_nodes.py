"""The node side of distributed tuning, without a cluster: resource names, portable flags, library transport
by digest, the per-machine timing token."""
import fcntl
import hashlib

import pytest

from ansorc.codegen.target import Target, host_isas
from ansorc.measure.ray_nodes import (has_library, install_library, native_march, node_builds, portable_flags,
                                      target_resource, timing_token, token_path)


def test_target_resources_are_named_after_the_isa_or_gpu_architecture():
    assert target_resource("avx512") == "ansorc-target-avx512"
    assert target_resource("avx2") == "ansorc-target-avx2"
    assert target_resource("neon") == "ansorc-target-neon"
    assert target_resource("cuda") == "ansorc-target-sm_90"
    assert target_resource("cuda:sm_80") == "ansorc-target-sm_80"
    assert target_resource("native") == f"ansorc-target-{host_isas()[0]}"


def test_native_builds_name_the_drivers_cpu_so_a_builder_node_builds_the_same():
    flags = portable_flags("native")
    assert "-march=native" not in flags
    march = native_march(Target.from_name("native").cc)
    if march:
        assert f"-march={march}" in flags and "-O3" in flags
    else:
        assert flags == Target.from_name(Target.from_name("native").isa).flags
    assert portable_flags("avx2") == Target.from_name("avx2").flags


def test_cross_and_gpu_targets_are_built_by_their_measuring_node():
    assert node_builds("neon") and node_builds("cuda:sm_90")
    assert not node_builds("native")


def test_a_library_is_installed_under_its_digest_and_checked(tmp_path, monkeypatch):
    monkeypatch.setenv("ANSORC_CACHE_DIR", str(tmp_path))
    data = b"\x7fELF not really a library"
    digest = hashlib.sha256(data).hexdigest()
    assert not has_library(digest)
    path = install_library(digest, data)
    assert has_library(digest) and open(path, "rb").read() == data
    assert install_library(digest, b"") == path      # cached: the bytes are not needed again
    with pytest.raises(ValueError, match="corrupted"):
        install_library(hashlib.sha256(b"other").hexdigest(), data)


def test_the_timing_token_excludes_every_other_holder_on_the_machine():
    host = "test-host/../x y"                         # sanitized into one file name
    assert "/" not in token_path(host).name[len("ansorc-timing-"):]
    with timing_token(host):
        with open(token_path(host), "a") as other:
            with pytest.raises(BlockingIOError):
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    with open(token_path(host), "a") as other:       # released afterwards
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
