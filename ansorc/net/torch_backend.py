"""The `torch.compile` backend "ansorc": `torch.compile(m, backend="ansorc")` compiles each graph TorchDynamo
captures into a model library and runs it; a graph it cannot take runs eagerly (the graph's own forward), with
one TorchFallbackWarning per reason.

Dynamo hands the backend an FX GraphModule whose inputs are the module's parameters and buffers as well as the
call's tensors. The weights are baked into the library as constants (exported as the ONNX model's
initializers, so the importer folds and lays them out as it does a file's); each call checks that the same
weight tensors come in, unmodified (their version counters), and runs eagerly otherwise.

`backend="ansorc"` finds it through the `torch_dynamo_backends` entry point (setup.py) once ansorc is
installed, or after `import ansorc.torch` (register() here). `options` (torch.compile's) may name "trials",
"log" and "target", as ansorc.net.compile takes them.
"""
from __future__ import annotations

import warnings

from .network import NetError
from .torch_front import compile_exported, require_torch, to_numpy

NAME = "ansorc"
OPTIONS = ("trials", "log", "target")
WARNED: set = set()   # the reasons already warned about in this process


class TorchFallbackWarning(UserWarning):
    """A graph torch.compile handed to the ansorc backend runs eagerly instead; the message says why."""


def warn_once(reason: str) -> None:
    if reason not in WARNED:
        WARNED.add(reason)
        warnings.warn(f"ansorc torch.compile backend: running eagerly: {reason}", TorchFallbackWarning,
                      stacklevel=2)


def _is_weight(node, value) -> bool:
    """A placeholder that holds a parameter or buffer of the module (Dynamo's source names it so)."""
    torch = require_torch()
    source = getattr(node.meta.get("grapharg"), "source", None)
    name = getattr(source, "name", "")
    name = name() if callable(name) else str(name)
    return isinstance(value, torch.nn.Parameter) or "._parameters[" in name or "._buffers[" in name


def _training(gm) -> bool:
    """Does a call of the graph run in training mode (dropout, batch norm with training=True)?"""
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        try:
            pair = node.normalized_arguments(gm, normalize_to_only_use_kwargs=True)
        except Exception:  # noqa: BLE001 - targets without a schema are not training switches
            pair = None
        if pair is not None and pair.kwargs.get("training") is True:
            return True
    return False


def refusal(gm, example_inputs) -> str | None:
    """Why the graph must run eagerly, before trying to export it (None: try)."""
    torch = require_torch()
    for x in example_inputs:
        if not isinstance(x, torch.Tensor) or any(not isinstance(d, int) for d in x.shape):
            return "dynamic shapes (compile with torch.compile(..., dynamic=False) to specialize each shape)"
        if x.device.type != "cpu":
            return f"an input on {x.device.type}: the compiled library runs on the CPU"
        if x.is_floating_point() and x.dtype != torch.float32:
            return f"a {str(x.dtype).replace('torch.', '')} input: the library takes float32 tensors"
    if torch.is_grad_enabled() and any(x.requires_grad for x in example_inputs):
        return "gradients are needed (an input requires grad); run under torch.no_grad() or inference_mode()"
    if _training(gm):
        return "the module is in training mode; call .eval() first"
    return None


def _bound_module(gm, example_inputs, weights: set):
    """An nn.Module over the non-weight inputs that calls `gm` with the weights held as its buffers (the
    exporter makes buffers initializers)."""
    torch = require_torch()

    class Bound(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.graph = gm
            for i in weights:
                self.register_buffer(f"w{i}", example_inputs[i].detach())

        def forward(self, *xs):
            it = iter(xs)
            args = [getattr(self, f"w{i}") if i in weights else next(it) for i in range(len(example_inputs))]
            return self.graph(*args)

    return Bound()


def _version(t):
    """A tensor's version counter (bumped by every in-place change); None for an inference tensor (it has none)."""
    try:
        return t._version
    except RuntimeError:
        return None


class CompiledGraph:
    """What the backend returns for a graph it compiled: checks the call against the compile, converts the
    tensors and runs the library; the graph's own forward where the call differs."""

    def __init__(self, gm, model, example_inputs, weights: set, outs: tuple, as_list: bool):
        self.gm, self.model = gm, model
        self.weights = {i: (example_inputs[i], _version(example_inputs[i])) for i in weights}
        self.specs = [(i, tuple(x.shape), x.dtype) for i, x in enumerate(example_inputs) if i not in weights]
        self.out_dtypes = [o.dtype for o in outs]
        self.as_list = as_list

    def _differs(self, args) -> str | None:
        for i, (w, version) in self.weights.items():
            if args[i] is not w or _version(args[i]) != version:
                return ("the weights differ from the compiled ones (changed in place, or another module instance); "
                        "torch._dynamo.reset() compiles again")
        for i, shape, dtype in self.specs:
            if tuple(args[i].shape) != shape or args[i].dtype != dtype:
                return (f"an input of {str(args[i].dtype).replace('torch.', '')}{list(args[i].shape)} where the "
                        f"library was compiled for {str(dtype).replace('torch.', '')}{list(shape)}")
        return None

    def __call__(self, *args):
        why = self._differs(args)
        if why is not None:
            warn_once(why)
            return self.gm.forward(*args)
        torch = require_torch()
        arrays = [to_numpy(args[i]) for i, _, _ in self.specs]
        outs = [torch.from_numpy(o).to(d) for o, d in zip(self.model(*arrays), self.out_dtypes)]
        return outs if self.as_list else tuple(outs)


def _compile(gm, example_inputs, options: dict):
    """A CompiledGraph of `gm`, or NetError."""
    torch = require_torch()
    weights = {i for i, (n, x) in enumerate(zip(_placeholders(gm), example_inputs)) if _is_weight(n, x)}
    with torch.no_grad():
        outs = gm(*example_inputs)
    as_list = isinstance(outs, list)
    if not isinstance(outs, (tuple, list)) or not outs or not all(isinstance(o, torch.Tensor) for o in outs):
        raise NetError(f"the graph returns {type(outs).__name__}, not a sequence of tensors")
    bound = _bound_module(gm, example_inputs, weights)
    feeds = tuple(x for i, x in enumerate(example_inputs) if i not in weights)
    model = compile_exported(bound, feeds, [f"input{i}" for i in range(len(feeds))],
                             [f"output{i}" for i in range(len(outs))], name="dynamo_graph", **options)
    got = [(tuple(s["shape"]), s["dtype"]) for s in model.signature["outputs"]]
    want = [(tuple(o.shape), str(o.dtype).replace("torch.", "")) for o in outs]
    if len(got) != len(want) or any(g[0] != w[0] for g, w in zip(got, want)):
        raise NetError(f"the library's outputs {got} are not the graph's {want}")
    return CompiledGraph(gm, model, example_inputs, weights, tuple(outs), as_list)


def _placeholders(gm) -> list:
    return [n for n in gm.graph.nodes if n.op == "placeholder"]


def ansorc_backend(gm, example_inputs, options: dict | None = None):
    """The torch.compile backend: a callable running `gm` as a compiled library, or `gm.forward` (eager) with
    one warning per reason."""
    options = dict(options or {})
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise NetError(f"torch.compile(backend='ansorc'): unknown options {unknown}; it takes {list(OPTIONS)}")
    example_inputs = list(example_inputs)
    why = refusal(gm, example_inputs)
    if why is None:
        try:
            return _compile(gm, example_inputs, options)
        except NetError as exc:
            why = str(exc)
        except Exception as exc:  # noqa: BLE001 - any failure to compile means eager, said once
            why = f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0][:300]}"
    warn_once(why)
    return gm.forward


def register() -> str:
    """Register the backend with TorchDynamo under "ansorc" unless it is known (registered, or found through
    the installed entry point); returns the name."""
    require_torch()
    from torch._dynamo import list_backends, register_backend
    if NAME not in list_backends(exclude_tags=()):
        register_backend(ansorc_backend, name=NAME)
    return NAME


__all__ = ["ansorc_backend", "register", "TorchFallbackWarning", "CompiledGraph", "refusal"]
