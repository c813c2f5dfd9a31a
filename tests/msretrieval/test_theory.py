"""Exact enumeration against brute force; the worked counterexample; the margin
lemma."""

import itertools

import numpy as np
import pytest

import jaxpapers.msretrieval as M

C3 = np.array(
  [[1, 1, 1, 0, 0, 0], [0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 1, 0]], np.uint8
)
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
  assert float(M.hr1_regret(PI3, C3, marg, sim="cosine")) == pytest.approx(
    0.1, abs=1e-6
  )
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
    # The returned fingerprint reaches the optimum (ties: any maximiser is
    # fine).
    assert float(
      np.dot(pi[i], _jac(np.asarray(y[i])[None], cands[i]))
    ) == pytest.approx(best, abs=1e-5)


def test_enumeration_at_sixteen_bits():
  rng = np.random.default_rng(1)
  cands = (rng.random((2, 3, 16)) < 0.3).astype(np.uint8)
  pi = np.array([[1.0, 0, 0], [0.2, 0.5, 0.3]], np.float32)
  y, v = M.enumerate_bayes_fingerprint(pi, cands)
  # A point mass: the Bayes fingerprint is the candidate itself, with Jaccard 1.
  np.testing.assert_array_equal(np.asarray(y[0]), cands[0, 0])
  assert float(v[0]) == pytest.approx(1.0)
  assert (
    float(v[1])
    >= max(np.dot(pi[1], _jac(c[None], cands[1])) for c in cands[1]) - 1e-6
  )


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
    pair = [
      _jac(cands[i, a], cands[i, b])
      for a in range(5)
      for b in range(5)
      if a != b
    ]
    assert lo[i] == pytest.approx(min(pair)) and hi[i] == pytest.approx(
      max(pair)
    )
    # Lemma: a fingerprint within (1 + sigma_max) / 2 of a candidate ranks it
    # alone first.
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


def _np_merge(pi, cands, drop_empty):
  """float64 reference: the first copy of each fingerprint carries the summed
  posterior."""
  n = len(pi)
  out, mask = np.zeros(n), np.zeros(n, bool)
  for c in range(n):
    first = next(j for j in range(n) if np.array_equal(cands[j], cands[c]))
    out[first] += pi[c]
    mask[c] = first == c
  if drop_empty:
    mask &= cands.any(-1)
    out = np.where(mask, out, 0.0)
    out = out / out.sum() if out.sum() > 0 else out
  return out, mask


@pytest.mark.parametrize("drop_empty", [False, True])
def test_merge_duplicate_candidates_against_numpy(drop_empty):
  rng = np.random.default_rng(4)
  p, n, f = 40, 6, 3  # 3 bits: many duplicates and some empty fingerprints
  cands = (rng.random((p, n, f)) < 0.4).astype(np.uint8)
  pi = rng.dirichlet(np.ones(n), size=p).astype(np.float32)
  got, mask = (
    np.asarray(x)
    for x in M.merge_duplicate_candidates(pi, cands, drop_empty=drop_empty)
  )
  saw_dup = saw_empty = False
  for i in range(p):
    want, want_mask = _np_merge(pi[i].astype(np.float64), cands[i], drop_empty)
    np.testing.assert_array_equal(mask[i], want_mask)
    np.testing.assert_allclose(got[i], want, atol=1e-6)
    kept = cands[i][mask[i]]
    assert len({tuple(c) for c in kept}) == len(kept)  # no fingerprint twice
    saw_dup |= len({tuple(c) for c in cands[i]}) < n
    saw_empty |= bool((~cands[i].any(-1)).any())
  assert saw_dup and saw_empty


def test_merge_leaves_distinct_candidates_alone_and_handles_all_empty():
  pi, mask = M.merge_duplicate_candidates(PI3, C3)
  np.testing.assert_allclose(np.asarray(pi), PI3)
  assert np.asarray(mask).all()
  empty = np.zeros((2, 4), np.uint8)
  pi, mask = M.merge_duplicate_candidates(
    np.array([0.5, 0.5], np.float32), empty, drop_empty=True
  )
  assert not np.asarray(mask).any() and float(np.asarray(pi).sum()) == 0.0


def test_hr1_regret_with_mask_against_numpy():
  rng = np.random.default_rng(5)
  cands = (rng.random((30, 5, 6)) < 0.4).astype(np.uint8)
  pi = rng.dirichlet(np.ones(5), size=30).astype(np.float32)
  mask = rng.random((30, 5)) < 0.7
  mask[:, 0] = True
  pi = np.where(mask, pi, 0.0).astype(np.float32)
  pi /= pi.sum(1, keepdims=True)
  dec = (rng.random((30, 6)) < 0.4).astype(np.uint8)
  got = np.asarray(M.hr1_regret(pi, cands, dec, mask=mask))
  got_cos = np.asarray(
    M.hr1_regret(pi, cands, dec.astype(np.float32), sim=("cosine"), mask=mask)
  )
  for i in range(30):
    real = np.flatnonzero(mask[i])
    s = _jac(dec[i][None], cands[i][real])
    top = s >= s.max() - 1e-9
    assert got[i] == pytest.approx(
      pi[i][real].max() - pi[i][real][top].mean(), abs=1e-6
    )
    y = cands[i][real].astype(np.float64)
    d = dec[i].astype(np.float64)
    c = y @ d / np.maximum(np.sqrt((d @ d) * y.sum(1)), 1e-8)
    top = c >= c.max() - 1e-6
    assert got_cos[i] == pytest.approx(
      pi[i][real].max() - pi[i][real][top].mean(), abs=1e-6
    )
  # A masked slot identical to the retrieved candidate no longer splits the tie.
  dup = np.stack([C3[0], C3[1], C3[0]])[None]
  pi2 = np.array([[0.5, 0.2, 0.3]], np.float32)
  assert float(M.hr1_regret(pi2, dup, C3[0][None])[0]) == pytest.approx(
    0.5 - 0.4, abs=1e-6
  )
  merged, m = M.merge_duplicate_candidates(pi2, dup)
  assert float(
    M.hr1_regret(merged, dup, C3[0][None], mask=m)[0]
  ) == pytest.approx(0.0, abs=1e-7)


def test_after_deduplication_the_retrieval_optimal_fingerprint_has_no_regret():
  rng = np.random.default_rng(6)
  base = rng.random((50, 1, 8)) < 0.3
  # many copies of the base
  cands = (base ^ (rng.random((50, 6, 8)) < 0.05)).astype(np.uint8)
  pi = rng.dirichlet(np.ones(6), size=50).astype(np.float32)
  raw = np.asarray(M.hr1_regret(pi, cands, cands[np.arange(50), pi.argmax(1)]))
  # duplicates of the argmax candidate split the hit at random
  assert raw.max() > 0.01
  merged, mask = M.merge_duplicate_candidates(pi, cands, drop_empty=True)
  merged, mask = np.asarray(merged), np.asarray(mask)
  ok = mask.sum(1) >= 1
  best = cands[np.arange(50), merged.argmax(1)]
  dedup = np.asarray(
    M.hr1_regret(merged[ok], cands[ok], best[ok], mask=mask[ok])
  )
  np.testing.assert_allclose(dedup, 0.0, atol=1e-7)
