"""Window means against frame-by-frame float64 loops."""

import numpy as np
import pytest

from jaxpapers import logstop as L


def _loop(v, lo, hi):
  """Means of v[..., lo(t):hi(t)] for every t, one slice at a time."""
  return np.stack(
    [v[..., lo(t) : hi(t)].mean(-1) for t in range(v.shape[-1])], -1
  )


@pytest.mark.parametrize("T", [1, 5, 7])
@pytest.mark.parametrize("w", [1, 2, 3, 8])
def test_window_means_equal_a_frame_by_frame_loop(T, w):
  v = np.random.default_rng(T * 10 + w).random((2, 3, T))
  blocks = L.block_means({"a": v}, w)["a"]
  nb = -(-T // w)
  want = np.stack([v[..., j * w : (j + 1) * w].mean(-1) for j in range(nb)], -1)
  assert blocks.shape == (2, 3, nb) and blocks.dtype == np.float32
  np.testing.assert_allclose(blocks, want, rtol=1e-6)
  got = L.sliding_means(v, w)
  assert got.dtype == np.float64
  np.testing.assert_allclose(
    got, _loop(v, lambda t: t, lambda t: t + w), rtol=1e-12
  )
  r = w - 1
  got = L.centred_means(v, r)
  np.testing.assert_allclose(
    got, _loop(v, lambda t: max(t - r, 0), lambda t: t + r + 1), rtol=1e-12
  )


def test_window_means_name_the_bad_argument():
  v = np.ones((2, 4))
  with pytest.raises(ValueError, match="window must be >= 1"):
    L.block_means({"a": v}, 0)
  with pytest.raises(TypeError, match="window must be an int"):
    L.sliding_means(v, 1.5)
  with pytest.raises(ValueError, match="radius must be >= 0"):
    L.centred_means(v, -1)
  with pytest.raises(TypeError, match="props must be a mapping"):
    L.block_means(v, 2)
  with pytest.raises(ValueError, match=r"props\['a'\] must have a time axis"):
    L.block_means({"a": 0.5}, 2)
