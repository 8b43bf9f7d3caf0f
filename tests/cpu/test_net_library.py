"""The model library (ansorc/net/library.py, model.py, api.py) on hand-built networks, naive schedules."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ansorc.ir.program.evaluate import evaluate
from ansorc.ir.schedule.state import State
from ansorc.net import Model
from ansorc.net.api import build_model, schedule_groups
from ansorc.net.network import NetError, group_dag
from ansorc.net.weights import read_digest, read_weights, write_weights

from tests.net_samples import (chain, conv_mlp_softmax, convnet_fused_groups, mixed_dtypes, one_group_per_op,
                               row_reductions, two_dense, two_embeddings)


def naive(net, groups):
    return {g.name: State.initial(group_dag(net, g)) for g in groups}


def reference(net, inputs):
    arrays = dict(net.weights)
    arrays.update({t.name: x for t, x in zip(net.inputs, inputs)})
    got = evaluate(list(net.outputs), arrays)
    return [got[t.name] for t in net.outputs]


@pytest.fixture(scope="module")
def convnet():
    net = conv_mlp_softmax()
    groups = one_group_per_op(net)
    model = build_model(net, groups, naive(net, groups))
    yield net, groups, model
    model.close()


def test_model_matches_the_evaluator(convnet):
    net, _, model = convnet
    rng = np.random.default_rng(1)
    for _ in range(2):  # twice: the arena's contents from the first run must not leak into the second
        x = rng.standard_normal(net.inputs[0].shape).astype(np.float32)
        outs = model(x)
        assert isinstance(outs, list) and len(outs) == 2
        for got, want, shape in zip(outs, reference(net, [x]), net.output_shapes):
            assert got.shape == shape
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_wrong_inputs_name_the_input_and_shapes(convnet):
    net, _, model = convnet
    x = np.zeros(net.inputs[0].shape, np.float32)
    with pytest.raises(NetError, match=r"input 'input:0' must have shape \(2, 3, 8, 8\), got \(2, 3, 8, 7\)"):
        model(x[..., :7])
    with pytest.raises(NetError, match="input 'input:0' must be float32, got float64"):
        model(x.astype(np.float64))
    with pytest.raises(NetError, match="takes 1 inputs"):
        model(x, x)
    np.testing.assert_allclose(model(np.asfortranarray(x))[0], model(x)[0])  # made contiguous, same result


def test_exported_model_loads_and_matches(convnet, tmp_path):
    net, _, model = convnet
    paths = model.export(tmp_path / "out")
    assert sorted(p.split("/")[-1] for p in paths.values()) == ["convnet.c", "convnet.h", "convnet.weights",
                                                                "libconvnet.so"]
    x = np.random.default_rng(2).standard_normal(net.inputs[0].shape).astype(np.float32)
    with Model.load(tmp_path / "out") as again:
        for a, b in zip(again(x), model(x)):
            np.testing.assert_array_equal(a, b)
    with pytest.raises(NetError, match="not a model name"):
        Model.load(tmp_path / "out", "../out/convnet")
    with pytest.raises(NetError, match="missing"):
        Model.load(tmp_path / "out", "other")
    header = tmp_path / "out" / "convnet.h"
    header.write_text(header.read_text().replace('"shape":[2,3,8,8]', '"shape":[2,3,8,9]'))
    with pytest.raises(NetError, match="built for other inputs or outputs"):
        Model.load(tmp_path / "out")


def test_two_models_of_one_library_keep_their_own_state(convnet):
    net, _, model = convnet
    other = Model(model.files, model.signature)
    x = np.ones(net.inputs[0].shape, np.float32)
    want = model(x)
    other.close()  # frees the other copy's weights, not this one's
    for a, b in zip(model(x), want):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(NetError, match="closed"):
        other(x)


def corrupt(src, dst, how):
    data = bytearray(open(src, "rb").read())
    if how == "truncated":
        data = data[:len(data) - 100]
    elif how == "flipped":
        data[-80] ^= 0x40            # a weight's byte: the checksum catches it
    elif how == "magic":
        data[0:8] = b"NOTANSRC"
    elif how == "count":
        data[12] += 1
    open(dst, "wb").write(bytes(data))


@pytest.mark.parametrize("how,message", [("truncated", "truncated"), ("flipped", "checksum"),
                                         ("magic", "not an ansorc weights file"), ("count", "another model"),
                                         ("missing", "cannot open")])
def test_bad_weights_file_is_a_clean_error(convnet, tmp_path, how, message):
    _, _, model = convnet
    files = dict(model.files)
    files["weights"] = str(tmp_path / "bad.weights")
    if how != "missing":
        corrupt(model.files["weights"], files["weights"], how)
    with pytest.raises(NetError, match=message):
        Model(files, model.signature)


def test_arena_is_smaller_than_the_intermediates_on_a_chain():
    net = chain(length=6, size=4096)
    groups = one_group_per_op(net)
    with build_model(net, groups, naive(net, groups)) as model:
        sig = model.signature
        # five intermediates of 16 KiB; at most two are alive at once
        assert sig["intermediate_bytes"] == 5 * 4096 * 4
        assert sig["arena_bytes"] == 2 * 4096 * 4
        assert sig["kernels"] == 2   # naive programs of one workload are one kernel (f0, f2, f4 and f1, f3, f5)
        x = np.linspace(-2, 2, 4096, dtype=np.float32)
        np.testing.assert_allclose(model(x)[0], reference(net, [x])[0], rtol=1e-6)


def test_default_schedules_share_one_kernel_per_workload():
    net = chain(length=6, size=256)
    groups = one_group_per_op(net)
    schedules, tasks = schedule_groups(net, groups)
    assert sorted(t.weight for t in tasks) == [3, 3]   # f0/f2/f4 (fma) and f1/f3/f5 (max): two workloads
    with build_model(net, groups, schedules, tasks=tasks) as model:
        assert model.signature["kernels"] == len(tasks) and model.signature["groups"] == 6
        assert model.tasks == tasks
        x = np.linspace(-2, 2, 256, dtype=np.float32)
        np.testing.assert_allclose(model(x)[0], reference(net, [x])[0], rtol=1e-6)


def test_weights_are_constants_whose_kept_copies_are_per_group_and_made_again_after_init(tmp_path):
    """A model's weights are constant inputs of its kernels: a matmul's default program keeps a blocked copy of its
    weights (made on the first run), so two groups of one workload get a kernel each, not one kernel re-making
    its copy for every call; and init with another weights file gives that file's results, `free` (which init
    calls first) marking the copies stale: the new weights may land at the old address and differ only in
    elements that the copies' keys do not sample, as here."""
    net = two_dense()
    groups = one_group_per_op(net)
    assert {n for g in groups for n in group_dag(net, g).constants} == {"w1", "w2"}
    schedules, tasks = schedule_groups(net, groups)
    assert sorted(t.weight for t in tasks) == [2, 2]   # the matmuls are one task, the relus another
    with build_model(net, groups, schedules, tasks=tasks) as model:
        code = open(model.files["c"]).read()
        assert code.count("static ansorc_prepared ") == 2 and model.signature["kernels"] == 3
        free = code[code.index(f"void {model.name}_free(void) {{"):]
        assert free[:free.index("}")].count("_constants_changed();") == 2
        x = np.random.default_rng(3).standard_normal(net.inputs[0].shape).astype(np.float32)
        for _ in range(2):
            np.testing.assert_allclose(model(x)[0], reference(net, [x])[0], rtol=1e-4, atol=1e-4)
        weights = {k: v.reshape(net.weights[k].shape).copy() for k, v in read_weights(model.files["weights"]).items()}
        weights["w1"].reshape(-1)[1] += 4.0     # word 1 of 262144: between the samples 0 and 8456 of its key
        write_weights(tmp_path / "other.weights", weights, list(weights), read_digest(model.files["weights"]))
        init = getattr(model._lib, f"{model.name}_init")
        assert init(str(tmp_path / "other.weights").encode()) == 0
        other = dataclasses.replace(net, weights=weights)
        np.testing.assert_allclose(model(x)[0], reference(other, [x])[0], rtol=1e-4, atol=1e-4)
        assert not np.allclose(model(x)[0], reference(net, [x])[0], rtol=1e-4, atol=1e-4)


def sampled(net, groups, seed: int) -> dict:
    """A random valid program per group from the search space (parallel, vectorized, tiled, cached ...)."""
    from ansorc.search.annotate import sample
    from ansorc.search.task import SearchTask
    out = {}
    for k, g in enumerate(groups):
        [state] = sample(SearchTask(group_dag(net, g), "native"), 1, seed=seed + k)
        out[g.name] = state
    return out


@pytest.mark.parametrize("seed", [0, 1])
def test_fused_groups_with_sampled_programs_share_one_unit(seed):
    """Several vectorized kernels in one C file: the prelude and the SIMD helpers appear once."""
    net = conv_mlp_softmax(seed=seed)
    groups = convnet_fused_groups(net)
    with build_model(net, groups, sampled(net, groups, 10 * seed)) as model:
        code = open(model.files["c"]).read()
        helpers = [ln for ln in code.splitlines() if ln.startswith("static inline")]
        assert len(helpers) == len(set(helpers))
        x = np.random.default_rng(seed).standard_normal(net.inputs[0].shape).astype(np.float32)
        for got, want in zip(model(x), reference(net, [x])):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_two_kernels_calling_one_simd_helper_share_its_definition():
    from ansorc.ir.schedule.state import replay
    from ansorc.ir.schedule.steps import Annotate
    net, groups, vec = row_reductions()
    schedules = {g.name: replay(group_dag(net, g), [Annotate(*vec[g.name], "vectorize")] if g.name in vec else [])
                 for g in groups}
    with build_model(net, groups, schedules) as model:
        code = open(model.files["c"]).read()
        defs = [ln for ln in code.splitlines() if ln.startswith("static inline") and "ansorc_reduce_" in ln]
        calls = [ln for ln in code.splitlines() if "ansorc_reduce_" in ln and not ln.startswith("static")]
        if not defs:
            pytest.skip("this machine's ISA has no vector class for a horizontal sum")
        assert len(defs) == 1 and len(calls) == 2
        x = np.random.default_rng(4).standard_normal(net.inputs[0].shape).astype(np.float32)
        np.testing.assert_allclose(model(x)[0], reference(net, [x])[0], rtol=1e-4)


def test_dtypes_rank0_inputs_and_a_repeated_output():
    net = mixed_dtypes()
    groups = one_group_per_op(net)
    with build_model(net, groups, naive(net, groups)) as model:
        a = np.arange(-18, 19, dtype=np.int64)
        f, mask, again = model(a, np.array(0.25))   # a rank-0 array for the (1,) input
        want = reference(net, [a, np.array([0.25])])
        assert f.dtype == np.float64 and mask.dtype == np.bool_
        np.testing.assert_allclose(f, want[0], rtol=1e-12)
        np.testing.assert_array_equal(mask, want[1])
        np.testing.assert_array_equal(again, f)
        with pytest.raises(NetError, match="input 'a' must be int64, got int32"):
            model(a.astype(np.int32), np.array(0.25))


def test_a_compiler_failure_is_one_line_with_the_source_path():
    import dataclasses

    from ansorc.net.library import LibraryError, build_library, emit_library
    net = chain(length=2, size=64)
    groups = one_group_per_op(net)
    lib = emit_library(net, groups, naive(net, groups))
    broken = dataclasses.replace(lib, code=lib.code + "\nthis is not C;\n")
    with pytest.raises(LibraryError) as err:
        build_library(broken)
    message = str(err.value)
    assert "\n" not in message and "error" in message and "source:" in message


def test_an_index_out_of_range_names_the_group_and_its_tensor():
    net = two_embeddings()
    groups = one_group_per_op(net)
    with build_model(net, groups, naive(net, groups)) as model:
        code = open(model.files["c"]).read()
        assert code.count("#define ANSORC_CHECKED_INDEX") == 1   # the guarded helper once, used by two kernels
        assert model.signature["kernels"] == 2                   # both lookups run one kernel
        ids = np.array([[0, 3, 9, 2, 1], [4, 4, 8, 7, 5]], np.int64)
        pos = np.tile(np.arange(5, dtype=np.int64), (2, 1))
        np.testing.assert_allclose(model(ids, pos)[0], reference(net, [ids, pos])[0], rtol=1e-6)
        bad = ids.copy()
        bad[1, 2] = 10
        with pytest.raises(NetError, match=r"run failed: group 'g0_g1': index out of range in table1$"):
            model(bad, pos)
        bad = pos.copy()
        bad[0, 0] = -11
        # the shared kernel's own notes name table1; the message names the failing group's table
        with pytest.raises(NetError, match=r"run failed: group 'g1_g2': index out of range in table2$"):
            model(ids, bad)
