"""Fusion of hand-built te networks into groups (net/fuse.py) and groups into tasks (net/tasks.py)."""
import random
import re

import numpy as np
import pytest

from ansorc.ir.program import te
from ansorc.ir.program.evaluate import evaluate, random_inputs
from ansorc.measure.record import Record, RecordLog
from ansorc.net.fuse import FuseOptions, build_graph, fuse, op_pattern
from ansorc.net.network import NetError, group_dag, tensors_by_name
from ansorc.net.tasks import extract_tasks, task_table

from .net_graphs import (add, bias_add, conv2d, conv_block, matmul, network, relu, resnet_block, softmax, weight)


def group_of(groups, op: str):
    [g] = [g for g in groups if op in g.ops]
    return g


def check_partition(net, groups):
    """Every compute op in exactly one group; a group's inputs are placeholders or outputs of earlier groups;
    its outputs are exactly its ops read outside it or model outputs; names unique and C-safe."""
    ops = build_graph(net).order
    assert sorted(o for g in groups for o in g.ops) == sorted(ops)
    produced = {t.name for t in net.inputs} | set(net.weights)
    everything = tensors_by_name(net.outputs)
    readers = {}
    for name in ops:
        for t in everything[name].op.inputs:
            readers.setdefault(t.name, set()).add(name)
    for g in groups:
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", g.name)
        assert set(g.inputs) <= produced, f"{g.name} reads a tensor no earlier group made"
        outside = {o for o in g.ops if readers.get(o, set()) - set(g.ops) or o in {t.name for t in net.outputs}}
        assert set(g.outputs) == outside
        assert sum(op_pattern(everything[o]) == "complex" for o in g.ops) <= 1
        produced |= set(g.outputs)
    assert len({g.name for g in groups}) == len(groups)


def run_groups(net, groups, inputs):
    """Evaluate group by group (each group's own ComputeDAG) and return the model outputs."""
    values = dict(inputs)
    for g in groups:
        dag = group_dag(net, g)
        values.update(evaluate(list(dag.outputs), {n: values[n] for n in g.inputs}))
    return [values[t.name] for t in net.outputs]


def check_groups_compute_the_model(net, groups, seed=0):
    inputs = random_inputs(net.inputs, seed)
    inputs.update(net.weights)
    expected = evaluate(list(net.outputs), inputs)
    for t, got in zip(net.outputs, run_groups(net, groups, inputs)):
        np.testing.assert_allclose(got, expected[t.name], rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------- pattern kinds

def test_op_pattern_of_each_kind():
    x = te.placeholder((2, 3, 4, 5), name="x")
    b = te.placeholder((1, 3, 1, 1), name="b")
    v = te.placeholder((3,), name="v")
    a = te.placeholder((6, 7), name="a")
    idx = te.placeholder((4,), "int32", name="idx")
    assert op_pattern(relu(x, "r")) == "elemwise"
    # a unit dimension read at 0 is still element-wise (broadcasting lowerings write it so); a wider one is a slice
    assert op_pattern(te.compute(x.shape, lambda n, c, h, w: x[0, c, h, w] + x[n, c, h, w], name="u")) == "injective"
    one = te.placeholder((1, 3, 4, 5), name="one")
    assert op_pattern(te.compute(one.shape, lambda n, c, h, w: one[0, c, h, w] * 2.0, name="u1")) == "elemwise"
    assert op_pattern(bias_add(x, b, "ba")) == "broadcast"
    assert op_pattern(te.compute(x.shape, lambda n, c, h, w: x[n, c, h, w] * v[c], name="bv")) == "broadcast"
    # reading axes out of order is not a broadcast (a transpose), nor is a shifted read
    assert op_pattern(te.compute((7, 6), lambda i, j: a[j, i], name="tr")) == "injective"
    assert op_pattern(te.compute((5, 7), lambda i, j: a[i + 1, j], name="sl")) == "injective"
    w = te.placeholder((4, 3, 3, 3), name="w")
    conv = conv2d(x, w, 1, "conv")
    assert op_pattern(conv.op.inputs[0]) == "injective"          # the pad stage
    assert op_pattern(conv) == "complex"
    assert op_pattern(matmul(a, te.placeholder((7, 2), name="bb"), "mm")) == "complex"
    k = te.reduce_axis((0, 7), "k")
    assert op_pattern(te.compute((6,), lambda i: te.max(a[i, k], axis=k), name="mx")) == "reduction"
    k = te.reduce_axis((0, 7), "k")
    assert op_pattern(te.compute((6,), lambda i: te.sum(a[i, k] * 2.0, axis=k), name="s2")) == "reduction"
    gather = te.compute((4, 7), lambda i, j: te.if_then_else(te.all(idx[i] >= 0, idx[i] < 6), a[idx[i], j], 0.0),
                        name="gather")
    assert op_pattern(gather) == "opaque"


# ----------------------------------------------------------------------------- fusion

def test_conv_pad_bias_relu_is_one_group():
    weights = {}
    x = te.placeholder((1, 4, 8, 8), name="x")
    y = conv_block(x, 8, weights, "c1")
    net = network([x], [y], weights)
    [g] = fuse(net)
    assert g.ops == ("c1_pad", "c1", "c1_bias", "c1_relu")
    assert g.kind == "complex" and g.outputs == ("c1_relu",)
    assert g.inputs == ("x", "c1_w", "c1_b")
    assert g.name.startswith("g0_c1")
    check_groups_compute_the_model(net, [g])


def test_a_prologue_that_computes_or_concatenates_stays_out_of_the_conv():
    # DenseNet: BatchNorm-ReLU of a Concat before each conv. Inlined, the conv would recompute it once per output
    # tile that reads each element, with the concat's select in its innermost loop (the padding goes with it)
    weights = {}
    a, b = te.placeholder((1, 4, 8, 8), name="a"), te.placeholder((1, 4, 8, 8), name="b")
    cat = te.compute((1, 8, 8, 8), lambda n, c, h, v: te.if_then_else(c < 4, a[n, c, h, v], b[n, c - 4, h, v]),
                     name="cat")
    bn = te.compute(cat.shape, lambda *i: cat[i] * 0.5 + 0.25, name="bn")
    y = conv_block(relu(bn, "bn_relu"), 8, weights, "c1")
    net = network([a, b], [y], weights)
    groups = fuse(net)
    assert group_of(groups, "c1").ops == ("c1", "c1_bias", "c1_relu")
    assert group_of(groups, "cat") == group_of(groups, "bn_relu") == group_of(groups, "c1_pad")
    check_groups_compute_the_model(net, groups)


def test_a_tasks_weights_are_its_cold_inputs():
    """Network tuning times a task with its weights evicted from the caches (net/tune.py): those inputs, and
    not the activation it reads warm from the kernel before, are the weights."""
    from ansorc.net.tune import weight_inputs
    weights = {}
    x = te.placeholder((1, 4, 8, 8), name="x")
    net = network([x], [conv_block(conv_block(x, 8, weights, "c1"), 8, weights, "c2")], weights)
    tasks = extract_tasks(net, fuse(net))
    assert [weight_inputs(net, t) for t in tasks] == [("c1_w", "c1_b"), ("c2_w", "c2_b")]


def test_an_epilogue_reading_unit_dimensions_at_zero_still_joins_the_conv():
    weights = {}
    x = te.placeholder((1, 4, 6, 6), name="x")
    conv = conv2d(x, weight((4, 4, 3, 3), "w", weights), 1, "conv")
    b = weight((1, 4, 1, 1), "b", weights)
    out = te.compute(conv.shape, lambda n, c, h, w: te.max(conv[0, c, h, w] + b[0, c, 0, 0], 0.0), name="out")
    net = network([x], [out], weights)
    [g] = fuse(net)
    assert g.ops == ("conv_pad", "conv", "out")


def test_residual_add_joins_its_conv():
    weights = {}
    x = te.placeholder((1, 4, 6, 6), name="x")
    x1 = conv_block(x, 4, weights, "stem")
    y = resnet_block(x1, weights, "r1")
    net = network([x], [y], weights)
    groups = fuse(net)
    check_partition(net, groups)
    assert [g.ops for g in groups] == [("stem_pad", "stem", "stem_bias", "stem_relu"),
                                       ("r1_a_pad", "r1_a", "r1_a_bias", "r1_a_relu"),
                                       ("r1_b_pad", "r1_b", "r1_b_bias", "r1_add", "r1_out")]
    assert groups[2].inputs == ("r1_a_relu", "r1_b_w", "r1_b_b", "stem_relu")
    check_groups_compute_the_model(net, groups)


def test_diamond_fuses_into_its_post_dominator():
    x = te.placeholder((4, 8), name="x")
    a = relu(x, "a")
    b = te.compute(a.shape, lambda i, j: te.exp(a[i, j]), name="b")
    c = te.compute(a.shape, lambda i, j: a[i, j] * 2.0, name="c")
    d = add(b, c, "d")
    e = te.compute((8, 4), lambda i, j: d[j, i], name="e")        # injective after the diamond: joins too
    net = network([x], [e])
    [g] = fuse(net)
    assert set(g.ops) == {"a", "b", "c", "d", "e"} and g.ops[0] == "a" and g.ops[-1] == "e"
    check_groups_compute_the_model(net, [g])


def test_conv_diamond_epilogue_joins_the_conv():
    weights = {}
    x = te.placeholder((1, 4, 6, 6), name="x")
    y = bias_add(conv2d(x, weight((4, 4, 3, 3), "w", weights), 1, "conv"), weight((1, 4, 1, 1), "b", weights),
                 "bias")
    s = te.compute(y.shape, lambda *i: te.sigmoid(y[i]), name="sig")
    out = te.compute(y.shape, lambda *i: y[i] * s[i], name="swish")
    net = network([x], [out], weights)
    [g] = fuse(net)
    assert g.ops[-1] == "swish" and len(g.ops) == 5


def test_two_matmuls_never_share_a_group():
    a, b, c = (te.placeholder((8, 8), name=n) for n in "abc")
    m1 = matmul(a, b, "m1")
    chain = matmul(relu(m1, "r"), c, "m2")                     # m1 -> relu -> m2: relu stays with m1
    m3 = matmul(a, c, "m3")
    both = add(chain, m3, "sum")                               # two matmuls feeding one add
    net = network([a, b, c], [both])
    groups = fuse(net)
    check_partition(net, groups)
    assert group_of(groups, "r") is group_of(groups, "m1")
    assert len({group_of(groups, m).name for m in ("m1", "m2", "m3")}) == 3
    assert group_of(groups, "sum") in (group_of(groups, "m2"), group_of(groups, "m3"))
    check_groups_compute_the_model(net, groups)


def test_softmax_stages_are_one_group():
    x = te.placeholder((4, 16), name="x")
    net = network([x], [softmax(x, "sm")])
    [g] = fuse(net)
    assert g.ops == ("sm_max", "sm_exp", "sm_sum", "sm") and g.kind == "reduction"
    check_groups_compute_the_model(net, [g])


def test_without_the_ansorc_additions_fusion_is_relays():
    """Relay alone leaves an explicit pad beside its conv and a softmax's stages in separate groups."""
    weights = {}
    x = te.placeholder((1, 4, 8, 8), name="x")
    net = network([x], [softmax(te.compute((4, 8), lambda i, j: conv_block(x, 4, weights, "c")[0, i, j, 0],
                                           name="rows"), "sm")], weights)
    relay = fuse(net, FuseOptions(reductions=False, prologues=False))
    check_partition(net, relay)
    assert group_of(relay, "c_pad").ops == ("c_pad",)
    assert group_of(relay, "sm_max") is not group_of(relay, "sm_sum")
    ours = fuse(net)
    check_partition(net, ours)
    assert group_of(ours, "c_pad") is group_of(ours, "c")
    assert group_of(ours, "sm_max") is group_of(ours, "sm_sum") is group_of(ours, "sm")
    check_groups_compute_the_model(net, ours)


def test_a_reduction_never_absorbs_a_complex_op():
    a, b = te.placeholder((8, 8), name="a"), te.placeholder((8, 8), name="b")
    net = network([a, b], [softmax(matmul(a, b, "mm"), "sm")])
    groups = fuse(net)
    check_partition(net, groups)
    assert group_of(groups, "mm").ops == ("mm",)
    assert len(group_of(groups, "sm").ops) == 4


def test_max_ops_bounds_a_group():
    x = te.placeholder((4,), name="x")
    t = x
    for k in range(7):
        t = relu(t, f"s{k}")
    net = network([x], [t])
    assert len(fuse(net)) == 1
    groups = fuse(net, FuseOptions(max_ops=3))
    check_partition(net, groups)
    assert all(len(g.ops) <= 3 for g in groups) and len(groups) >= 3
    check_groups_compute_the_model(net, groups)


def test_a_model_output_read_later_ends_its_group():
    x = te.placeholder((4, 4), name="x")
    r = relu(x, "r")
    s = te.compute((4, 4), lambda i, j: r[i, j] * 3.0, name="s")
    net = network([x], [r, s])
    groups = fuse(net)
    check_partition(net, groups)
    assert group_of(groups, "r").outputs == ("r",)
    assert group_of(groups, "r") is not group_of(groups, "s")


def test_two_tensors_of_one_name_are_refused():
    x = te.placeholder((4,), name="x")
    a = te.compute((4,), lambda i: x[i] + 1.0, name="dup")
    b = te.compute((4,), lambda i: a[i] * 2.0, name="dup")
    with pytest.raises(NetError, match="dup"):
        fuse(network([x], [b]))


def _random_op(kind: str, a, b, w, name: str):
    if kind == "add":
        return add(a, b, name)
    if kind == "relu":
        return relu(a, name)
    if kind == "tr":
        return te.compute((8, 8), lambda i, j: a[j, i], name=name)
    if kind == "mm":
        return matmul(a, w, name)
    if kind == "exp":
        return te.compute((8, 8), lambda i, j: te.exp(a[i, j] * 0.01), name=name)
    k = te.reduce_axis((0, 8), f"{name}_k")
    m = te.compute((8,), lambda i: te.max(a[i, k], axis=k), name=f"{name}_max")
    return te.compute((8, 8), lambda i, j: a[i, j] - m[i], name=name)


def _random_network(rng: random.Random):
    """A random DAG of elementwise, broadcast, transpose, reduction and matmul ops over (8, 8) tensors."""
    x, w = te.placeholder((8, 8), name="x"), te.placeholder((8, 8), name="w")
    pool = [x]
    for n in range(rng.randint(3, 14)):
        kind = rng.choice(["add", "relu", "tr", "mm", "row", "exp"])
        pool.append(_random_op(kind, rng.choice(pool), rng.choice(pool), rng.choice([w] + pool), f"op{n}"))
    used = {i.name for t in pool for i in t.op.inputs}
    outs = [t for t in pool[1:] if t.name not in used] or [pool[-1]]
    return network([x, w], outs)


@pytest.mark.parametrize("seed", range(40))
def test_random_networks_fuse_into_a_valid_partition(seed):
    net = _random_network(random.Random(seed))
    groups = fuse(net)
    check_partition(net, groups)
    check_groups_compute_the_model(net, groups, seed)


# ----------------------------------------------------------------------------- tasks

def test_identical_groups_are_one_task_weighted_by_count(tmp_path):
    weights = {}
    x = te.placeholder((1, 4, 6, 6), name="x")
    y = resnet_block(resnet_block(conv_block(x, 4, weights, "stem"), weights, "r1"), weights, "r2")
    net = network([x], [y], weights)
    groups = fuse(net)
    tasks = extract_tasks(net, groups)
    # the stem conv, r1_a and r2_a compute the same (other weights); r1_b, r2_b too (with the residual add)
    assert [t.weight for t in tasks] == [3, 2]
    assert tasks[0].groups == tuple(group_of(groups, c).name for c in ("stem", "r1_a", "r2_a"))
    assert tasks[0].flops == group_dag(net, groups[0]).flop_count > 0
    assert len({t.name for t in tasks}) == 2
    table = task_table(tasks)
    assert tasks[0].name in table and "tuned" not in table
    log = tmp_path / "log.json"
    log.write_text("")
    assert "tuned" in task_table(tasks, str(log)) and " yes" not in task_table(tasks, str(log))
    RecordLog(log).append([Record(tasks[1].workload_key, "native", "[]", (1e-3,), 0)])
    rows = {line.split()[0]: line.split()[-1] for line in task_table(tasks, str(log)).splitlines()[1:-1]}
    assert rows == {tasks[0].name: "no", tasks[1].name: "yes"}


def test_the_search_samples_valid_programs_for_every_fused_group():
    """Every group of a conv/matmul/softmax network is a DAG the sketch rules and annotation handle: sampled
    programs lower and render (and pass the IR verifier, on in tests)."""
    from ansorc.api import generate_source
    from ansorc.search.annotate import sample
    from ansorc.search.task import SearchTask
    weights = {}
    x = te.placeholder((1, 4, 6, 6), name="x")
    y = resnet_block(conv_block(x, 4, weights, "stem"), weights, "r1")
    flat = te.compute((1, 144), lambda n, j: y[n, j // 36, (j // 6) % 6, j % 6], name="flat")
    net = network([x], [softmax(matmul(flat, weight((144, 10), "fc_w", weights), "fc"), "prob")], weights)
    groups = fuse(net)
    assert {g.kind for g in groups} >= {"complex", "reduction"}
    for g in groups:
        task = SearchTask(group_dag(net, g), "avx512")
        states = sample(task, 3, seed=1)
        assert states, f"no program sampled for {g.name}"
        for st in states:
            assert generate_source(task.dag, st, name=g.name, target="avx512").code
