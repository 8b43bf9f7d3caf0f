"""emit_library's checks and plan, without a compiler: groups that do not cover the network, the arena offsets
of a chain, the C of one model translation unit."""
from __future__ import annotations

import dataclasses

import pytest

from ansorc.ir.schedule.state import State
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


def _matmul_relu(prefix: str):
    from ansorc import te
    A, B = te.placeholder((64, 64), name=f"{prefix}A"), te.placeholder((64, 64), name=f"{prefix}B")
    k = te.reduce_axis((0, 64), name="k")
    C = te.compute((64, 64), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name=f"{prefix}C")
    return [A, B, te.compute((64, 64), lambda i, j: te.max(C[i, j], 0.0), name=f"{prefix}D")]


def test_schedule_key_ignores_tensor_names_and_tells_schedules_apart():
    from ansorc.ir.schedule.state import replay
    from ansorc.net.library import schedule_key
    from ansorc.search.annotate import sample
    from ansorc.search.task import SearchTask
    one, two = SearchTask(_matmul_relu("x_")), SearchTask(_matmul_relu("y_"))
    states = sample(one, 4, seed=5)
    renamed = {f"x_{c}": f"y_{c}" for c in "ABCD"}

    def rename(x):
        if isinstance(x, str):
            return "@".join(renamed.get(p.partition(".")[0], p.partition(".")[0]) + "".join(p.partition(".")[1:])
                            for p in x.split("@"))
        return [rename(v) for v in x] if isinstance(x, list) else x
    from ansorc.ir.schedule.steps import steps_from_json, steps_to_json
    for s in states:   # the same schedule on the other names
        other = replay(two.dag, steps_from_json(rename(steps_to_json(s.steps))))
        assert schedule_key(other) == schedule_key(s)
    assert len({schedule_key(s) for s in states}) == len({repr(steps_to_json(s.steps)) for s in states}) > 1
