"""The calibrated correspondence cost against a dense float64 numpy
reference."""

import numpy as np
import pytest

import jaxpapers.sola as S


def test_estimate_correspondence_matches_dense_reference():
  rng = np.random.default_rng(0)
  v_t, v_s, kc, r, alpha, beta, cmax = 9, 7, 3, 3, 1.0, 0.5, 10.0
  ts = [
    "".join(rng.choice(list("xyz "), rng.integers(1, 4))) for _ in range(v_t)
  ]
  ss = [
    "".join(rng.choice(list("xyz "), rng.integers(1, 4))) for _ in range(v_s)
  ]
  p = 40
  t_first = rng.integers(0, v_t, p)
  s_first = rng.integers(0, v_s, p)
  top = np.stack([rng.choice(v_t, kc, replace=False) for _ in range(p)])
  logp = np.log(rng.dirichlet(np.ones(kc), p) * 0.8)
  tab = S.estimate_correspondence(
    t_first,
    s_first,
    top,
    logp,
    t_strings=ts,
    s_strings=ss,
    alpha=alpha,
    beta=beta,
    r=r,
    c_max=cmax,
    chunk=4,  # several chunks, the last one padded
  )
  n = np.zeros((v_t, v_s))
  for t, s in zip(t_first, s_first):
    n[t, s] += 1
  for i in range(p):
    for t, lp in zip(top[i], logp[i]):
      n[t, s_first[i]] += beta * np.exp(lp)
  pi_t = np.bincount(t_first, minlength=v_t) + 1.0
  pi_s = np.bincount(s_first, minlength=v_s) + 1.0
  pi_t, pi_s = pi_t / pi_t.sum(), pi_s / pi_s.sum()
  p_st = (n + alpha * pi_s[None]) / (n.sum(1, keepdims=True) + alpha)
  p_ts = (n + alpha * pi_t[:, None]) / (n.sum(0, keepdims=True) + alpha)
  c = np.minimum(cmax, -0.5 * (np.log(p_st) + np.log(p_ts))) / cmax

  def lex(a, b):
    k = 0
    while k < min(len(a), len(b)) and a[k] == b[k]:
      k += 1
    return 1 - 2 * k / (len(a) + len(b))

  lexm = np.array([[lex(a, b) for b in ss] for a in ts])
  c = np.where(n > 0, c, lexm)
  np.testing.assert_allclose(
    np.asarray(tab.cost_t2s), np.sort(c, 1)[:, :r], atol=1e-5
  )
  np.testing.assert_allclose(
    np.asarray(tab.cost_s2t), np.sort(c.T, 1)[:, :r], atol=1e-5
  )
  got = np.asarray(tab.nbr_t2s)
  for t in range(v_t):
    np.testing.assert_allclose(
      c[t, got[t]], np.asarray(tab.cost_t2s)[t], atol=1e-5
    )
  got = np.asarray(tab.nbr_s2t)
  for s in range(v_s):
    np.testing.assert_allclose(
      c[got[s], s], np.asarray(tab.cost_s2t)[s], atol=1e-5
    )
  # observed pairs are cheaper on average than the lexical prior of unobserved
  # ones
  assert c[n > 1].mean() < 1.0


def test_lexical_cost_closed_form():
  codes, lens = S._tokenize.encode_strings(
    [" the", " then", "", "x"], max_chars=6
  )
  c = np.asarray(
    S.lexical_cost(codes[:, None], lens[:, None], codes[None], lens[None])
  )
  assert c[0, 1] == pytest.approx(1 - 2 * 4 / 9)
  assert c[0, 0] == 0.0 and c[2, 2] == 1.0 and c[0, 3] == 1.0
