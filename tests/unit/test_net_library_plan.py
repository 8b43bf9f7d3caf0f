"""emit_library's checks and plan, without a compiler: groups that do not cover the network, the arena offsets
of a chain, the C of one model translation unit."""
from __future__ import annotations

import dataclasses

import pytest

from ansorc.ir.state import State
from ansorc.net.library import LibraryError, emit_library
from ansorc.net.network import group_dag
from tests.net_samples import chain, conv_mlp_softmax, one_group_per_op


def naive(net, groups):
    return {g.name: State.initial(group_dag(net, g)) for g in groups}


def test_groups_out_of_order_are_refused():
    net = chain(length=3, size=64)
    groups = one_group_per_op(net)
    with pytest.raises(LibraryError, match="group 'g2_f2' reads 'f1' before any group computes it"):
        emit_library(net, groups[::-1], naive(net, groups))


def test_an_output_no_group_computes_is_refused():
    net = chain(length=3, size=64)
    groups = one_group_per_op(net)[:-1]
    with pytest.raises(LibraryError, match="output 'y' is computed by no group"):
        emit_library(net, groups, naive(net, groups))


def test_a_group_without_schedule_is_refused():
    net = chain(length=2, size=64)
    groups = one_group_per_op(net)
    with pytest.raises(LibraryError, match="has no schedule"):
        emit_library(net, groups, {})


def test_two_groups_writing_one_tensor_are_refused():
    net = chain(length=2, size=64)
    groups = one_group_per_op(net)
    twice = groups + [dataclasses.replace(groups[0], name="again")]
    with pytest.raises(LibraryError, match="output of two groups"):
        emit_library(net, twice, naive(net, twice))


def test_one_unit_exports_only_the_model_api():
    net = conv_mlp_softmax()
    groups = one_group_per_op(net)
    lib = emit_library(net, groups, naive(net, groups), target="avx2")
    exported = [ln.split("(")[0] for ln in lib.code.splitlines()
                if ln and not ln.startswith(("static", " ", "#", "}", "/")) and "(" in ln]
    assert sorted(exported) == ["int convnet_init", "int convnet_profile_read", "int convnet_run",
                                "int convnet_run_packed", "void convnet_free", "void convnet_profile_enable"]
    assert lib.code.count("#define ANSORC_PRELUDE") == 1
    assert lib.code.count("static int convnet_k") == lib.code.count("  rc = convnet_k") == len(groups)
    assert lib.signature["calls"] == [[g.name, f"convnet_k{k}"] for k, g in enumerate(groups)]
    assert "convnet_signature[]" in lib.code and "ansorc-network:" in lib.header
    assert lib.weight_order == ("b_conv", "b_fc", "w_conv", "w_fc")


def test_chain_arena_offsets_alternate():
    net = chain(length=5, size=1000)
    groups = one_group_per_op(net)
    lib = emit_library(net, groups, naive(net, groups))
    offsets = [lib.arena.offsets[f"f{k}"] for k in range(4)]
    assert offsets[0] == offsets[2] != offsets[1] == offsets[3]
    assert lib.arena.size == 2 * 4032   # 4000 bytes rounded to 64
