"""The retrieval benchmark built from a parsed corpus: query texts, leakage masks, baselines.

Project reconstruction of the evaluation protocol (spec §3.4): a single-query search asks for a
declaration by its doc comment with the name removed (:func:`doc_query`); a global premise
query is a theorem's statement and doc comment (:func:`premise_query_text`) and may retrieve
nothing from the theorem onward in its own file (:func:`available_mask`). The premise baselines
that read no informal text (:func:`baseline_rankings`) rank by the training theorems' premise
counts, at random, or by BM25 over the statements.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from jaxpapers.leansearch._coq import Declaration, PremiseQuery
from jaxpapers.leansearch._retrieve import BM25Index


def doc_query(decl: Declaration) -> str:
  """A declaration's doc comment as a search query, without the answer in it.

  Args:
    decl: the declaration.

  Returns:
    its doc comment with bracketed identifiers (``[foo]``) and its own name removed,
    whitespace collapsed (``""`` without a doc comment).
  """
  if not isinstance(decl, Declaration):
    raise TypeError(f"decl must be a Declaration, got {type(decl).__name__}")
  text = re.sub(r"\[[^\]]*\]", " ", decl.doc)
  text = re.sub(rf"\b{re.escape(decl.name)}\b", " ", text)
  return " ".join(text.split())


def premise_query_text(decls: Sequence[Declaration], query: PremiseQuery) -> str:
  """A global premise query's text: its theorem's statement and doc comment.

  Args:
    decls: the [N] declarations.
    query: the premise query (:func:`premise_queries`); ``query.decl`` indexes ``decls``.

  Returns:
    ``"<statement> <doc>"``, stripped.
  """
  if not 0 <= query.decl < len(decls):
    raise ValueError(f"query.decl must index decls (0..{len(decls) - 1}), got {query.decl}")
  d = decls[query.decl]
  return f"{d.statement} {d.doc}".strip()


def available_mask(decls: Sequence[Declaration], rows: Sequence[int]) -> np.ndarray:
  """What each query theorem may retrieve: everything but itself and what follows it in its file.

  Args:
    decls: the [N] declarations (``file`` and ``index`` within the file are read).
    rows: the [Q] query theorems' indices into ``decls``.

  Returns:
    bool ``[Q, N]``: False at the theorem and at every later declaration of its file.
  """
  n = len(decls)
  bad = [r for r in rows if not 0 <= r < n]
  if bad:
    raise ValueError(f"rows must index decls (0..{n - 1}), got {bad[:3]}")
  by_file: dict[str, list[int]] = {}
  for i, d in enumerate(decls):
    by_file.setdefault(d.file, []).append(i)
  v = np.ones((len(rows), n), bool)
  for r, i in enumerate(rows):
    ids = np.asarray(by_file[decls[i].file])
    v[r, ids[[decls[j].index >= decls[i].index for j in ids]]] = False
  return v


def rank_by_scores(scores: np.ndarray, valid: np.ndarray, k: int) -> np.ndarray:
  """The top ``k`` documents by score among the valid ones, best first (ties: lower index).

  Args:
    scores: float ``[Q, N]``.
    valid: bool ``[Q, N]``; invalid documents rank last (after every valid one).
    k: how many to return, ``1 <= k <= N``.

  Returns:
    int32 ``[Q, k]`` document indices.
  """
  if np.shape(scores) != np.shape(valid) or np.ndim(scores) != 2:
    raise ValueError(
      f"scores and valid must both have shape [Q, N], got {np.shape(scores)} and {np.shape(valid)}"
    )
  if not 1 <= k <= np.shape(scores)[1]:
    raise ValueError(f"k must be in 1..{np.shape(scores)[1]}, got {k}")
  s = np.where(valid, scores, -np.inf)
  return np.argsort(-s, axis=1, kind="stable")[:, :k].astype(np.int32)


def baseline_rankings(
  statements: Sequence[str],
  train_queries: Sequence[PremiseQuery],
  queries: Sequence[str],
  valid: np.ndarray,
  rng: np.random.Generator,
  k: int,
) -> dict[str, np.ndarray]:
  """The premise rankings of the baselines that read no informal text.

  Args:
    statements: the [N] declarations' statements.
    train_queries: the training theorems' premise queries.
    queries: the [Q] test queries' texts (:func:`premise_query_text`).
    valid: bool ``[Q, N]`` what each query may retrieve (:func:`available_mask`).
    rng: the generator of the random ranking (draws ``[Q, N]`` uniforms).
    k: the ranking's length.

  Returns:
    int32 ``[Q, k]`` rankings: ``frequency`` (the premises used by the most training
    theorems, counting each premise group once per theorem: input-independent), ``random``
    and ``bm25_statements`` (BM25 over the statements).
  """
  n = len(statements)
  if np.shape(valid) != (len(queries), n):
    raise ValueError(f"valid must have shape [Q, N] = [{len(queries)}, {n}], got {np.shape(valid)}")
  freq = np.zeros(n)
  for q in train_queries:
    for g in q.groups:
      freq[list(g)] += 1.0
  out = {"frequency": rank_by_scores(np.tile(freq, (len(valid), 1)), valid, k)}
  out["random"] = rank_by_scores(rng.random((len(valid), n)), valid, k)
  out["bm25_statements"] = BM25Index(list(statements)).search(list(queries), k, valid=valid)[0]
  return out
