"""Cut norm: exact enumeration, local search and the SDP bracket against float64
brute force."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpapers.dense_limits as D

RNG = np.random.default_rng(0)


def brute_cut(m):
  """Unnormalised cut norm by enumerating every (S, T) pair (float64)."""
  m = np.asarray(m, np.float64)
  ss = np.array(list(itertools.product((0.0, 1.0), repeat=m.shape[0])))
  ts = np.array(list(itertools.product((0.0, 1.0), repeat=m.shape[1])))
  # every (S, T) pair, no closed-form shortcut
  return float(np.abs(ss @ m @ ts.T).max())


def brute_inf_one(m):
  """||M||_{inf->1} = max over sign vectors x, y of x^T M y (float64)."""
  m = np.asarray(m, np.float64)
  signs = np.array(list(itertools.product((-1.0, 1.0), repeat=m.shape[0])))
  return np.abs(signs @ m).sum(1).max()


MATS = [
  RNG.uniform(-1, 1, (5, 6)),
  RNG.normal(size=(6, 4)),
  np.outer(RNG.normal(size=5), RNG.normal(size=5)),
]


@pytest.mark.parametrize("i", range(len(MATS)))
def test_exact_matches_pairwise_enumeration(i):
  m = MATS[i]
  want = brute_cut(m) / m.size
  got, s, t = D.cut_norm_exact(jnp.asarray(m, jnp.float32), return_sets=True)
  assert float(got) == pytest.approx(want, rel=1e-5)
  # The returned sets witness the value (rows and columns not swapped).
  assert abs(
    np.asarray(s, np.float64) @ m @ np.asarray(t, np.float64)
  ) / m.size == pytest.approx(want, rel=1e-5)


def test_exact_known_value_and_normalisation():
  m = jnp.array([[1.0, -1.0], [1.0, 1.0]])
  # S = {0, 1}, T = {0}: 2 / 4
  assert float(D.cut_norm_exact(m)) == pytest.approx(0.5)
  # sign and scale
  assert float(D.cut_norm_exact(-3.0 * m)) == pytest.approx(1.5)


def test_augmentation_identities():
  m = RNG.uniform(-1, 1, (5, 6))
  ma = np.asarray(D.augment(jnp.asarray(m, jnp.float32)), np.float64)
  np.testing.assert_allclose(ma.sum(0), 0, atol=1e-5)
  np.testing.assert_allclose(ma.sum(1), 0, atol=1e-5)
  c = brute_cut(m)
  assert brute_cut(ma) == pytest.approx(c, rel=1e-5)
  assert brute_inf_one(ma) == pytest.approx(4 * c, rel=1e-5)


def test_local_search_is_a_witnessed_lower_bound():
  m = RNG.uniform(-1, 1, (9, 11)).astype(np.float32)
  exact = float(D.cut_norm_exact(m))
  v, s, t = D.cut_norm_lb(
    jnp.asarray(m), jax.random.key(0), restarts=8, iters=5
  )
  witness = abs(
    np.asarray(s, np.float64) @ m.astype(np.float64) @ np.asarray(t, np.float64)
  )
  assert float(v) == pytest.approx(witness / m.size, rel=1e-5)
  assert float(v) <= exact + 1e-6
  assert float(v) >= 0.8 * exact  # 16 starts on a 9 x 11 matrix find most of it


@pytest.fixture(scope="module")
def sdp_cases():
  mats = [RNG.uniform(-1, 1, (7, 8)) for _ in range(3)] + [
    RNG.normal(size=(7, 8)) for _ in range(3)
  ]
  sdp = jax.jit(lambda m, k: D.cut_norm_sdp(m, k, iters=200))
  out = []
  for i, m in enumerate(mats):
    b = sdp(jnp.asarray(m, jnp.float32), jax.random.key(i))
    out.append((m, brute_cut(m) / m.size, b))
  return out


def test_sdp_bounds_bracket_the_exact_value(sdp_cases):
  for _, exact, b in sdp_cases:
    assert float(b.lower) <= exact * (1 + 1e-5)
    assert exact <= float(b.upper) * (1 + 1e-5)
    # the Grothendieck gap
    assert float(b.upper) / float(b.lower) <= D.KRIVINE_BOUND


def test_sdp_witness_sets(sdp_cases):
  for m, _, b in sdp_cases:
    w = (
      abs(np.asarray(b.s, np.float64) @ m @ np.asarray(b.t, np.float64))
      / m.size
    )
    assert w <= float(b.lower) * (1 + 1e-5)


def test_grothendieck_constant_matters(sdp_cases):
  # SDP(M')/4 exceeds the cut norm strictly on some matrices, so dividing the
  # primal by 4 alone (K_G = 1) would not be a lower bound; dividing by
  # Krivine's constant is.
  gaps = [float(b.sdp_primal) / exact for _, exact, b in sdp_cases]
  assert max(gaps) > 1.001
  assert max(gaps) <= D.KRIVINE_BOUND
  # known bounds on K_G; Krivine's value 1.78221...
  assert 1.6769 < D.KRIVINE_BOUND < 1.78222


def test_sdp_upper_bound_is_a_certificate_even_unconverged():
  m = RNG.uniform(-1, 1, (8, 8))
  exact = brute_cut(m) / m.size
  b = D.cut_norm_sdp(jnp.asarray(m, jnp.float32), jax.random.key(3), iters=1)
  assert exact <= float(b.upper) * (1 + 1e-5)
