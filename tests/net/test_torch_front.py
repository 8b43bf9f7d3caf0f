"""The PyTorch front end: ansorc.net.from_torch (ansorc/net/torch_front.py) and the torch.compile backend
"ansorc" (ansorc/net/torch_backend.py) against torch's own eager results; the error without torch."""
import sys
import warnings

import pytest

from ansorc.net.network import NetError

torch = pytest.importorskip("torch", reason="the PyTorch front end needs torch (pip install 'ansorc[torch]')")
torch_backend = pytest.importorskip("ansorc.net.torch_backend")


def rel_l2(got, want) -> float:
    return float(torch.linalg.norm(got - want) / torch.linalg.norm(want))


def conv_net():
    return torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
                               torch.nn.Linear(8 * 6 * 6, 10))


class MLP(torch.nn.Module):
    """Two outputs: the logits and the hidden layer."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(16, 32), torch.nn.Linear(32, 4)

    def forward(self, x):
        h = torch.nn.functional.gelu(self.fc1(x))
        return self.fc2(h), h


class CumSum(torch.nn.Module):
    """CumSum is outside the support table (ansorc.net.ops.SUPPORT)."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(6, 6)

    def forward(self, x):
        return torch.cumsum(self.fc(x), dim=1) * 2.0


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch):
    """Each test sees its own first warnings (the backend warns once per reason and process)."""
    monkeypatch.setattr(torch_backend, "WARNED", set())
    torch.manual_seed(0)
    yield
    torch._dynamo.reset()


def test_from_torch_conv_net_matches_torch():
    from ansorc.net import from_torch
    m = conv_net()
    m[0].eval()   # a submodule in another mode than its parent keeps it
    tm = from_torch(m, torch.randn(2, 3, 6, 6))
    assert m.training and not m[0].training   # exported in eval mode, each module's own mode restored
    x = torch.randn(2, 3, 6, 6)
    y = tm(x)
    assert isinstance(y, torch.Tensor) and y.shape == (2, 10)
    assert rel_l2(y, m.eval()(x).detach()) <= 1e-4
    assert tm.model.name == "Sequential" and tm.input_names == ["input0"]


def test_from_torch_mlp_matches_torch_with_two_outputs():
    from ansorc.net import from_torch
    m = MLP().eval()
    tm = from_torch(m, (torch.randn(3, 16),), input_names=["x"], name="mlp")
    x = torch.randn(3, 16)
    got, want = tm(x), m(x)
    assert isinstance(got, tuple) and len(got) == 2
    assert all(rel_l2(g, w.detach()) <= 1e-4 for g, w in zip(got, want))
    assert tm.input_names == ["x"] and tm.model.name == "mlp"


def test_from_torch_export_failure_is_one_line():
    class Spectrum(torch.nn.Module):
        def forward(self, x):
            return torch.fft.rfft(x).abs()

    from ansorc.net import from_torch
    with pytest.raises(NetError, match=r"^Spectrum: the PyTorch exporter failed: .*fft") as info:
        from_torch(Spectrum(), torch.randn(2, 8))
    assert "\n" not in str(info.value)


def test_without_torch_one_error_naming_the_extra(monkeypatch):
    from ansorc.net import from_torch
    monkeypatch.setitem(sys.modules, "torch", None)   # `import torch` raises ImportError
    with pytest.raises(NetError, match=r"pip install 'ansorc\[torch\]'"):
        from_torch(object(), ())


def test_torch_compile_backend_runs_the_library(monkeypatch):
    import ansorc.torch  # noqa: F401 - registers the backend "ansorc"
    runs = []
    call = torch_backend.CompiledGraph.__call__
    monkeypatch.setattr(torch_backend.CompiledGraph, "__call__", lambda self, *a: runs.append(1) or call(self, *a))
    m = conv_net().eval()
    compiled = torch.compile(m, backend="ansorc")
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("error", torch_backend.TorchFallbackWarning)
        for _ in range(2):
            x = torch.randn(2, 3, 6, 6)
            assert rel_l2(compiled(x), m(x)) <= 1e-4
    assert len(runs) == 2


def test_torch_compile_falls_back_once_for_an_unsupported_op():
    import ansorc.torch  # noqa: F401
    m = CumSum().eval()
    compiled = torch.compile(m, backend="ansorc")
    with warnings.catch_warnings(record=True) as seen, torch.no_grad():
        warnings.simplefilter("always")
        for _ in range(2):
            x = torch.randn(4, 6)
            assert torch.allclose(compiled(x), m(x))
    ours = [w for w in seen if issubclass(w.category, torch_backend.TorchFallbackWarning)]
    assert len(ours) == 1 and "CumSum" in str(ours[0].message)


@pytest.mark.parametrize("train", [False, True])
def test_torch_compile_falls_back_for_gradients_and_training(train):
    import ansorc.torch  # noqa: F401
    m = torch.nn.Sequential(torch.nn.Linear(6, 6), torch.nn.Dropout(0.0)).train(train)
    compiled = torch.compile(m, backend="ansorc")
    x = torch.randn(4, 6)
    with pytest.warns(torch_backend.TorchFallbackWarning, match="training mode" if train else "gradients"):
        with torch.set_grad_enabled(not train):
            y = compiled(x)
    assert torch.allclose(y, m(x)) and y.requires_grad != train


def test_torch_compile_falls_back_when_the_weights_change():
    import ansorc.torch  # noqa: F401
    m = torch.nn.Linear(6, 3).eval()
    compiled = torch.compile(m, backend="ansorc")
    x = torch.randn(2, 6)
    with torch.no_grad():
        compiled(x)
        m.weight.mul_(2.0)
        with pytest.warns(torch_backend.TorchFallbackWarning, match="weights differ"):
            assert torch.allclose(compiled(x), m(x))


def test_backend_refuses_unknown_options():
    gm = torch.fx.symbolic_trace(torch.nn.ReLU())
    with pytest.raises(NetError, match="unknown options"):
        torch_backend.ansorc_backend(gm, [torch.randn(2)], options={"trails": 8})
