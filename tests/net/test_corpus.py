"""The corpus's CI subset (tests/corpus.py, `small=True`): exported from the public model definitions by the
PyTorch exporter, compiled untuned, every output within 1e-4 (relative L2) of onnxruntime's on the same inputs.
Needs the "corpus" extra (torch, torchvision, timm, transformers); without it the tests skip and say so."""
import importlib.util

import numpy as np
import pytest

from tests.corpus import CORPUS, example_inputs, export

SMALL = [n for n, e in CORPUS.items() if e.small]


def test_corpus_covers_the_families_asked_for():
    families = " ".join(e.family for e in CORPUS.values())
    assert len(CORPUS) >= 20
    for word in ("residual", "SE", "SiLU", "hard-swish", "grouped", "shuffle", "dense", "LayerNorm", "atrous",
                 "vision transformer", "BERT", "GPT", "LSTM", "GRU"):
        assert word in families, word


@pytest.mark.slow
@pytest.mark.parametrize("name", SMALL)
def test_small_corpus_model_matches_onnxruntime(name, tmp_path, monkeypatch):
    for mod in ("torch", "torchvision", "timm", "transformers", "onnxruntime"):
        if importlib.util.find_spec(mod) is None:   # (not imported here: torchvision needs tests/corpus.py's way)
            pytest.skip(f"{mod} missing: the corpus needs the 'corpus' extra")
    import onnxruntime as ort

    import ansorc.net
    path = export(name)
    feeds = example_inputs(name, seed=3)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)
    with ansorc.net.compile(str(path)) as model:
        got = model(*[feeds[n] for n in model.input_names])
    assert len(got) == len(want)
    for g, w in zip(got, want):
        err = np.linalg.norm(np.float64(g) - w) / np.linalg.norm(np.float64(w))
        assert err <= 1e-4, f"{name}: relative L2 {err:.2e}"
