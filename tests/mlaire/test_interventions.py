"""Language prior and per-language offset removal against NumPy float64
references."""

import numpy as np
import pytest

import jaxpapers.mlaire as M


def test_language_prior_adds_lambda_to_query_language_slots_only():
  rng = np.random.default_rng(0)
  s = rng.normal(size=(4, 6)).astype(np.float32)
  dl = rng.integers(0, 3, (4, 6)).astype(np.int32)
  ql = rng.integers(0, 3, 4).astype(np.int32)
  got = np.asarray(M.language_prior(s, dl, ql, 0.3))
  np.testing.assert_allclose(got, s + 0.3 * (dl == ql[:, None]), rtol=1e-6)
  np.testing.assert_allclose(M.language_prior(s, dl, ql, 0.0), s)


def _ref_offsets(emb, lang, content, n_lang):
  emb = emb.astype(np.float64)
  cent = {c: emb[content == c].mean(0) for c in np.unique(content)}
  mu = np.zeros((n_lang, emb.shape[1]))
  for l in range(n_lang):
    rows = np.flatnonzero(lang == l)
    if rows.size:
      mu[l] = np.mean([emb[i] - cent[content[i]] for i in rows], axis=0)
  return mu


def test_offsets_match_reference_with_missing_translations():
  rng = np.random.default_rng(1)
  n, d, n_lang = 40, 5, 4
  emb = rng.normal(size=(n, d)).astype(np.float32)
  # language 3 never appears: zero offset
  lang = rng.integers(0, 3, n).astype(np.int32)
  content = rng.integers(0, 9, n).astype(np.int32)
  got = np.asarray(M.fit_language_offsets(emb, lang, content, n_lang))
  np.testing.assert_allclose(
    got, _ref_offsets(emb, lang, content, n_lang), atol=1e-5
  )
  assert np.all(got[3] == 0)


def test_offset_removal_makes_exact_translations_identical():
  # e(p_{κ,ℓ}) = c_κ + μ_ℓ with Σ_ℓ μ_ℓ = 0: the fitted offsets are μ and
  # removing them leaves the same unit vector for every language version.
  rng = np.random.default_rng(2)
  n_u, n_l, d = 7, 3, 6
  c = rng.normal(size=(n_u, d))
  mu = rng.normal(size=(n_l, d))
  mu -= mu.mean(0)
  emb = (c[:, None, :] + mu[None]).reshape(-1, d).astype(np.float32)
  lang = np.tile(np.arange(n_l), n_u).astype(np.int32)
  content = np.repeat(np.arange(n_u), n_l).astype(np.int32)
  fit = np.asarray(M.fit_language_offsets(emb, lang, content, n_l))
  np.testing.assert_allclose(fit, mu, atol=1e-5)
  out = np.asarray(M.remove_language_offsets(emb, lang, fit)).reshape(
    n_u, n_l, d
  )
  want = c / np.linalg.norm(c, axis=1, keepdims=True)
  np.testing.assert_allclose(
    out, np.broadcast_to(want[:, None], out.shape), atol=1e-5
  )


def test_remove_offsets_matches_reference():
  rng = np.random.default_rng(3)
  emb = rng.normal(size=(5, 4)).astype(np.float32)
  lang = np.array([0, 1, 1, 0, 2], np.int32)
  off = rng.normal(size=(3, 4)).astype(np.float32)
  x = emb.astype(np.float64) - off[lang]
  np.testing.assert_allclose(
    M.remove_language_offsets(emb, lang, off),
    x / np.linalg.norm(x, axis=1, keepdims=True),
    rtol=1e-5,
  )


def test_offsets_need_n_content_under_jit():
  import jax

  emb = np.ones((2, 3), np.float32)
  with pytest.raises(ValueError, match="n_content must be given"):
    jax.jit(lambda e, l, c: M.fit_language_offsets(e, l, c, 2))(
      emb, np.zeros(2, np.int32), np.zeros(2, np.int32)
    )
  out = jax.jit(
    lambda e, l, c: M.fit_language_offsets(e, l, c, 2, n_content=1)
  )(emb, np.zeros(2, np.int32), np.zeros(2, np.int32))
  assert out.shape == (2, 3)
