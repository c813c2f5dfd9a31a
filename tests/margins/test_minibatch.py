"""Minibatched, mesh-sharded free-embedding fitting (``fit_free_embeddings_minibatch``)."""

import jax
import numpy as np
import pytest

import jaxpapers.margins as M

A = M.sample_k_subsets(3, 16, 8, 2)  # 16 distinct 2-subsets of 8 documents
KW = dict(loss="sigmoid", steps=25, lr=0.05)


def test_full_batch_limit_equals_the_full_batch_fit():
  """batch_size = N: the same initial draws and steps as fit_free_embeddings."""
  key = jax.random.key(1)
  ref = M.fit_free_embeddings(key, A, 3, **KW)
  got = M.fit_free_embeddings_minibatch(key, A, 3, batch_size=A.shape[0], **KW)
  for name in ("U", "V", "log_t", "b", "history"):
    np.testing.assert_allclose(
      np.asarray(getattr(got, name)), np.asarray(getattr(ref, name)), rtol=2e-5, atol=2e-6
    )


def test_sharded_over_eight_devices_equals_one_device():
  """Rows of U, A and every minibatch split over 8 devices: the result of one device."""
  if jax.device_count() < 8:
    pytest.skip("needs 8 devices (tests/conftest.py provides 8 CPU devices)")
  key = jax.random.key(2)
  mesh8 = jax.make_mesh((8,), ("data",))
  mesh1 = jax.make_mesh((1,), ("data",), devices=jax.devices()[:1])
  got = M.fit_free_embeddings_minibatch(key, A, 3, batch_size=8, mesh=mesh8, **KW)
  one = M.fit_free_embeddings_minibatch(key, A, 3, batch_size=8, mesh=mesh1, **KW)
  assert got.U.sharding.num_devices == 8
  for a, b in zip(got, one, strict=True):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=2e-6)
  # A minibatch of 8 of 16 rows is not the full batch: the step losses differ.
  full = M.fit_free_embeddings(key, A, 3, **KW)
  assert not np.allclose(np.asarray(got.history[1:]), np.asarray(full.history[1:]))
