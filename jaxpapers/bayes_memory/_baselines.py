"""Retrieval baselines behind one interface, turn features, and the paper's
retrieval metrics.

Every retriever returns scores float [..., N] (higher = retrieve first; padding
turns -inf): ``'similarity'`` (cosine of the LM's mean-pooled hidden states),
``'bm25'`` (``bm25s``), ``'recency'`` (newest first) and ``'random'``. The
context-level baselines "no memory" and "all memory" need no scores.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpapers.core import validation as V

if TYPE_CHECKING:
  from jaxpapers import lm

RETRIEVERS = ("similarity", "bm25", "recency", "random")


def mean_pooled_features(
  params: lm.Params,
  ids: ArrayLike,
  mask: ArrayLike,
  *,
  config: lm.LMConfig,
  layer: int = -1,
) -> jax.Array:
  """Mean over real tokens of the residual stream entering ``layer`` of a
  ``jaxpapers.lm`` model.

  Args:
    params: LM parameters.
    ids: int [B, T] token ids (right- or left-padded).
    mask: bool [B, T], True at real tokens (every row needs one).
    config: the model's ``LMConfig`` (static).
    layer: which layer's input (static; -1 = the last layer's input).

  Returns:
    float32 [B, d].
  """
  ids = V.check_array(ids, "ids", dtype="int", ndim=2)
  mask = V.check_array(mask, "mask", dtype="bool", shape=ids.shape)
  layer = V.check_int(
    layer, "layer", min_value=-config.n_layers, max_value=config.n_layers - 1
  )
  ok = V.check_values(
    jnp.all(jnp.any(mask, axis=1)), "mask must hold a token in every row"
  )
  return V.poison(_pool_jit(params, ids, mask, config=config, layer=layer), ok)


@functools.partial(jax.jit, static_argnames=("config", "layer"))
def _pool_jit(params, ids, mask, *, config, layer):
  from jaxpapers import lm

  _, _, cap = lm.forward(
    params,
    ids,
    config=config,
    mask=mask,
    capture=lm.Capture(residual=True),
    logits_at=("none"),
  )
  h = cap["residual"][:, layer]  # [B, T, d]
  w = mask.astype(jnp.float32)[..., None]
  return (h * w).sum(1) / jnp.maximum(w.sum(1), 1.0)


def cosine_scores(
  f_turn: ArrayLike, f_query: ArrayLike, valid: ArrayLike
) -> jax.Array:
  """cos(f_m_i, f_x) per turn; -inf at padding.

  Args:
    f_turn: float [..., N, d] turn features.
    f_query: float [..., d] query features.
    valid: bool [..., N], False at padding turns.

  Returns:
    float [..., N].
  """
  f_turn = V.check_array(f_turn, "f_turn", dtype="float", ndim=range(2, 8))
  f_query = V.check_array(
    f_query,
    "f_query",
    dtype="float",
    shape=f_turn.shape[:-2] + f_turn.shape[-1:],
  )
  valid = V.check_array(valid, "valid", dtype="bool", shape=f_turn.shape[:-1])
  num = jnp.einsum("...nd,...d->...n", f_turn, f_query)
  den = (
    jnp.linalg.norm(f_turn, axis=-1)
    * jnp.linalg.norm(f_query, axis=-1)[..., None]
  )
  return jnp.where(valid, num / jnp.maximum(den, 1e-12), -jnp.inf)


def recency_scores(valid: ArrayLike) -> jax.Array:
  """Turn index + 1 (newest first) at valid turns, -inf at padding.

  Args:
    valid: bool [..., N], False at padding turns.

  Returns:
    float32 [..., N]: ``n + 1`` at turn ``n``, -inf at padding.
  """
  valid = V.check_array(valid, "valid", dtype="bool", ndim=range(1, 8))
  n = jnp.arange(1, valid.shape[-1] + 1, dtype=jnp.float32)
  return jnp.where(valid, n, -jnp.inf)


def random_scores(key: jax.Array, valid: ArrayLike) -> jax.Array:
  """Uniform random scores at valid turns, -inf at padding.

  Args:
    key: a typed PRNG key (``jax.random.key``).
    valid: bool [..., N], False at padding turns.

  Returns:
    float32 [..., N], uniform in [0, 1) at valid turns, -inf at padding.
  """
  valid = V.check_array(valid, "valid", dtype="bool", ndim=range(1, 8))
  if not (
    isinstance(key, jax.Array)
    and jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
  ):
    raise TypeError(
      f"key must be a typed PRNG key (jax.random.key), got {type(key).__name__}"
    )
  return jnp.where(valid, jax.random.uniform(key, valid.shape), -jnp.inf)


def bm25_scores(
  turns: Sequence[str], query: str, *, n_max: int | None = None
) -> np.ndarray:
  """BM25 (``bm25s``, Lucene variant, English stop words) of ``query`` against
  ``turns``.

  Host-side: the index is built over this one history.

  Args:
    turns: N history turns.
    query: the user's input.
    n_max: pad to this many (default N).

  Returns:
    float32 [n_max], -inf at padding.

  Raises:
    ImportError: ``bm25s`` is not installed (``pip install
      'jaxpapers[bayes_memory]'``).
  """
  try:
    import bm25s
  except (
    ImportError
  ) as e:  # pragma: no cover - exercised by monkeypatching in tests
    raise ImportError(
      "bm25_scores needs the 'bm25s' package: pip install "
      "'jaxpapers[bayes_memory]'"
    ) from e
  if isinstance(turns, str) or not all(isinstance(t, str) for t in turns):
    raise TypeError("turns must be a sequence of str")
  if not isinstance(query, str):
    raise TypeError(f"query must be a str, got {type(query).__name__}")
  turns = list(turns)
  if not turns:
    raise ValueError("turns must hold at least one turn")
  n_max = (
    len(turns)
    if n_max is None
    else V.check_int(n_max, "n_max", min_value=len(turns))
  )
  out = np.full(n_max, -np.inf, np.float32)
  corpus = bm25s.tokenize(turns, stopwords="en", show_progress=False)
  retr = bm25s.BM25()
  retr.index(corpus, show_progress=False)
  # With return_ids=False tokenize gives one list of token strings per text.
  qtok = cast(
    list[str],
    bm25s.tokenize(
      [query], stopwords="en", show_progress=False, return_ids=False
    )[0],
  )
  out[: len(turns)] = retr.get_scores(qtok) if qtok else 0.0
  return out


def retrieval_scores(
  method: str,
  *,
  valid: ArrayLike,
  f_turn: ArrayLike | None = None,
  f_query: ArrayLike | None = None,
  turns: Sequence[str] | None = None,
  query: str | None = None,
  key: jax.Array | None = None,
) -> jax.Array | np.ndarray:
  """One interface over the baselines: scores float [..., N] for ``method`` in
  RETRIEVERS.

  Args:
    method: 'similarity' (needs f_turn, f_query), 'bm25' (needs turns, query;
      one history), 'recency', or 'random' (needs key).
    valid: bool [..., N].
    f_turn: float [..., N, d] turn features ('similarity').
    f_query: float [..., d] query features ('similarity').
    turns: the N history turns ('bm25').
    query: the user's input ('bm25').
    key: a typed PRNG key ('random').

  Returns:
    float [..., N] (higher = more relevant), -inf at padding; a NumPy array for
    'bm25'.
  """
  if method not in RETRIEVERS:
    raise ValueError(f"method must be one of {RETRIEVERS}, got {method!r}")
  if method == "similarity":
    if f_turn is None or f_query is None:
      raise ValueError("method='similarity' needs f_turn and f_query")
    return cosine_scores(f_turn, f_query, valid)
  if method == "recency":
    return recency_scores(valid)
  if method == "random":
    if key is None:
      raise ValueError("method='random' needs key")
    return random_scores(key, valid)
  if turns is None or query is None:
    raise ValueError("method='bm25' needs turns and query")
  valid = np.asarray(valid)
  s = bm25_scores(turns, query, n_max=valid.shape[-1])
  return np.where(valid, s, -np.inf).astype(np.float32)


def _check_scores(scores, valid, k):
  scores = V.check_array(scores, "scores", dtype="float", ndim=2)
  valid = V.check_array(valid, "valid", dtype="bool", shape=jnp.shape(scores))
  k = V.check_int(k, "k", min_value=1, max_value=scores.shape[1])
  ok = V.check_values(
    ~jnp.any(jnp.isnan(scores) & valid), "scores must not be NaN at valid turns"
  )
  s = jnp.where(valid, scores, -jnp.inf)
  _, idx = jax.lax.top_k(s, k)
  picked_valid = jnp.take_along_axis(valid, idx, axis=1)
  return idx, picked_valid, ok


def evidence_recall_at_k(
  scores: ArrayLike, gold_turn: ArrayLike, valid: ArrayLike, k: int = 1
) -> jax.Array:
  """Fraction of questions whose gold turn (holding the current value) is in the
  top k.

  Args:
    scores: float [Q, N] retrieval scores.
    gold_turn: int [Q] in [0, N) (rows with -1 are ignored).
    valid: bool [Q, N], False at padding turns.
    k: the cutoff (static, in [1, N]).

  Returns:
    float32 [] (NaN when no row has a gold turn).

  Raises:
    ValueError: bad shapes; eagerly NaN scores at valid turns or a gold index >=
      N.
    Under jit those give NaN.
  """
  idx, pv, ok = _check_scores(scores, valid, k)
  gold = V.check_array(
    gold_turn, "gold_turn", dtype="int", shape=(jnp.shape(scores)[0],)
  )
  ok2 = V.check_values(
    jnp.all((gold >= -1) & (gold < jnp.shape(scores)[1])),
    "gold_turn must be in [-1, N)",
  )
  hit = jnp.any((idx == gold[:, None]) & pv, axis=1)
  has = gold >= 0
  out = jnp.sum(hit & has) / jnp.sum(has)
  return V.poison(out.astype(jnp.float32), _ok(ok, ok2))


def stale_retrieval_rate(
  scores: ArrayLike, stale_mask: ArrayLike, valid: ArrayLike, k: int = 1
) -> jax.Array:
  """Fraction of questions with a stale turn among the top k (over questions
  with stale turns).

  Args:
    scores: float [Q, N] retrieval scores.
    stale_mask: bool [Q, N], True at turns holding a superseded value.
    valid: bool [Q, N], False at padding turns.
    k: the cutoff (static, in [1, N]).

  Returns:
    float32 [] (NaN when no question has a stale turn).
  """
  idx, pv, ok = _check_scores(scores, valid, k)
  stale = V.check_array(
    stale_mask, "stale_mask", dtype="bool", shape=jnp.shape(scores)
  )
  hit = jnp.any(jnp.take_along_axis(stale, idx, axis=1) & pv, axis=1)
  has = jnp.any(stale & valid, axis=1)
  return V.poison((jnp.sum(hit & has) / jnp.sum(has)).astype(jnp.float32), ok)


def gate_auroc(g: ArrayLike, need_memory: ArrayLike) -> jax.Array:
  """AUROC of gate scores g against need_memory (ties count 1/2).

  Args:
    g: float [Q] gate scores (higher = memory needed).
    need_memory: bool [Q], the labels.

  Returns:
    float32 [] (NaN when one class is absent).
  """
  g = V.check_array(g, "g", dtype="float", ndim=1)
  y = V.check_array(need_memory, "need_memory", dtype="bool", shape=g.shape)
  ok = V.check_values(~jnp.any(jnp.isnan(g)), "g must not be NaN")
  gt = (g[:, None] > g[None, :]).astype(jnp.float32) + 0.5 * (
    g[:, None] == g[None, :]
  )
  pair = y[:, None] & ~y[None, :]
  out = jnp.sum(jnp.where(pair, gt, 0.0)) / jnp.sum(pair)
  return V.poison(out.astype(jnp.float32), ok)


def _ok(*flags):
  fl = [f for f in flags if f is not True]
  return True if not fl else functools.reduce(jnp.logical_and, fl)
