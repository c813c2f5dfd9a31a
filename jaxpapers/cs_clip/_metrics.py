"""Half-truth accuracy and pairwise caption accuracy on dual-encoder embeddings.

Half-truth (the authors' ``experiments/half_truth_vulnerability.py``): for an
image I, a correct short description c and a longer description c' = c + one
wrong detail, a *half-truth win* is s(I, c') > s(I, c) (strict), and

  HT-acc = 1 − mean 1[s(I, c') > s(I, c)],

the share of triples where the dual encoder does not prefer the half-true
caption. Ties count as not preferring it (as in the reference); ``ties`` reports
how many there were, since a constant encoder ties everywhere.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxpapers.core import validation as V


def _triple(img, a, b, names):
  """Cosines s(img, a), s(img, b), each ``[N]``, and the finiteness flag.

  One pass over the three ``[N, D]`` arrays: the five row reductions |img|², |a|², |b|²,
  <img, a>, <img, b> (float32), then s = <img, x> / (max(|img|, 1e-12) max(|x|, 1e-12)); no
  normalised copy of an array is made. Finiteness is read off the squared norms: a NaN or an
  inf entry makes its row's sum of squares non-finite (as does a finite entry beyond ~1.8e19,
  whose square overflows float32 and whose cosine would be wrong), so no elementwise
  ``isfinite`` pass over the arrays is needed.
  """
  img = V.check_array(img, names[0], ndim=2, dtype="float", nonempty=True)
  a = V.check_array(a, names[1], ndim=2, dtype="float")
  b = V.check_array(b, names[2], ndim=2, dtype="float")
  for name, x in zip(names[1:], (a, b)):
    if x.shape != img.shape:
      raise ValueError(
        f"{name} must have shape [N, D] = {list(img.shape)} like img, "
        f"got {x.shape}"
      )
  img, a, b = (x.astype(jnp.float32) for x in (img, a, b))
  sq_img, sq_a, sq_b = (jnp.sum(x * x, -1) for x in (img, a, b))
  ok = V.debug_check_values(
    jnp.isfinite(sq_img + sq_a + sq_b),
    (
      f"{', '.join(names)} must be finite (no NaN or inf, "
      "squared norms within float32 range)"
    ),
  )
  norm = lambda sq: jnp.maximum(jnp.sqrt(sq), 1e-12)
  n_img = norm(sq_img)
  s_a = jnp.sum(img * a, -1) / (n_img * norm(sq_a))
  s_b = jnp.sum(img * b, -1) / (n_img * norm(sq_b))
  return s_a, s_b, ok


def half_truth_accuracy(
  img: jax.Array, short: jax.Array, long: jax.Array, kind: jax.Array
) -> dict[str, jax.Array]:
  """Half-truth accuracy, overall and per added detail (entity / relation).

  HT-acc = mean 1[s(I, c) >= s(I, c')] with cosine s (embeddings are L2-normalised here).

  Args:
    img: ``[N, D]`` image embeddings.
    short: ``[N, D]`` embeddings of the correct short captions c.
    long: ``[N, D]`` embeddings of the half-true captions c' (c + one wrong
      detail).
    kind: ``[N]`` int, 0 = a wrong entity was added, 1 = a wrong relation.

  Returns:
    ``{'all', 'entity', 'relation', 'ties', 'n_entity', 'n_relation'}``: the
    three accuracies in [0, 1] (NaN for a kind with no triple), the fraction of
    exact ties s(I, c) = s(I, c'), and the counts.

  Under jit: non-finite embeddings or a ``kind`` outside {0, 1} give NaN.

  Example:
    >>> half_truth_accuracy(I, E_short, E_long, kinds)['relation']
  """
  s_short, s_long, ok = _triple(img, short, long, ("img", "short", "long"))
  kind = V.check_array(kind, "kind", ndim=1, dtype="intbool")
  if kind.shape != (img.shape[0],):
    raise ValueError(
      f"kind must have shape [N] = [{img.shape[0]}], got {kind.shape}"
    )
  ok_k = V.debug_check_values(
    (kind == 0) | (kind == 1), "kind must hold 0 (entity) or 1 (relation)"
  )
  correct = (s_long <= s_short).astype(jnp.float32)  # not a half-truth win
  out = {"all": correct.mean()}
  for name, k in (("entity", 0), ("relation", 1)):
    sel = kind == k
    n = sel.sum()
    out[name] = jnp.where(
      n > 0, jnp.sum(jnp.where(sel, correct, 0.0)) / jnp.maximum(n, 1), jnp.nan
    )
    out[f"n_{name}"] = n
  out["ties"] = (s_long == s_short).astype(jnp.float32).mean()
  return V.poison_floats(out, V.all_flags(ok, ok_k))


def pairwise_caption_accuracy(
  img: jax.Array, pos: jax.Array, neg: jax.Array
) -> jax.Array:
  """SugarCrepe-style accuracy: mean 1[s(I, pos) > s(I, neg)] (strict; ties are
  errors).

  Args:
    img: ``[N, D]``; pos: ``[N, D]`` correct captions; neg: ``[N, D]`` hard
      negatives.

  Returns:
    Scalar accuracy in [0, 1].

  Under jit: non-finite embeddings give NaN.
  """
  s_pos, s_neg, ok = _triple(img, pos, neg, ("img", "pos", "neg"))
  return V.poison_floats((s_pos > s_neg).astype(jnp.float32).mean(), ok)


def half_truth_outcomes(
  img: jax.Array, short: jax.Array, long: jax.Array
) -> jax.Array:
  """Per-triple half-truth outcome: 1[s(I, c) >= s(I, c')] with cosine s.

  The items whose mean over a kind is :func:`half_truth_accuracy`'s accuracy of
  that kind; kept per triple for paired intervals over test items.

  Args:
    img: ``[N, D]`` image embeddings.
    short: ``[N, D]`` embeddings of the correct short captions c.
    long: ``[N, D]`` embeddings of the half-true captions c' (c + one wrong
      detail).

  Returns:
    ``[N]`` float32 in {0, 1}: 1 where the encoder does not prefer the half-true
    caption (ties count as not preferring it).

  Under jit: non-finite embeddings give NaN.
  """
  s_short, s_long, ok = _triple(img, short, long, ("img", "short", "long"))
  return V.poison_floats((s_long <= s_short).astype(jnp.float32), ok)


def pairwise_caption_outcomes(
  img: jax.Array, pos: jax.Array, neg: jax.Array
) -> jax.Array:
  """Per-pair outcome 1[s(I, pos) > s(I, neg)] (strict; ties are errors), cosine
  s.

  Args:
    img: ``[N, D]``; pos: ``[N, D]`` correct captions; neg: ``[N, D]`` hard
      negatives.

  Returns:
    ``[N]`` float32 in {0, 1}, whose mean is :func:`pairwise_caption_accuracy`.

  Under jit: non-finite embeddings give NaN.
  """
  s_pos, s_neg, ok = _triple(img, pos, neg, ("img", "pos", "neg"))
  return V.poison_floats((s_pos > s_neg).astype(jnp.float32), ok)


def retrieval_hits(
  img: jax.Array, txt: jax.Array, ids: jax.Array
) -> tuple[jax.Array, jax.Array]:
  """Per-query R@1 hits of image -> text and text -> image retrieval over paired
  embeddings.

  Image i and text i are a pair; texts with one caption share an id, so
  retrieving any copy of the right caption is a hit. Scores are the dot products
  ``S = img @ txt^T`` (the dual encoder's similarity up to its logit scale); the
  argmax takes the first of tied scores.

  Args:
    img: ``[N, D]`` image embeddings.
    txt: ``[N, D]`` caption embeddings, ``txt[i]`` the caption of image ``i``.
    ids: ``[N]`` int caption id of each text (equal ids: equal captions).

  Returns:
    ``(i2t, t2i)``, each ``[N]`` float32 in {0, 1}: ``i2t[i] = 1[ids[argmax_j
    S_ij] = ids[i]]`` and ``t2i[j] = 1[ids[argmax_i S_ij] = ids[j]]``; their
    means are the R@1 of each direction.

  Under jit: non-finite embeddings give NaN.
  """
  img = V.check_array(img, "img", ndim=2, dtype="float", nonempty=True)
  txt = V.check_array(txt, "txt", ndim=2, dtype="float")
  ids = V.check_array(ids, "ids", ndim=1, dtype="int")
  if txt.shape != img.shape:
    raise ValueError(
      f"txt must have shape [N, D] = {list(img.shape)} like img, "
      f"got {txt.shape}"
    )
  if ids.shape != (img.shape[0],):
    raise ValueError(
      f"ids must have shape [N] = [{img.shape[0]}], got {ids.shape}"
    )
  ok = V.debug_check_values(
    jnp.isfinite(img).all() & jnp.isfinite(txt).all(),
    "img, txt must be finite (no NaN or inf)",
  )
  sim = img @ txt.T  # [N, N]
  i2t = (ids[jnp.argmax(sim, 1)] == ids).astype(jnp.float32)
  t2i = (ids[jnp.argmax(sim, 0)] == ids).astype(jnp.float32)
  return V.poison_floats(i2t, ok), V.poison_floats(t2i, ok)
