"""Minibatched, mesh-sharded free-embedding fitting
(``fit_free_embeddings_minibatch``)."""

import math

import jax
import numpy as np
import pytest

import jaxpapers.margins as M

A16 = M.sample_k_subsets(3, 16, 8, 2)  # 16 distinct 2-subsets of 8 documents
KW = dict(loss="sigmoid", steps=25, lr=0.05)


def test_full_batch_limit_equals_the_full_batch_fit():
  """batch_size = N: the same initial draws and steps as fit_free_embeddings."""
  # the fit of test_losses.py: its compiled program is reused
  A = M.k_sparse_relevance(6, 2)
  key = jax.random.key(1)
  ref = M.fit_free_embeddings(key, A, 8, loss="sigmoid", steps=300, lr=3e-2)
  got = M.fit_free_embeddings_minibatch(
    key, A, 8, batch_size=A.shape[0], loss="sigmoid", steps=300, lr=3e-2
  )
  for name in ("U", "V", "log_t", "b", "history"):
    np.testing.assert_allclose(
      np.asarray(getattr(got, name)),
      np.asarray(getattr(ref, name)),
      rtol=1e-4,
      atol=1e-5,
    )


def test_sharded_over_eight_devices_equals_one_device():
  """Rows of U, A and every minibatch split over 8 devices: the result of one
  device."""
  if jax.device_count() < 8:
    pytest.skip("needs 8 devices (tests/conftest.py provides 8 CPU devices)")
  key = jax.random.key(2)
  mesh8 = jax.make_mesh((8,), ("data",))
  mesh1 = jax.make_mesh((1,), ("data",), devices=jax.devices()[:1])
  got = M.fit_free_embeddings_minibatch(
    key, A16, 3, batch_size=8, mesh=mesh8, **KW
  )
  one = M.fit_free_embeddings_minibatch(
    key, A16, 3, batch_size=8, mesh=mesh1, **KW
  )
  assert got.U.sharding.num_devices == 8
  for a, b in zip(got, one, strict=True):
    np.testing.assert_allclose(
      np.asarray(a), np.asarray(b), rtol=2e-5, atol=2e-6
    )
  # The first step's loss is the sigmoid loss of the 8 sampled rows at the
  # initial draws (float64 numpy), not the loss of all 16 rows.
  rng = np.random.default_rng(
    np.asarray(jax.random.key_data(key)).ravel().tolist()
  )
  U0, V0 = (
    rng.standard_normal((16, 3), dtype=np.float32),
    rng.standard_normal((8, 3), np.float32),
  )
  idx = np.asarray(jax.random.randint(jax.random.fold_in(key, 0), (8,), 0, 16))
  p = A16.mean()

  def loss64(U, V, A):
    U = U / np.linalg.norm(U, axis=1, keepdims=True)
    V = V / np.linalg.norm(V, axis=1, keepdims=True)
    z = np.where(A, 1.0, -1.0) * (10.0 * U @ V.T + math.log(p / (1 - p)))
    return np.logaddexp(0.0, -z).mean()

  A16np = np.asarray(A16, bool)
  assert float(got.history[0]) == pytest.approx(
    loss64(U0[idx], V0, A16np[idx]), rel=1e-5
  )
  assert abs(loss64(U0, V0, A16np) - loss64(U0[idx], V0, A16np[idx])) > 1e-3
