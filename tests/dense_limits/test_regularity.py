"""Frieze–Kannan decomposition: the energy identity and the B / sqrt(K)
bound."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpapers.dense_limits as D
from tests.dense_limits.test_cut import brute_cut

RNG = np.random.default_rng(1)


def test_exact_oracle_bound_and_energy_identity():
  b, k = 1.0, 6
  w = RNG.choice([-b, b], size=(6, 7))
  dec, tr = D.fk_decompose(
    jnp.asarray(w, jnp.float32), k, jax.random.key(0), exact=True
  )
  r = w.copy()
  cuts = []
  for i in range(k):
    s, t = np.asarray(dec.s[i], np.float64), np.asarray(dec.t[i], np.float64)
    cuts.append(brute_cut(r) / r.size)
    block = s @ r @ t
    # a_r is the residual's mean on the block; the step removes block^2 / (|S||T|) of ||R||_F^2.
    assert float(dec.a[i]) == pytest.approx(
      block / (s.sum() * t.sum()), rel=1e-4, abs=1e-6
    )
    drop = (float(tr.frob_sq[i]) - float(tr.frob_sq[i + 1])) * r.size
    assert drop == pytest.approx(
      block**2 / (s.sum() * t.sum()), rel=1e-3, abs=1e-4
    )
    r = r - float(dec.a[i]) * np.outer(s, t)
  np.testing.assert_allclose(
    np.asarray(tr.cut_found), cuts, rtol=1e-4, atol=1e-6
  )
  assert np.sum(np.square(cuts)) <= b**2 + 1e-6
  assert min(cuts) <= b / np.sqrt(k)
  np.testing.assert_allclose(np.asarray(w - D.reconstruct(dec)), r, atol=1e-4)


def test_search_oracle_on_a_large_random_matrix():
  b, k = 2.0, 16
  w = jnp.asarray(RNG.choice([-b, b], size=(128, 96)), jnp.float32)
  dec, tr = D.fk_decompose(w, k, jax.random.key(1), restarts=16, iters=8)
  frob = np.asarray(tr.frob_sq)
  assert np.all(np.diff(frob) <= 1e-6)  # the residual's energy never grows
  assert frob[0] == pytest.approx(b**2, rel=1e-6)
  found = np.asarray(tr.cut_found)
  # sum c_r^2 <= energy removed
  assert np.sum(found**2) <= frob[0] - frob[-1] + 1e-5
  assert found.min() <= b / np.sqrt(k)


def test_block_matrix_is_recovered_exactly():
  s1, t1 = np.r_[np.ones(4), np.zeros(6)], np.r_[np.ones(3), np.zeros(5)]
  s2, t2 = 1 - s1, 1 - t1
  w = 2.0 * np.outer(s1, t1) - 0.5 * np.outer(s2, t2)
  dec, tr = D.fk_decompose(
    jnp.asarray(w, jnp.float32), 2, jax.random.key(0), restarts=8
  )
  np.testing.assert_allclose(np.asarray(D.reconstruct(dec)), w, atol=1e-5)
  assert float(tr.frob_sq[-1]) == pytest.approx(0.0, abs=1e-8)


def test_regularity_checks_estimators_bracket_the_exact_cut_norm():
  r = D.regularity_checks(
    jax.random.key(3),
    bound=2.0,
    fk_size=8,
    fk_k=4,
    exact_size=5,
    exact_trials=2,
  )
  assert len(r["fk_found"]) == 4 and r["fk_bound"] == pytest.approx(2.0 / 2.0)
  assert len(r["exact_vs_estimators"]) == 2 and r["sdp_bracket_holds"]
  for row in r["exact_vs_estimators"]:
    assert row["lb"] <= row["exact"] * (1 + 1e-5)
  assert r["lb_over_exact_min"] <= 1 + 1e-5
