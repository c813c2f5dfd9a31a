"""Reasoning mode: the sketch -> retrieve -> filter -> judge loop over a
retrieval substrate.

Control flow (as in the reference's ``reasoning/run.py``)::

  for attempt in 0..big_loop:
    queries = planner(statement, informal, history)       # sketch: sub-queries
    lists   = retriever(queries, top_k=search_top_k)      # standard mode, batched
    kept    = filter(statement, queries, lists)           # relevant docs per sub-query
    fused   = discounted_fusion(all kept lists so far)    # sum_s 1 / log2(i + 2)
    good, reason = judge(statement, fused, history)
    if good: break                                        # else feed plan + reason back

The output is ``fused`` with ``output_top_k`` entries (``-1`` padded): never a
duplicate. The planner, filter and judge are callables: LLM-backed on a GPU
host, or the deterministic proxies below (project reconstruction of the prompts'
roles, no LLM).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence

import numpy as np

from jaxpapers.core import validation as V
from jaxpapers.leansearch._coq import Declaration, identifiers
from jaxpapers.leansearch._metrics import discounted_fusion


@dataclasses.dataclass(frozen=True)
class ReasoningTrace:
  """What one reasoning-mode run did.

  Attributes:
    ids: int32 [output_top_k] fused ranking, best first, -1 padded, no
      duplicates.
    scores: float32 [output_top_k] fused scores.
    round_ids: int32 [big_loop + 1, output_top_k] the fused ranking after each
      round; rows after an early stop repeat the final ranking (fixed length
      across rounds).
    queries: the sub-queries of each round actually run.
    rounds: number of rounds run (1 .. big_loop + 1).
    judged_good: whether the judge stopped the loop.
    reasons: the judge's reason per round.
  """

  ids: np.ndarray
  scores: np.ndarray
  round_ids: np.ndarray
  queries: tuple[tuple[str, ...], ...]
  rounds: int
  judged_good: bool
  reasons: tuple[str, ...]


class IterativeRetrieval:
  """The reasoning-mode loop (see the module docstring).

  Args:
    planner: ``(statement, informal, history) -> list[str]`` sub-queries;
      ``history`` is the list of earlier rounds, each a dict with ``queries``,
      ``fused`` (ids) and ``reason``.
    retriever: ``(queries, *, valid, k) -> (ids int [S, k], scores float [S,
      k])``, e.g. a ``TwoStageRetriever``.
    filter: ``(statement, queries, ids, scores) -> bool [S, k]`` keep mask.
    judge: ``(statement, fused_ids, history) -> (good: bool, reason: str)``.
    n_docs: corpus size.
    big_loop: extra rounds after the first (reference default 3).
    search_top_k: documents per sub-query (reference 30).
    output_top_k: length of the fused output (reference 100).
  """

  def __init__(
    self,
    planner: Callable,
    retriever: Callable,
    filter: Callable,
    judge: Callable,
    *,
    n_docs: int,
    big_loop: int = 3,
    search_top_k: int = 30,
    output_top_k: int = 100,
  ):
    for name, f in (
      ("planner", planner),
      ("retriever", retriever),
      ("filter", filter),
    ):
      if not callable(f):
        raise TypeError(f"{name} must be callable, got {type(f).__name__}")
    if not callable(judge):
      raise TypeError(f"judge must be callable, got {type(judge).__name__}")
    self.n_docs = V.check_int(n_docs, "n_docs", min_value=1)
    self.big_loop = V.check_int(big_loop, "big_loop", min_value=0)
    self.search_top_k = V.check_int(
      search_top_k, "search_top_k", min_value=1, max_value=n_docs
    )
    self.output_top_k = V.check_int(
      output_top_k, "output_top_k", min_value=1, max_value=n_docs
    )
    self.planner, self.retriever, self.filter, self.judge = (
      planner,
      retriever,
      filter,
      judge,
    )

  def run(
    self, statement: str, informal: str = "", *, valid: np.ndarray | None = None
  ) -> ReasoningTrace:
    """Runs the loop for one theorem.

    Args:
      statement: the theorem's formal statement.
      informal: its informal description, passed to the planner (``""`` for
        none).
      valid: optional bool [n_docs]; False excludes a document from every round
        (leakage).

    Returns:
      The :class:`ReasoningTrace`: the fused ranking (int32 [output_top_k]), its
      scores and what each round did.
    """
    if not isinstance(statement, str):
      raise TypeError(
        f"statement must be a str, got {type(statement).__name__}"
      )
    if valid is not None:
      valid = np.asarray(valid, bool)
      if valid.shape != (self.n_docs,):
        raise ValueError(
          f"valid must have shape ({self.n_docs},), got {valid.shape}"
        )
    history: list[dict] = []
    kept_lists: list[np.ndarray] = []
    round_ids, queries_run, reasons = [], [], []
    ids = np.full(self.output_top_k, -1, np.int32)
    scores = np.zeros(self.output_top_k, np.float32)
    good = False
    for _ in range(self.big_loop + 1):
      queries = [
        q
        for q in dict.fromkeys(self.planner(statement, informal, history))
        if q.strip()
      ]
      if not queries:
        queries = [statement]
      vmask = (
        None
        if valid is None
        else np.broadcast_to(valid, (len(queries), self.n_docs))
      )
      r_ids, r_scores = self.retriever(
        queries, valid=vmask, k=self.search_top_k
      )
      r_ids = np.asarray(r_ids)
      keep = np.asarray(
        self.filter(statement, queries, r_ids, np.asarray(r_scores)), bool
      )
      if keep.shape != r_ids.shape:
        raise ValueError(
          f"filter must return a bool mask of shape {r_ids.shape}, "
          f"got {keep.shape}"
        )
      for row, k in zip(r_ids, keep):  # compact: i counts kept documents only
        kept = row[k]
        kept_lists.append(
          np.pad(kept, (0, self.search_top_k - kept.size), constant_values=-1)
        )
      lists = np.stack(kept_lists)
      # few compiled shapes
      rows = max(8, 1 << (lists.shape[0] - 1).bit_length())
      lists = np.pad(
        lists, ((0, rows - lists.shape[0]), (0, 0)), constant_values=-1
      )
      f_ids, f_scores = discounted_fusion(
        lists, lists >= 0, self.n_docs, self.output_top_k
      )
      ids, scores = np.asarray(f_ids), np.asarray(f_scores)
      good, reason = self.judge(statement, ids, history)
      history.append({"queries": queries, "fused": ids, "reason": reason})
      round_ids.append(ids)
      queries_run.append(tuple(queries))
      reasons.append(str(reason))
      if good:
        break
    rounds = len(round_ids)
    round_ids += [ids] * (self.big_loop + 1 - rounds)
    return ReasoningTrace(
      ids=ids,
      scores=scores,
      round_ids=np.stack(round_ids),
      queries=tuple(queries_run),
      rounds=rounds,
      judged_good=bool(good),
      reasons=tuple(reasons),
    )


_TURNSTILE = re.compile(r"\s*(?:->|→)\s*")


def split_statement(statement: str) -> tuple[list[str], str]:
  """Hypotheses and conclusion of a statement ``... : H1 -> H2 -> C`` (top-level arrows).

  Binders (``forall x y,``) are dropped; arrows inside parentheses do not split.

  Args:
    statement: a declaration sentence, e.g. ``"Lemma foo : forall n, P n -> Q
      n."``; the part after its first top-level ``:`` is split.

  Returns:
    ``(hypotheses, conclusion)`` with whitespace collapsed; ``([], "")`` for an
    empty body.
  """
  if not isinstance(statement, str):
    raise TypeError(f"statement must be a str, got {type(statement).__name__}")
  depth, cut = 0, -1
  for i, c in enumerate(statement):
    depth += c in "([{"
    depth -= c in ")]}"
    if (
      c == ":"
      and depth == 0
      and statement[i + 1 : i + 2] != "="
      and statement[i - 1] != ":"
    ):
      cut = i
      break
  body = statement[cut + 1 :]
  body = re.sub(r"\bforall\b[^,]*,", " ", body)
  parts, depth, cur = [], 0, ""
  i = 0
  while i < len(body):
    c = body[i]
    depth += c in "([{"
    depth -= c in ")]}"
    if depth == 0 and body.startswith("->", i):
      parts.append(cur)
      cur = ""
      i += 2
      continue
    cur += c
    i += 1
  parts.append(cur)
  parts = [" ".join(p.split()) for p in parts if p.strip()]
  if not parts:
    return [], ""
  return parts[:-1], parts[-1]


class ProxyPlanner:
  """Deterministic sketch (reconstruction): round 1 asks for the statement, its
  hypotheses, its conclusion and its constants; round r > 1 adds
  pseudo-relevance-feedback queries, the statements of the top ``prf`` documents
  of round r - 1.

  Args:
    doc_statements: the N documents' statements (the feedback queries).
    names: the corpus's short names; a statement's identifiers among them form
      the constants query.
    prf: pseudo-relevance-feedback documents per later round (>= 0).

  Call: ``planner(statement, informal, history) -> list[str]`` sub-queries.
  """

  def __init__(
    self,
    doc_statements: Sequence[str],
    *,
    names: frozenset[str] = frozenset(),
    prf: int = 3,
  ):
    self.doc_statements = list(doc_statements)
    self.names = frozenset(names)
    self.prf = V.check_int(prf, "prf", min_value=0)

  def __call__(self, statement, informal, history):
    if not history:
      hyps, concl = split_statement(statement)
      consts = [
        t for t in dict.fromkeys(identifiers(statement)) if t in self.names
      ]
      qs = [statement, *hyps, concl]
      if informal:
        qs.append(informal)
      if consts:
        qs.append(" ".join(consts))
      return qs
    prev = [int(i) for i in history[-1]["fused"][: self.prf] if i >= 0]
    return [*history[0]["queries"], *(self.doc_statements[i] for i in prev)]


class ProxyFilter:
  """Keeps a candidate when it is within the top ``keep_top`` of its sub-query,
  or shares a constant (a corpus name) with the goal statement (reconstruction
  of the LLM filter).

  Args:
    doc_constants: per document, the corpus names it mentions.
    names: the corpus's short names (the goal's constants are its identifiers
      among them).
    keep_top: candidates kept unconditionally at the top of each sub-query's
      list (>= 0).

  Call: ``filter(statement, queries, ids int [S, k], scores) -> bool [S, k]``
  (padding ids ``-1`` are never kept).
  """

  def __init__(
    self,
    doc_constants: Sequence[frozenset[str]],
    *,
    names: frozenset[str],
    keep_top: int = 5,
  ):
    self.doc_constants = list(doc_constants)
    self.names = frozenset(names)
    self.keep_top = V.check_int(keep_top, "keep_top", min_value=0)

  def __call__(self, statement, queries, ids, scores):
    goal = {t for t in identifiers(statement) if t in self.names}
    keep = np.zeros(ids.shape, bool)
    keep[:, : self.keep_top] = True
    for (r, c), i in np.ndenumerate(ids):
      if i >= 0 and goal & self.doc_constants[i]:
        keep[r, c] = True
    return keep & (ids >= 0)


class StableTopJudge:
  """ "good" once the fused top-``k`` set stops changing between rounds
  (reconstruction).

  Args:
    k: size of the compared top set (>= 1).

  Call: ``judge(statement, fused_ids, history) -> (good, reason)``; never good
  in round 1.
  """

  def __init__(self, k: int = 10):
    self.k = V.check_int(k, "k", min_value=1)

  def __call__(self, statement, fused, history):
    if not history:
      return False, "first round"
    same = set(np.asarray(fused)[: self.k].tolist()) == set(
      np.asarray(history[-1]["fused"])[: self.k].tolist()
    )
    return same, "top set stable" if same else "top set changed"


def proxy_reasoning(
  decls: Sequence[Declaration],
  retriever: Callable,
  *,
  k: int = 10,
  big_loop: int = 3,
  search_top_k: int = 30,
  output_top_k: int = 100,
  prf: int = 3,
  keep_top: int = 5,
) -> IterativeRetrieval:
  """Reasoning mode over a corpus with the deterministic proxies (no LLM).

  The loop of :class:`IterativeRetrieval` with :class:`ProxyPlanner` (feedback
  from the declarations' statements), :class:`ProxyFilter` (a document's
  constants: the corpus's short names among its statement's identifiers) and
  :class:`StableTopJudge` (top ``k``).

  Args:
    decls: the [N] declarations (the documents, in the retriever's order).
    retriever: the first stage, ``(queries, *, valid, k) -> (ids [S, k], scores
      [S, k])`` (e.g. ``TwoStageRetriever.search``).
    k: the judge's top set.
    big_loop: extra rounds after the first.
    search_top_k: documents per sub-query, capped at N.
    output_top_k: length of the fused output, capped at N.
    prf: pseudo-relevance-feedback documents per later round.
    keep_top: candidates the filter keeps at the top of each sub-query's list.

  Returns:
    The :class:`IterativeRetrieval`; ``run(statement, valid=bool [N])`` gives a
    :class:`ReasoningTrace`.
  """
  if not decls:
    raise ValueError("decls must hold at least one declaration")
  n, names = len(decls), frozenset(d.name for d in decls)
  doc_consts = [frozenset(identifiers(d.statement)) & names for d in decls]
  return IterativeRetrieval(
    ProxyPlanner([d.statement for d in decls], names=names, prf=prf),
    retriever,
    ProxyFilter(doc_consts, names=names, keep_top=keep_top),
    StableTopJudge(k=k),
    n_docs=n,
    big_loop=big_loop,
    search_top_k=min(search_top_k, n),
    output_top_k=min(output_top_k, n),
  )
