"""The offline zoo: structure of each model, sane activations under onnxruntime 1.30.0, the importer's passes on
them, and ansorc's compiled library (ansorc.net.compile, untuned default programs) against onnxruntime:
L2(ansorc - ort) <= 1e-4 * L2(ort), in Python and from a C program linked against the exported library."""
import collections
import functools

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from ansorc.net import zoo
from ansorc.net.backend import supported
from ansorc.net.import_passes import to_proto
from ansorc.net.importer import graph_of, import_model

BUILDERS = {"resnet18": zoo.resnet18, "resnet50": zoo.resnet50, "mobilenet_v2": zoo.mobilenet_v2,
            "bert_tiny": zoo.bert_tiny, "bert_tiny_fused_ln": functools.partial(zoo.bert_tiny, fused_layernorm=True)}


@functools.cache
def built(name):
    return BUILDERS[name]()


def feeds(m, seed=0):
    rng = np.random.default_rng(seed)
    out = {}
    for vi in m.graph.input:
        shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        if vi.name == "attention_mask":  # the last quarter is padding
            out[vi.name] = (np.arange(shape[-1]) < shape[-1] * 3 // 4).astype(np.int64).reshape(shape)
        elif vi.type.tensor_type.elem_type == onnx.TensorProto.INT64:
            out[vi.name] = rng.integers(0, 30522, shape).astype(np.int64)
        else:
            out[vi.name] = rng.normal(size=shape).astype(np.float32)
    return out


def ort_run(m, inputs):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, inputs)


def ops(m):
    return collections.Counter(n.op_type for n in m.graph.node)


def consumers(m):
    out = collections.defaultdict(list)
    for n in m.graph.node:
        for i in n.input:
            out[i].append(n)
    return out


@pytest.mark.parametrize("name,adds", [("resnet18", 8), ("resnet50", 16), ("mobilenet_v2", 10)])
def test_cnn_structure(name, adds):
    m = built(name)
    c, users = ops(m), consumers(m)
    assert c["Conv"] == c["BatchNormalization"] and c["Add"] == adds
    for n in m.graph.node:
        if n.op_type == "Conv":
            assert [u.op_type for u in users[n.output[0]]] == ["BatchNormalization"]
    assert [n.op_type for n in m.graph.node[-3:]] == ["GlobalAveragePool", "Flatten", "Gemm"]
    assert [o.name for o in m.graph.output] == ["logits"]
    if name == "mobilenet_v2":
        depthwise = [n for n in m.graph.node if n.op_type == "Conv" and
                     next(a.i for a in n.attribute if a.name == "group") > 1]
        assert len(depthwise) == 17 and c["Clip"] == 35 and c["Relu"] == 0
    else:
        assert c["MaxPool"] == 1 and c["Relu"] == 1 + (2 if name == "resnet18" else 3) * adds


@pytest.mark.parametrize("fused", [False, True])
def test_bert_structure(fused):
    m = built("bert_tiny_fused_ln" if fused else "bert_tiny")
    c = ops(m)
    assert c["Softmax"] == 2 and c["Erf"] == 2 and c["MatMul"] == 2 * (4 + 2 + 2) and c["Gather"] == 2
    assert c["LayerNormalization"] == (5 if fused else 0) and c["ReduceMean"] == (0 if fused else 10)
    assert [i.name for i in m.graph.input] == ["input_ids", "attention_mask"]
    assert all(i.type.tensor_type.elem_type == onnx.TensorProto.INT64 for i in m.graph.input)
    assert c["Softmax"] == sum(1 for n in m.graph.node if n.op_type == "Add" and n.name.startswith("masked"))
    assert [o.name for o in m.graph.output] == ["last_hidden_state", "pooler_output"]


def test_deterministic_weights():
    a, b, c = zoo.mobilenet_v2(seed=3), zoo.mobilenet_v2(seed=3), zoo.mobilenet_v2(seed=4)
    assert a.SerializeToString() == b.SerializeToString() != c.SerializeToString()


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2", "bert_tiny", "bert_tiny_fused_ln"])
def test_activations_are_order_one_under_onnxruntime(name):
    m = built(name)
    for out in ort_run(m, feeds(m)):
        rms = float(np.sqrt(np.mean(np.square(out.astype(np.float64)))))
        assert np.isfinite(out).all() and 0.1 < rms < 10, rms


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2", "bert_tiny"])
def test_import_passes_on_zoo(name):
    """BN folded into every conv; the remaining graph has the same convolutions and no Identity. Channels-last
    (the default), every conv is a ConvNHWC and the only layout transposes are the input's and the one before
    the classifier's Flatten."""
    m = built(name)
    after = collections.Counter(n.op_type for n in graph_of(m, layout="nchw").nodes)
    assert after["BatchNormalization"] == 0 and after["Identity"] == 0
    assert after["Conv"] == ops(m)["Conv"]
    if name != "bert_tiny":
        nhwc = collections.Counter(n.op_type for n in graph_of(m).nodes)
        assert nhwc["ConvNHWC"] == ops(m)["Conv"] and nhwc["Conv"] == 0
        assert nhwc["ToNHWC"] == 1 and nhwc["ToNCHW"] == 1


def l2_close(got, want, rel=1e-4):
    diff = np.linalg.norm((got.astype(np.float64) - want.astype(np.float64)).ravel())
    assert diff <= rel * np.linalg.norm(want.astype(np.float64).ravel()), (diff, np.linalg.norm(want))


@pytest.mark.slow
@pytest.mark.parametrize("name", list(BUILDERS))
def test_zoo_matches_onnxruntime(name, tmp_path):
    """The compiled model, called from Python and from examples/embed_net/main.c, matches onnxruntime."""
    import ansorc.net
    m = built(name)
    ok, why = supported(m)
    assert ok, why
    inputs = feeds(m, seed=1)
    ordered = [inputs[vi.name] for vi in m.graph.input]
    want = ort_run(m, inputs)
    with ansorc.net.compile(m) as model:
        got = model(*ordered)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
            l2_close(g, w)
        for g, w in zip(c_program_outputs(model, ordered, tmp_path), want):
            l2_close(g.reshape(w.shape), w)


def c_program_outputs(model, inputs, tmp) -> list:
    """Export the model, build examples/embed_net/main.c against it, run it on `inputs` (files), read its outputs."""
    import subprocess
    from pathlib import Path
    paths = model.export(tmp / "lib")
    lib = tmp / "lib"
    header = Path(paths["h"]).name
    main = Path(__file__).resolve().parents[2] / "examples" / "embed_net" / "main.c"
    libname = Path(paths["so"]).name[3:-3]
    exe = tmp / "app"
    subprocess.run(["gcc", "-O2", "-std=c99", f"-I{lib}", f'-DMODEL_HEADER="{header}"', str(main), f"-L{lib}",
                    f"-l{libname}", f"-Wl,-rpath,{lib}", "-fopenmp", "-lm", "-o", str(exe)], check=True, timeout=300)
    files = []
    for k, x in enumerate(inputs):
        files.append(str(tmp / f"in{k}.bin"))
        np.ascontiguousarray(x).tofile(files[-1])
    (tmp / "out").mkdir()
    proc = subprocess.run([str(exe), paths["weights"], str(tmp / "out"), *files], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    return [np.fromfile(tmp / "out" / f"out{k}.bin", np.dtype(t["dtype"]))
            for k, t in enumerate(model.signature["outputs"])]


SMALL = {"resnet18": functools.partial(zoo.resnet18, size=32, classes=10),
         "mobilenet_v2": functools.partial(zoo.mobilenet_v2, size=32, classes=10),
         "bert_tiny": functools.partial(zoo.bert_tiny, seq=8, vocab=100)}


@pytest.mark.parametrize("name", list(SMALL))
def test_import_passes_keep_the_function(name):
    """The graph after the importer's passes (folding, Dropout/Identity removal, BN folded into convs, depthwise
    ones included), written back as ONNX, computes what the original computes (both under onnxruntime)."""
    m = SMALL[name]()
    g = graph_of(m, layout="nchw")  # (the channels-last graph holds internal ops onnxruntime cannot run)
    outputs = [g.resolve(o) for o in g.outputs]
    inputs = {k: (v % 100 if v.dtype == np.int64 else v) for k, v in feeds(m).items()}
    for got, want in zip(ort_run(to_proto(g, outputs), inputs), ort_run(m, inputs)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_resnet18_tasks_and_weights(monkeypatch):
    """With direct convs (ANSORC_WINOGRAD=0), ResNet-18 fuses into 23 groups (20 convs with their
    BN/bias/add/ReLU, max pool, average pool + flatten, dense) and 18 distinct tasks: per stage after the first,
    the strided conv, the 1x1 downsample, the second conv with its residual add (x2: both blocks) and the first
    conv of the second block; the first stage's two conv kinds occur twice each."""
    from ansorc.net.fuse import fuse
    from ansorc.net.tasks import extract_tasks
    monkeypatch.setenv("ANSORC_WINOGRAD", "0")
    net = import_model(built("resnet18"))
    groups = fuse(net)
    tasks = extract_tasks(net, groups)
    assert len(groups) == 23 and len(tasks) == 18
    assert sum(t.weight for t in tasks) == 23
    assert sorted(t.weight for t in tasks) == [1] * 13 + [2] * 5
    convs = [g for g in groups if g.kind == "complex"]
    assert len(convs) == 21   # 20 convolutions and the dense layer
    # Winograd: the ten 3x3 stride-1 convs of 56x56, 28x28 and 14x14 maps (7x7 stays direct) each add the input
    # transform's two passes, a GEMM and the output transform's first pass; its second keeps the conv's epilogue
    monkeypatch.setenv("ANSORC_WINOGRAD", "1")
    wino = fuse(import_model(built("resnet18")))
    assert len(wino) == 23 + 4 * 10
    assert sum("wino_rows" in g.name for g in wino) == sum("wino_cols" in g.name for g in wino) == 10
    assert sum("wino_gemm" in g.name for g in wino if g.kind == "complex") == 10
