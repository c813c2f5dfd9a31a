"""The retrieval benchmark built from a parsed corpus: splits, queries, leakage
masks, baselines.

Project reconstruction of the evaluation protocol (spec §3.4): the files are
split at random (:func:`file_split`) and each split's queries drawn from its
files (:func:`split_queries`); a single-query search asks for a declaration by
its doc comment with the name removed (:func:`doc_query`); a global premise
query is a theorem's statement and doc comment (:func:`premise_query_text`) and
may retrieve nothing from the theorem onward in its own file
(:func:`available_mask`). The premise baselines that read no informal text
(:func:`baseline_rankings`) rank by the training theorems' premise counts, at
random, or by BM25 over the statements.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from jaxpapers.leansearch._coq import Declaration, PremiseQuery, premise_queries
from jaxpapers.leansearch._retrieve import BM25Index


def doc_query(decl: Declaration) -> str:
  """A declaration's doc comment as a search query, without the answer in it.

  Args:
    decl: the declaration.

  Returns:
    its doc comment with bracketed identifiers (``[foo]``) and its own name
    removed, whitespace collapsed (``""`` without a doc comment).
  """
  if not isinstance(decl, Declaration):
    raise TypeError(f"decl must be a Declaration, got {type(decl).__name__}")
  text = re.sub(r"\[[^\]]*\]", " ", decl.doc)
  text = re.sub(rf"\b{re.escape(decl.name)}\b", " ", text)
  return " ".join(text.split())


def premise_query_text(
  decls: Sequence[Declaration], query: PremiseQuery
) -> str:
  """A global premise query's text: its theorem's statement and doc comment.

  Args:
    decls: the [N] declarations.
    query: the premise query (:func:`premise_queries`); ``query.decl`` indexes
      ``decls``.

  Returns:
    ``"<statement> <doc>"``, stripped.
  """
  if not 0 <= query.decl < len(decls):
    raise ValueError(
      f"query.decl must index decls (0..{len(decls) - 1}), got {query.decl}"
    )
  d = decls[query.decl]
  return f"{d.statement} {d.doc}".strip()


def available_mask(
  decls: Sequence[Declaration], rows: Sequence[int]
) -> np.ndarray:
  """What each query theorem may retrieve: everything but itself and what
  follows it in its file.

  Args:
    decls: the [N] declarations (``file`` and ``index`` within the file are
      read).
    rows: the [Q] query theorems' indices into ``decls``.

  Returns:
    bool ``[Q, N]``: False at the theorem and at every later declaration of its
    file.
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
  """The top ``k`` documents by score among the valid ones, best first (ties:
  lower index).

  Args:
    scores: float ``[Q, N]``.
    valid: bool ``[Q, N]``; invalid documents rank last (after every valid one).
    k: how many to return, ``1 <= k <= N``.

  Returns:
    int32 ``[Q, k]`` document indices.
  """
  if np.shape(scores) != np.shape(valid) or np.ndim(scores) != 2:
    raise ValueError(
      "scores and valid must both have shape [Q, N], "
      f"got {np.shape(scores)} and {np.shape(valid)}"
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
    valid: bool ``[Q, N]`` what each query may retrieve
      (:func:`available_mask`).
    rng: the generator of the random ranking (draws ``[Q, N]`` uniforms).
    k: the ranking's length.

  Returns:
    int32 ``[Q, k]`` rankings: ``frequency`` (the premises used by the most
    training theorems, counting each premise group once per theorem:
    input-independent), ``random`` and ``bm25_statements`` (BM25 over the
    statements).
  """
  n = len(statements)
  if np.shape(valid) != (len(queries), n):
    raise ValueError(
      f"valid must have shape [Q, N] = [{len(queries)}, {n}], "
      f"got {np.shape(valid)}"
    )
  freq = np.zeros(n)
  for q in train_queries:
    for g in q.groups:
      freq[list(g)] += 1.0
  out = {"frequency": rank_by_scores(np.tile(freq, (len(valid), 1)), valid, k)}
  out["random"] = rank_by_scores(rng.random((len(valid), n)), valid, k)
  out["bm25_statements"] = BM25Index(list(statements)).search(
    list(queries), k, valid=valid
  )[0]
  return out


def file_split(
  files: Sequence[str],
  rng: np.random.Generator,
  *,
  test_fraction: float = 0.1,
  val_fraction: float = 0.1,
) -> tuple[set[str], set[str], set[str]]:
  """A random split of a corpus's files into training, validation and test
  files.

  Args:
    files: the F file names (sorted, for a split that depends on ``rng`` only).
    rng: draws one permutation of the files.
    test_fraction: share of the files in the test set (at least one file).
    val_fraction: share in the validation set (at least one file when F >= 3,
      else none).

  Returns:
    ``(train, val, test)`` sets of file names; the first test files of the
    permutation, then the validation files, the rest for training.
  """
  if not files:
    raise ValueError("files must name at least one file")
  for name, f in (
    ("test_fraction", test_fraction),
    ("val_fraction", val_fraction),
  ):
    if not 0.0 <= f < 1.0:
      raise ValueError(f"{name} must be in [0, 1), got {f}")
  order = [files[int(i)] for i in rng.permutation(len(files))]
  n_test = max(1, round(test_fraction * len(files)))
  n_val = max(1, round(val_fraction * len(files))) if len(files) >= 3 else 0
  return (
    set(order[n_test + n_val :]),
    set(order[n_test : n_test + n_val]),
    set(order[:n_test]),
  )


def split_queries(
  decls: Sequence[Declaration],
  train_files: set[str],
  test_files: set[str],
  rng: np.random.Generator,
  *,
  min_doc_words: int = 5,
  min_premises: int = 2,
  max_premises: int = 10,
  max_single: int = 400,
  max_premise: int = 200,
) -> dict[str, list]:
  """The single-query and premise queries of a file split.

  A declaration is a single query when its :func:`doc_query` has at least
  ``min_doc_words`` words; a theorem is a premise query when
  :func:`premise_queries` keeps it. Test queries beyond the caps are subsampled
  without replacement by ``rng`` (single queries first).

  Args:
    decls: the [N] declarations.
    train_files: the training files (:func:`file_split`).
    test_files: the test files.
    rng: draws the subsamples.
    min_doc_words: the fewest words of a usable doc query.
    min_premises: the fewest premise groups of a premise query.
    max_premises: the most premise groups of a premise query.
    max_single: the most single test queries.
    max_premise: the most premise test queries.

  Returns:
    ``single_train`` / ``single_test``: declaration ids in order; ``p_train`` /
    ``p_test``: :class:`PremiseQuery` lists in declaration order.

  Raises:
    ValueError: the test files hold no single or no premise query.
  """

  def docs_ok(d):
    return d.doc and len(doc_query(d).split()) >= min_doc_words

  single_train = [
    i for i, d in enumerate(decls) if d.file in train_files and docs_ok(d)
  ]
  single_test = [
    i for i, d in enumerate(decls) if d.file in test_files and docs_ok(d)
  ]
  if len(single_test) > max_single:
    single_test = sorted(
      rng.choice(single_test, max_single, replace=False).tolist()
    )
  pqs = premise_queries(
    decls, min_premises=min_premises, max_premises=max_premises
  )
  p_train = [q for q in pqs if decls[q.decl].file in train_files]
  p_test = [q for q in pqs if decls[q.decl].file in test_files]
  if len(p_test) > max_premise:
    keep = sorted(rng.choice(len(p_test), max_premise, replace=False).tolist())
    p_test = [p_test[i] for i in keep]
  if not single_test or not p_test:
    raise ValueError(
      f"no test queries ({len(single_test)} single, {len(p_test)} premise); "
      "use a larger corpus or smaller min_doc_words/min_premises"
    )
  return {
    "single_train": single_train,
    "single_test": single_test,
    "p_train": p_train,
    "p_test": p_test,
  }
