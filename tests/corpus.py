"""The model corpus: real model definitions from torchvision, timm and transformers (and torch.nn recurrent
layers), random weights, eval mode, exported by the PyTorch exporter to ONNX (opset 17) as a user would.

    python -m tests.corpus                  # export every model missing from the cache, list the cache
    python -m tests.corpus --models efficientnet_b0,bert_small --force

The .onnx files are cached outside git: $ANSORC_CORPUS_DIR, else ~/.cache/ansorc/corpus. torch, torchvision,
timm and transformers are optional benchmark/test dependencies (setup.py's "corpus" extra, pinned).
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Entry:
    family: str        # what kind of model it stands for (the list)
    source: str        # where its definition comes from
    inputs: tuple      # (name, shape, kind) per input; kind "float" or "tokens" or "mask"
    small: bool = False  # in the CI subset


IMG = (("image", (1, 3, 224, 224), "float"),)
TOKENS = (("input_ids", (1, 64), "tokens"), ("attention_mask", (1, 64), "mask"))
SEQ = (("sequence", (1, 32, 64), "float"),)   # batch, time, features (batch_first)

CORPUS = {
    "resnet18": Entry("residual CNN", "torchvision", IMG),
    "resnet50": Entry("residual CNN (bottleneck)", "torchvision", IMG),
    "mobilenet_v2": Entry("inverted residual", "torchvision", IMG),
    "mobilenet_v3_small": Entry("inverted residual + SE + hard-swish", "torchvision", IMG, small=True),
    "efficientnet_b0": Entry("inverted residual + SE + SiLU", "torchvision", IMG),
    "regnet_y_400mf": Entry("grouped conv + SE", "torchvision", IMG),
    "regnet_x_400mf": Entry("grouped conv", "torchvision", IMG),
    "shufflenet_v2_x1_0": Entry("channel shuffle", "torchvision", IMG),
    "squeezenet1_1": Entry("fire modules (concat)", "torchvision", IMG, small=True),
    "densenet121": Entry("dense connections (concat)", "torchvision", IMG),
    "mnasnet0_5": Entry("inverted residual (NAS)", "torchvision", IMG),
    "googlenet": Entry("inception (concat)", "torchvision", IMG),
    "convnext_atto": Entry("ConvNeXt: LayerNorm + GELU", "timm", IMG),
    "deeplabv3_mobilenet_v3_large": Entry("segmentation: atrous convs, bilinear Resize", "torchvision", IMG),
    "vit_tiny_patch16_224": Entry("vision transformer", "timm", IMG),
    "mobilevit_xxs": Entry("conv + transformer hybrid", "timm", IMG),
    "bert_small": Entry("BERT-style encoder with attention mask", "transformers", TOKENS, small=True),
    "gpt2_small": Entry("GPT-style causal decoder with attention mask", "transformers", TOKENS),
    "lstm_classifier": Entry("2-layer LSTM classifier", "torch.nn", SEQ, small=True),
    "gru_bidirectional": Entry("bidirectional GRU tagger", "torch.nn", SEQ),
    "mobilenet_v3_large": Entry("inverted residual + SE + hard-swish", "torchvision", IMG),
}


def cache_dir() -> Path:
    d = Path(os.environ.get("ANSORC_CORPUS_DIR") or Path.home() / ".cache" / "ansorc" / "corpus")
    d.mkdir(parents=True, exist_ok=True)
    return d


_TV_LIB = None


def import_torchvision():
    """torchvision from PyPI is built against the CUDA build of torch: beside the CPU build its C extension does
    not load, and its import then stops registering fake kernels for the missing operators (`operator
    torchvision::nms does not exist`). The model definitions need none of those operators, so each one the import
    names is declared (schema only, never run) and the import tried again."""
    global _TV_LIB
    import torch
    for _ in range(16):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")   # "Failed to load image Python extension"
                import torchvision
            return torchvision
        except ImportError:
            return None
        except RuntimeError as e:
            m = re.search(r"operator torchvision::(\w+) does not exist", str(e))
            if not m:
                raise
            for k in [k for k in sys.modules if k.startswith("torchvision")]:
                del sys.modules[k]
            _TV_LIB = _TV_LIB or torch.library.Library("torchvision", "DEF")
            _TV_LIB.define(f"{m[1]}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    raise RuntimeError("torchvision would not import")


def build_module(name: str):
    """The eval-mode torch module of corpus model `name`, with seeded random weights."""
    import torch
    torch.manual_seed(0)
    e = CORPUS[name]
    if e.source == "torchvision":
        tv = import_torchvision()
        if name.startswith("deeplab"):
            m = tv.models.segmentation.deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None,
                                                                    aux_loss=False)
            return _FirstOutput(m).eval()
        kw = {"aux_logits": False, "init_weights": True} if name == "googlenet" else {}
        return getattr(tv.models, name)(weights=None, **kw).eval()
    if e.source == "timm":
        import_torchvision()   # timm imports it
        import timm
        return timm.create_model(name, pretrained=False).eval()
    if e.source == "transformers":
        import_torchvision()   # transformers imports it where it is installed
        return _text_model(name).eval()
    return _recurrent_model(name).eval()


def _text_model(name: str):
    import transformers as tf
    if name.startswith("bert"):
        cfg = tf.BertConfig(vocab_size=8000, hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                            intermediate_size=1024, max_position_embeddings=128, attn_implementation="eager")
        return _LastHidden(tf.BertModel(cfg))
    cfg = tf.GPT2Config(vocab_size=8000, n_embd=256, n_layer=4, n_head=4, n_positions=128,
                        bos_token_id=0, eos_token_id=0, attn_implementation="eager", use_cache=False)
    return _LastHidden(tf.GPT2Model(cfg))


def _recurrent_model(name: str):
    import torch

    class Recurrent(torch.nn.Module):
        def __init__(self):
            super().__init__()
            if name.startswith("lstm"):
                self.rnn = torch.nn.LSTM(64, 128, num_layers=2, batch_first=True)
            else:
                self.rnn = torch.nn.GRU(64, 96, batch_first=True, bidirectional=True)
            self.head = torch.nn.Linear(self.rnn.hidden_size * (2 if self.rnn.bidirectional else 1), 10)

        def forward(self, x):
            y, _ = self.rnn(x)
            return self.head(y[:, -1] if name.startswith("lstm") else y)
    return Recurrent()


def _wrap(pick):
    import torch

    class Wrapped(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *args):
            return pick(self.inner(*args))
    return Wrapped


def _FirstOutput(m):   # noqa: N802 - a class factory
    return _wrap(lambda out: out["out"])(m)


def _LastHidden(m):   # noqa: N802 - inputs by keyword: GPT-2's second positional argument is the KV cache
    import torch

    class Text(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask):
            return self.inner(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    return Text(m)


def example_inputs(name: str, seed: int = 0) -> dict:
    """numpy inputs of model `name`: floats N(0, 1), tokens in [1, 8000), a mask with the last quarter 0."""
    import numpy as np
    rng = np.random.default_rng(seed)
    out = {}
    for iname, shape, kind in CORPUS[name].inputs:
        if kind == "float":
            out[iname] = rng.standard_normal(shape).astype(np.float32)
        elif kind == "tokens":
            out[iname] = rng.integers(1, 8000, shape).astype(np.int64)
        else:
            mask = np.ones(shape, np.int64)
            mask[..., shape[-1] * 3 // 4:] = 0
            out[iname] = mask
    return out


def export(name: str, force: bool = False) -> Path:
    """The cached .onnx of model `name`, exported first if missing (or force)."""
    import torch

    from ansorc.net.torch_front import export_onnx
    path = cache_dir() / f"{name}.onnx"
    if path.exists() and not force:
        return path
    module = build_module(name)
    feeds = example_inputs(name)
    args = tuple(torch.from_numpy(v) for v in feeds.values())
    tmp = path.with_suffix(".tmp.onnx")
    export_onnx(module, args, tmp, list(feeds), ["output"])   # opset 17, the TorchScript exporter, eval mode
    tmp.replace(path)
    return path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(CORPUS), help="comma-separated corpus names")
    ap.add_argument("--small", action="store_true", help="only the CI subset")
    ap.add_argument("--force", action="store_true", help="export again even if cached")
    args = ap.parse_args(argv)
    names = [n for n in args.models.split(",") if n and (not args.small or CORPUS[n].small)]
    bad = [n for n in names if n not in CORPUS]
    if bad:
        print(f"unknown corpus models: {', '.join(bad)}; known: {', '.join(CORPUS)}", file=sys.stderr)
        return 2
    failed = 0
    for n in names:
        try:
            p = export(n, force=args.force)
        except Exception as e:   # noqa: BLE001 - one line per model that does not export; the rest go on
            failed += 1
            print(f"{n:32s} export failed: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
            continue
        print(f"{n:32s} {CORPUS[n].family:48s} {p.stat().st_size / 1e6:7.1f} MB  {p}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
