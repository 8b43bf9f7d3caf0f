"""`import ansorc.torch`: the PyTorch front end in one import. It registers the torch.compile backend "ansorc"
(needed where the package's `torch_dynamo_backends` entry point is not installed, e.g. a source checkout) and
exposes `from_torch` (ansorc/net/torch_front.py) and the backend (ansorc/net/torch_backend.py)."""
from __future__ import annotations

from .net.torch_backend import TorchFallbackWarning, ansorc_backend, register
from .net.torch_front import TorchModel, from_torch

register()

__all__ = ["from_torch", "TorchModel", "ansorc_backend", "TorchFallbackWarning", "register"]
