"""CudaKernel on a real GPU: numpy arguments (copied), PyTorch tensors (used in place, on PyTorch's stream),
wrong arguments rejected with one clear error."""
import numpy as np
import pytest

import ansorc
from ansorc import workloads
from ansorc.targets.cuda.kernel import CudaKernelError


@pytest.fixture(scope="module")
def gmm():
    return ansorc.compile(workloads.gmm(1, 96, 80, 64), trials=0, target="cuda")


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1, 1, (1, 96, 64)).astype(np.float32), rng.uniform(-1, 1, (1, 64, 80)).astype(np.float32)


def test_numpy_arguments_give_numpy_results(gmm):
    a, b = _inputs()
    c = gmm(a, b)
    assert isinstance(c, np.ndarray) and c.shape == (1, 96, 80)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    out = np.full((1, 96, 80), np.nan, np.float32)
    assert gmm(a, b, out) is out
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)


def test_torch_tensors_are_used_in_place(gmm):
    torch = pytest.importorskip("torch")
    a, b = _inputs(1)
    ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    tc = torch.full((1, 96, 80), float("nan"), device="cuda")
    got = gmm(ta, tb, tc, stream=torch.cuda.current_stream().cuda_stream)
    assert got is tc
    torch.cuda.synchronize()
    np.testing.assert_allclose(tc.cpu().numpy(), a @ b, rtol=1e-4, atol=1e-4)


def test_wrong_shapes_are_one_clear_error(gmm):
    a, b = _inputs()
    with pytest.raises(CudaKernelError, match="shape"):
        gmm(a[:, :50], b)
    with pytest.raises(CudaKernelError, match="takes 2 inputs"):
        gmm(a)
