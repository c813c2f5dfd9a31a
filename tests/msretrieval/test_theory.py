"""Exact enumeration against brute force; the worked counterexample; the margin lemma."""

import itertools

import numpy as np
import pytest

import jaxpapers.msretrieval as M

C3 = np.array([[1, 1, 1, 0, 0, 0], [0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 1, 0]], np.uint8)
PI3 = np.array([0.4, 0.3, 0.3], np.float32)


def _jac(a, b):
  a, b = a.astype(bool), b.astype(bool)
  u = (a | b).sum(-1)
  return np.where(u > 0, (a & b).sum(-1) / np.maximum(u, 1), 0.0)


def _np_bayes(pi, cands):
  f = cands.shape[-1]
  best, arg = -1.0, None
  for bits in itertools.product([0, 1], repeat=f):
    v = float(np.dot(pi.astype(np.float64), _jac(np.array(bits)[None], cands)))
    if v > best + 1e-12:
      best, arg = v, np.array(bits)
  return arg, best


def test_worked_counterexample():
  y, v = M.enumerate_bayes_fingerprint(PI3, C3)
  assert float(v) == pytest.approx(0.5, abs=1e-6)
  # Both c2 and c3 reach 0.5 and are the only maximisers.
  for c in C3[1:]:
    assert float(np.dot(PI3, _jac(c[None], C3))) == pytest.approx(0.5)
  assert any(np.array_equal(np.asarray(y), c) for c in C3[1:])
  assert float(M.hr1_regret(PI3, C3, y)) == pytest.approx(0.1, abs=1e-6)
  marg = np.asarray(M.marginal_fingerprint(PI3, C3))
  np.testing.assert_allclose(marg, [0.4, 0.4, 0.4, 0.6, 0.6, 0.3], atol=1e-6)
  assert float(M.hr1_regret(PI3, C3, marg, sim="cosine")) == pytest.approx(0.1, abs=1e-6)
  # The retrieval-optimal fingerprint y_{argmax pi} has no regret.
  assert float(M.hr1_regret(PI3, C3, C3[0])) == 0.0


def test_enumeration_matches_numpy_brute_force():
  rng = np.random.default_rng(0)
  p, n, f = 12, 4, 6
  cands = (rng.random((p, n, f)) < 0.4).astype(np.uint8)
  pi = rng.dirichlet(np.ones(n), size=p).astype(np.float32)
  y, v = M.enumerate_bayes_fingerprint(pi, cands, batch_size=5)
  for i in range(p):
    arg, best = _np_bayes(pi[i], cands[i])
    assert float(v[i]) == pytest.approx(best, abs=1e-5)
    # The returned fingerprint reaches the optimum (ties: any maximiser is fine).
    assert float(np.dot(pi[i], _jac(np.asarray(y[i])[None], cands[i]))) == pytest.approx(
      best, abs=1e-5
    )


def test_enumeration_at_sixteen_bits():
  rng = np.random.default_rng(1)
  cands = (rng.random((2, 3, 16)) < 0.3).astype(np.uint8)
  pi = np.array([[1.0, 0, 0], [0.2, 0.5, 0.3]], np.float32)
  y, v = M.enumerate_bayes_fingerprint(pi, cands)
  # A point mass: the Bayes fingerprint is the candidate itself, with Jaccard 1.
  np.testing.assert_array_equal(np.asarray(y[0]), cands[0, 0])
  assert float(v[0]) == pytest.approx(1.0)
  assert float(v[1]) >= max(np.dot(pi[1], _jac(c[None], cands[1])) for c in cands[1]) - 1e-6


def test_hr1_regret_against_numpy_with_ties():
  rng = np.random.default_rng(2)
  cands = (rng.random((20, 5, 8)) < 0.4).astype(np.uint8)
  cands[:, 4] = cands[:, 3]  # duplicated candidates: ties are averaged
  pi = rng.dirichlet(np.ones(5), size=20).astype(np.float32)
  dec = (rng.random((20, 8)) < 0.4).astype(np.uint8)
  got = np.asarray(M.hr1_regret(pi, cands, dec))
  for i in range(20):
    s = _jac(dec[i][None], cands[i])
    top = s >= s.max() - 1e-9
    assert got[i] == pytest.approx(pi[i].max() - pi[i][top].mean(), abs=1e-6)


def test_similarity_band_and_lemma():
  rng = np.random.default_rng(3)
  cands = (rng.random((30, 5, 12)) < 0.4).astype(np.uint8)
  lo, hi = (np.asarray(x) for x in M.similarity_band(cands))
  checked = 0
  for i in range(30):
    pair = [_jac(cands[i, a], cands[i, b]) for a in range(5) for b in range(5) if a != b]
    assert lo[i] == pytest.approx(min(pair)) and hi[i] == pytest.approx(max(pair))
    # Lemma: a fingerprint within (1 + sigma_max) / 2 of a candidate ranks it alone first.
    for _ in range(50):
      y = (rng.random(12) < 0.4).astype(np.uint8)
      s = _jac(y[None], cands[i])
      c = int(np.argmax(s))
      if s[c] > (1 + hi[i]) / 2:
        checked += 1
        assert (s >= s[c]).sum() == 1
  assert checked > 0
  mask = np.ones((30, 5), bool)
  mask[:, 1:] = False
  lo1, hi1 = M.similarity_band(cands, mask)
  assert float(lo1[0]) == 1.0 and float(hi1[0]) == 0.0
