"""PyTorch's front door: `from_torch(module, example_inputs)` exports a module through the PyTorch exporter (the
TorchScript one, opset 17, as tests/corpus.py exports the model corpus) and compiles the ONNX model with
`ansorc.net.compile`. The result, a `TorchModel`, takes and returns torch tensors; its `model` is the numpy
`Model`. torch is an optional extra (`pip install 'ansorc[torch]'`) imported when first needed; the
`torch.compile` backend is torch_backend.py.
"""
from __future__ import annotations

import contextlib
import tempfile
import warnings
from pathlib import Path

from .network import NetError

OPSET = 17   # tests/corpus.py's choice: the opset the importer and the corpus are checked at


def require_torch():
    """The torch module, or one NetError saying how to install it."""
    try:
        import torch
    except ImportError:
        raise NetError("PyTorch is not installed; the PyTorch front end needs it: pip install 'ansorc[torch]'") \
            from None
    return torch


def as_tuple(example_inputs) -> tuple:
    """One tensor or a tuple / list of them -> a tuple."""
    torch = require_torch()
    if isinstance(example_inputs, torch.Tensor):
        return (example_inputs,)
    if isinstance(example_inputs, (tuple, list)):
        return tuple(example_inputs)
    raise NetError(f"example_inputs: expected a tensor or a tuple of tensors, got {type(example_inputs).__name__}")


@contextlib.contextmanager
def eval_mode(module):
    """The module and its submodules in eval mode, each one's own training flag restored after (a submodule may
    have been in another mode than its parent, e.g. a frozen batch norm)."""
    modes = [(m, m.training) for m in module.modules()]
    module.eval()
    try:
        yield module
    finally:
        for m, training in modes:
            m.training = training


def export_onnx(module, args: tuple, path, input_names, output_names) -> None:
    """`module(*args)` exported to the ONNX file `path`, in eval mode without gradients (the training flags are
    restored). A failure is one NetError naming the module's class and the exporter's first line."""
    torch = require_torch()
    try:
        with eval_mode(module), torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")   # the exporter's deprecation and tracer notes are not the user's
            torch.onnx.export(module, args, str(path), input_names=list(input_names),
                              output_names=list(output_names), opset_version=OPSET, dynamo=False,
                              do_constant_folding=True)
    except Exception as exc:  # noqa: BLE001 - the exporter raises many kinds; the user gets one line
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        raise NetError(f"{type(module).__name__}: the PyTorch exporter failed: {first}") from None


def compile_exported(module, args: tuple, input_names, output_names, **compile_args):
    """Export `module(*args)` into a scratch folder and compile it (ansorc.net.compile); the folder goes after."""
    from .api import compile as compile_onnx
    with tempfile.TemporaryDirectory(prefix="ansorc_torch_") as tmp:
        path = Path(tmp) / "model.onnx"
        export_onnx(module, args, path, input_names, output_names)
        return compile_onnx(str(path), **compile_args)


def eager_outputs(module, args: tuple):
    """(flat output tensors, single): the module run once in eval mode without gradients."""
    torch = require_torch()
    with eval_mode(module), torch.no_grad():
        out = module(*args)
    single = isinstance(out, torch.Tensor)
    outs = (out,) if single else tuple(out) if isinstance(out, (tuple, list)) else None
    if outs is None or not all(isinstance(o, torch.Tensor) for o in outs):
        raise NetError(f"{type(module).__name__}: returns {type(out).__name__}; from_torch takes modules that "
                       f"return a tensor or a tuple of tensors")
    return outs, single


def from_torch(module, example_inputs, *, trials: int = 0, log=None, target="native", input_names=None,
               output_names=None, name: str | None = None) -> "TorchModel":
    """A torch.nn.Module compiled into a library for inputs shaped like `example_inputs` (a tensor or a tuple of
    them; the shapes are fixed). `trials`, `log` and `target` are ansorc.net.compile's; the model's name defaults
    to the module's class name. Returns a TorchModel: call it with tensors, get tensors back."""
    torch = require_torch()
    if not isinstance(module, torch.nn.Module):
        raise NetError(f"from_torch: expected a torch.nn.Module, got {type(module).__name__}")
    args = as_tuple(example_inputs)
    outs, single = eager_outputs(module, args)
    input_names = list(input_names) if input_names is not None else [f"input{i}" for i in range(len(args))]
    output_names = list(output_names) if output_names is not None else [f"output{i}" for i in range(len(outs))]
    model = compile_exported(module, args, input_names, output_names, trials=trials, log=log, target=target,
                             name=name or type(module).__name__)
    return TorchModel(model, single)


def to_numpy(x):
    """A tensor's values as a numpy array (detached, on the CPU); anything else through numpy.asarray."""
    import numpy as np
    torch = require_torch()
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    return np.asarray(x)


class TorchModel:
    """A compiled torch module: `tm(*tensors)` returns a tensor (or a tuple, as the module does); the outputs
    carry no autograd history. `tm.model` is the numpy Model (export, profile, close, signature, tasks; those
    are also reachable on `tm` itself)."""

    def __init__(self, model, single: bool):
        self.model = model
        self.single = single

    def __call__(self, *inputs):
        torch = require_torch()
        outs = [torch.from_numpy(o) for o in self.model(*[to_numpy(x) for x in inputs])]
        device = next((x.device for x in inputs if isinstance(x, torch.Tensor)), None)
        if device is not None and device.type != "cpu":
            outs = [o.to(device) for o in outs]
        return outs[0] if self.single else tuple(outs)

    def __getattr__(self, attr):
        if attr in ("model", "single"):   # not set yet (unpickling, a failed __init__)
            raise AttributeError(attr)
        return getattr(self.model, attr)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.model.close()

    def __repr__(self):
        return f"<ansorc.net.TorchModel of {self.model!r}>"


__all__ = ["from_torch", "TorchModel", "require_torch", "export_onnx", "compile_exported"]
