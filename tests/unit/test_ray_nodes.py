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
    isa = Target.from_name(Target.from_name("native").isa)
    if march:
        assert f"-march={march}" in flags and "-O3" in flags
    else:
        assert flags == isa.flags
    assert set(isa.isa_flags) <= set(flags)     # whatever model the compiler names, the ISA rendered for is on
    assert portable_flags("avx2") == Target.from_name("avx2").flags


def test_a_cpu_model_the_compiler_names_without_the_native_isa_still_gets_its_flags(monkeypatch):
    """gcc 12.2 on a Zen 4 names znver3 for -march=native: no AVX-512, while the source uses AVX-512."""
    import ansorc.measure.ray_nodes as nodes
    monkeypatch.setattr(nodes, "native_march", lambda cc: "x86-64")
    flags = portable_flags("native")
    assert "-march=x86-64" in flags and set(Target.from_name(Target.from_name("native").isa).isa_flags) <= set(flags)


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


def test_a_free_runner_takes_from_its_last_batch_then_the_oldest():
    from ansorc.measure.ray_batches import Batch, pick
    batches = {h: Batch(f"t{h}", (), True, None, [None] * 2, [None] * 2) for h in (3, 5)}
    for b in batches.values():
        b.todo.extend([0, 1])
    assert pick(batches, last=5) == (5, 0)          # its own batch: the runner keeps that task's inputs
    assert pick(batches, last=None) == (3, 0)       # else the oldest batch first
    assert pick(batches, last=9) == (3, 1)
    assert pick(batches, last=3) == (5, 1)          # its batch ran dry: another's work
    assert pick(batches, last=3) is None


def test_a_batch_takes_one_result_per_candidate_and_notes_when_it_completed():
    import time
    from ansorc.measure.errors import MeasureErrorNo
    from ansorc.measure.ray_batches import Batch
    from ansorc.measure.runner import MeasureResult
    b = Batch("t", (), True, None, [None] * 2, [None] * 2)
    ok = MeasureResult((2e-3, 1e-3, 3e-3), MeasureErrorNo.NO_ERROR, "", 0.0, time.time())
    assert b.accept(0, ok) and not b.accept(0, ok)   # a late or repeated answer is dropped
    assert b.best == 2e-3 and not b.complete and b.times.done is None
    assert b.accept(1, MeasureResult((), MeasureErrorNo.RUNTIME_DEVICE, "x", 0.0, time.time()))
    assert b.complete and b.times.done is not None and b.best == 2e-3


def test_a_ray_client_address_without_grpc_says_what_to_install(monkeypatch):
    pytest.importorskip("ray")
    import socket
    from ansorc.measure import ray_backend
    monkeypatch.setattr(ray_backend, "client_available", lambda: False)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        with pytest.raises(ray_backend.ClusterError, match=r"pip install 'ansorc\[ray\]'"):
            ray_backend.connect(f"ray://127.0.0.1:{s.getsockname()[1]}")
