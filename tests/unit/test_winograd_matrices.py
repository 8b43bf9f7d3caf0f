"""The Winograd matrices compute a 3-tap correlation exactly (in float64), in 1-D and as the 2-D nesting the
lowering uses, and the choice of m follows the documented rule."""
import numpy as np
import pytest

from ansorc.net.ops.window import Window
from ansorc.net.ops.winograd import MATRICES, MIN_CHANNELS, matrices, tile_size, transformed_weights


@pytest.mark.parametrize("m", sorted(MATRICES))
def test_one_dimensional_identity(m):
    bt, g, at = matrices(m, np.float64)
    rng = np.random.default_rng(m)
    d, k = rng.standard_normal(m + 2), rng.standard_normal(3)
    want = np.array([d[i:i + 3] @ k for i in range(m)])
    np.testing.assert_allclose(at @ ((g @ k) * (bt @ d)), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("m", sorted(MATRICES))
def test_two_dimensional_tile_with_transformed_weights(m):
    bt, _, at = matrices(m, np.float64)
    rng = np.random.default_rng(10 + m)
    c, k = 3, 2
    tile, w = rng.standard_normal((m + 2, m + 2, c)), rng.standard_normal((3, 3, c, k))
    u = transformed_weights(w, m)
    v = np.einsum("ar,bs,rsc->abc", bt, bt, tile)
    y = np.einsum("ia,jb,abk->ijk", at, at, np.einsum("abc,abck->abk", v, u))
    want = np.einsum("ijrsc,rsck->ijk",
                     np.lib.stride_tricks.sliding_window_view(tile, (3, 3), axis=(0, 1)).transpose(0, 1, 3, 4, 2), w)
    np.testing.assert_allclose(y, want, rtol=1e-10, atol=1e-10)


def _win(out, kernel=(3, 3), strides=(1, 1), dilations=(1, 1)):
    return Window(kernel, strides, dilations, (1, 1), (1, 1), out)


def test_tile_size_rule(monkeypatch):
    monkeypatch.delenv("ANSORC_WINOGRAD", raising=False)
    assert tile_size(_win((56, 56)), 1, 64, 64) == 4
    assert tile_size(_win((14, 14)), 1, 256, 256) == 2       # 16 tiles of 4x4 are too few rows
    assert tile_size(_win((7, 7)), 1, 512, 512) is None        # 16 tiles of 2x2 too
    assert tile_size(_win((7, 7)), 4, 512, 512) == 2           # a batch of 4 gives the rows back
    assert tile_size(_win((7, 7)), 8, 512, 512) == 4
    assert tile_size(_win((56, 56)), 1, MIN_CHANNELS - 1, 64) is None
    assert tile_size(_win((56, 56), strides=(2, 2)), 1, 64, 64) is None
    assert tile_size(_win((56, 56), dilations=(2, 2)), 1, 64, 64) is None
    assert tile_size(_win((56, 56), kernel=(5, 5)), 1, 64, 64) is None
    monkeypatch.setenv("ANSORC_WINOGRAD", "0")
    assert tile_size(_win((56, 56)), 1, 64, 64) is None
