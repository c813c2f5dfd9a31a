"""Two ways to move a retriever along the semantics / language-preference
trade-off.

Neither is from the MLAIRE paper (an evaluation protocol); they are the
project's probes of the trade-off its metrics are meant to expose:

* :func:`language_prior`: ``s'(q, d) = s(q, d) + λ · lm(d)``, an explicit bonus
  for passages in the query language;
* :func:`fit_language_offsets` / :func:`remove_language_offsets`: subtract a
  per-language mean offset from the embeddings (in the spirit of "Shift",
  arXiv:2606.18801, by the same authors; **reconstruction**: our estimator and
  normalisation are the simplest reading).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpapers.core import validation as V
from jaxpapers.mlaire._metrics import _check_float_array


def language_prior(
  scores: ArrayLike, doc_lang: ArrayLike, q_lang: ArrayLike, lam: ArrayLike
) -> jax.Array:
  """Adds a query-language bonus: ``s'(q, d) = s(q, d) + λ · 1[lang(d) = ℓ_q]``.

  Args:
    scores: float ``[Q, P]``.
    doc_lang: int ``[Q, P]``.
    q_lang: int ``[Q]``.
    lam: ``λ``, a finite real (Python float or a scalar array, so a sweep can
      ``vmap`` it); negative values penalise the query language.

  Returns:
    ``[Q, P]`` in the dtype of ``scores``. Under jit, a non-finite traced
    ``lam`` makes the output NaN (eagerly it raises).
  """
  scores = _check_float_array(scores, "scores", ndim=2)
  doc_lang = V.check_array(
    doc_lang, "doc_lang", shape=scores.shape, dtype=("int")
  )
  q_lang = V.check_array(
    q_lang, "q_lang", shape=(scores.shape[0],), dtype=("int")
  )
  if isinstance(lam, (int, float)) and not isinstance(lam, bool):
    lam = V.check_float(lam, "lam")
  else:
    lam = V.check_array(lam, "lam", ndim=0, dtype="real")
  out, ok = _prior(scores, doc_lang, q_lang, jnp.asarray(lam, jnp.float32))
  return V.poison(
    out, V.check_values(ok, f"lam must be a finite number, got {lam}")
  )


@jax.jit
def _prior(scores, doc_lang, q_lang, lam):
  bonus = (doc_lang == q_lang[:, None]).astype(jnp.float32) * lam
  return (scores.astype(jnp.float32) + bonus).astype(
    scores.dtype
  ), jnp.isfinite(lam)


def fit_language_offsets(
  emb: ArrayLike,
  lang: ArrayLike,
  content: ArrayLike,
  n_lang: int,
  *,
  n_content: int | None = None,
) -> jax.Array:
  """Per-language offsets from parallel calibration passages.

  ``μ_ℓ = mean_{κ : p_{κ,ℓ} exists} [e(p_{κ,ℓ}) − c_κ]`` with ``c_κ = mean_{ℓ'}
  e(p_{κ,ℓ'})`` the centroid of content unit ``κ`` over the languages it has. A
  language with no passage gets a zero offset.

  Args:
    emb: float ``[N, D]`` embeddings of the calibration passages.
    lang: int ``[N]`` language ids in ``[0, n_lang)``.
    content: int ``[N]`` content ids in ``[0, n_content)`` (translations share
      an id).
    n_lang: number of languages (static int >= 1).
    n_content: number of content ids (static); default ``max(content) + 1``
      (needs concrete ``content``; pass it under jit).

  Returns:
    float32 ``[n_lang, D]``. Ids out of range raise on concrete data; under jit
    they make the output NaN.
  """
  emb = V.check_array(emb, "emb", ndim=2, dtype="float", nonempty=True)
  lang = V.check_array(lang, "lang", shape=(emb.shape[0],), dtype="int")
  content = V.check_array(
    content, "content", shape=(emb.shape[0],), dtype=("int")
  )
  n_lang = V.check_int(n_lang, "n_lang", min_value=1)
  if n_content is None:
    if not V.is_concrete(content):
      raise ValueError(
        "n_content must be given when content is traced (e.g. under jax.jit)"
      )
    n_content = int(jnp.max(content)) + 1
  n_content = V.check_int(n_content, "n_content", min_value=1)
  mu, ok_l, ok_c = _fit(emb, lang, content, n_lang, n_content)
  ok = V.check_values(ok_l, f"lang must lie in [0, n_lang) = [0, {n_lang})")
  ok = ok & V.check_values(
    ok_c, f"content must lie in [0, n_content) = [0, {n_content})"
  )
  return V.poison(mu, ok)


@functools.partial(jax.jit, static_argnames=("n_lang", "n_content"))
def _fit(emb, lang, content, n_lang, n_content):
  emb = emb.astype(jnp.float32)
  ones = jnp.ones(emb.shape[0], jnp.float32)
  c_sum = jax.ops.segment_sum(emb, content, n_content)
  c_cnt = jax.ops.segment_sum(ones, content, n_content)
  centroid = c_sum / jnp.maximum(c_cnt, 1.0)[:, None]
  resid = emb - centroid[content]
  l_sum = jax.ops.segment_sum(resid, lang, n_lang)
  l_cnt = jax.ops.segment_sum(ones, lang, n_lang)
  mu = l_sum / jnp.maximum(l_cnt, 1.0)[:, None]
  ok_l = jnp.all((lang >= 0) & (lang < n_lang))
  ok_c = jnp.all((content >= 0) & (content < n_content))
  return mu, ok_l, ok_c


def remove_language_offsets(
  emb: ArrayLike, lang: ArrayLike, offsets: ArrayLike
) -> jax.Array:
  """``e'(d) = (e(d) − μ_{lang(d)}) / ‖e(d) − μ_{lang(d)}‖``.

  Args:
    emb: float ``[N, D]``.
    lang: int ``[N]`` in ``[0, L)``.
    offsets: float ``[L, D]`` from :func:`fit_language_offsets`.

  Returns:
    float32 ``[N, D]`` unit rows. Languages out of range raise on concrete data;
    under jit they make the output NaN.
  """
  emb = V.check_array(emb, "emb", ndim=2, dtype="float")
  lang = V.check_array(lang, "lang", shape=(emb.shape[0],), dtype="int")
  offsets = V.check_array(offsets, "offsets", ndim=2, dtype="float")
  if offsets.shape[1] != emb.shape[1]:
    raise ValueError(
      f"offsets must have shape [n_lang, D] with D = {emb.shape[1]} (emb's), "
      f"got {offsets.shape}"
    )
  out, ok = _remove(emb, lang, offsets)
  msg = (
    f"lang must lie in [0, n_lang) = [0, {offsets.shape[0]}) (offsets' rows)"
  )
  return V.poison(out, V.check_values(ok, msg))


@jax.jit
def _remove(emb, lang, offsets):
  x = (
    emb.astype(jnp.float32)
    - offsets.astype(jnp.float32)[jnp.clip(lang, 0, None)]
  )
  x = x / jnp.maximum(jnp.linalg.norm(x, axis=1, keepdims=True), 1e-12)
  return x, jnp.all((lang >= 0) & (lang < offsets.shape[0]))
