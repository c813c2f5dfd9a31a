"""Greedy selection of a set of memory turns by conditional log Bayes factor
(reconstruction).

The abstract uses one Bayes-factor signal for access (does memory help?) and
selection (which turns?). Beyond the top-k of the single-turn factors, the
natural set rule is forward greedy selection on the conditional factor of a turn
given the turns already chosen:

  S_0 = ∅,  LBF(j | S) = log p(y | S ∪ {j}, x) - log p(y | S, x),
  j* = argmax_{j ∉ S} LBF(j | S);  S <- S ∪ {j*} while LBF(j* | S) > τ and |S| < k_max.

The first step is the top-1 insertion factor (:func:`log_bayes_factors`) with the gate
1[max LBF > τ]; a stale turn whose content contradicts an already chosen newer one lowers
log p(y | ·) and is not added. Turns in a context keep their chronological order (sorted
indices). The paper does not state a set rule; this one is a reconstruction.

The LM is reached through a *set scorer*: ``score(requests) -> log p`` for a
list of ``(question, turn-index tuple)`` requests, so one step of every active
question is one batched call (:func:`make_set_scorer` builds one from a
:data:`LogprobFn`; the experiment passes its own, bucketed scorer).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import jax.numpy as jnp
import numpy as np

from jaxpapers.bayes_memory._scoring import (
  CHATML_TEMPLATE,
  LogprobFn,
  TextEncoder,
  encode_rows,
)
from jaxpapers.core import validation as V

SetScorer = Callable[[Sequence[tuple[int, tuple[int, ...]]]], np.ndarray]


@dataclasses.dataclass(frozen=True)
class GreedySelection:
  """The greedy set of one question.

  Attributes:
    selected: turn indices in the order they were added.
    gains: the conditional log Bayes factor LBF(j | S) of each added turn (nats).
    logprob: log p(y | selected, x).
    base_logprob: log p(y | ∅, x).
    n_scored: contexts scored for this question (LM rows), including the empty one.
  """

  selected: tuple[int, ...]
  gains: tuple[float, ...]
  logprob: float
  base_logprob: float
  n_scored: int


def greedy_select(
  score: SetScorer, n_turns: Sequence[int], *, k_max: int, tau: float = 0.0
) -> list[GreedySelection]:
  """Forward greedy selection by conditional log Bayes factor, batched over
  questions.

  Each step makes ONE call of ``score`` holding every active question's
  candidate sets (the first call also holds each question's empty set). Ties go
  to the lowest index.

  Args:
    score: ``score(requests) -> float [len(requests)]`` log p(y_q | turns, x_q) for requests
      ``(q, turns)`` with ``turns`` a sorted tuple of turn indices of question
        q.
    n_turns: N_q, the number of history turns of each question (>= 0). k_max:
    the largest set (>= 1). tau: a turn is added only if its conditional factor
    is > tau (nats; -inf adds until
      k_max).

  Returns:
    One :class:`GreedySelection` per question.

  Raises:
    TypeError: ``score`` not callable. ValueError: bad n_turns, k_max or tau;
      ``score`` returning the wrong number of values or a NaN.
  """
  if not callable(score):
    raise TypeError(f"score must be callable, got {type(score).__name__}")
  if isinstance(n_turns, (int, np.integer)) or not isinstance(
    n_turns, Sequence | np.ndarray
  ):
    raise TypeError("n_turns must be a sequence of int (one per question)")
  n_turns = [
    V.check_int(n, f"n_turns[{q}]", min_value=0) for q, n in enumerate(n_turns)
  ]
  k_max = V.check_int(k_max, "k_max", min_value=1)
  tau = V.check_float(tau, "tau", allow_inf=True)
  Q = len(n_turns)
  sel: list[list[int]] = [[] for _ in range(Q)]
  gains: list[list[float]] = [[] for _ in range(Q)]
  cur = np.zeros(Q)
  base = np.zeros(Q)
  n_scored = np.zeros(Q, int)
  active = [q for q in range(Q) if n_turns[q] > 0]
  first = True
  while active or first:
    requests = [(q, ()) for q in range(Q)] if first else []
    owners = []
    for q in active:
      for j in range(n_turns[q]):
        if j not in sel[q]:
          requests.append((q, tuple(sorted(sel[q] + [j]))))
          owners.append((q, j))
    lp = np.asarray(score(requests), np.float64)
    if lp.shape != (len(requests),):
      raise ValueError(
        f"score must return {len(requests)} log-probs, got shape {lp.shape}"
      )
    if np.isnan(lp).any():
      raise ValueError("score returned NaN log-probs")
    for q, _ in requests:
      n_scored[q] += 1
    if first:
      base[:] = cur[:] = lp[:Q]
      lp = lp[Q:]
      first = False
    best: dict[int, tuple[float, int]] = {}
    for (q, j), v in zip(owners, lp):
      if q not in best or v > best[q][0]:
        best[q] = (float(v), j)
    nxt = []
    for q in active:
      v, j = best[q]
      if v - cur[q] > tau:
        sel[q].append(j)
        gains[q].append(float(v - cur[q]))
        cur[q] = v
        if len(sel[q]) < min(k_max, n_turns[q]):
          nxt.append(q)
    active = nxt
  return [
    GreedySelection(
      tuple(sel[q]),
      tuple(gains[q]),
      float(cur[q]),
      float(base[q]),
      int(n_scored[q]),
    )
    for q in range(Q)
  ]


def make_set_scorer(
  logprob_fn: LogprobFn,
  tokenizer: TextEncoder,
  questions: Sequence[tuple[Sequence[str], str, str]],
  *,
  max_len: int,
  batch_rows: int,
  template: str = CHATML_TEMPLATE,
) -> SetScorer:
  """A :data:`SetScorer` over an LM: one padded row per requested context.

  Args:
    logprob_fn: ``(ids, attn_mask, target_mask) -> [R]`` (:func:`make_logprob_fn`).
    tokenizer: has ``encode(text, add_bos=...)``.
    questions: ``(turns, x, y)`` of each question q.
    max_len: L, the padded row length (one compilation).
    batch_rows: rows per forward (fixed; the last batch repeats its first row).
    template: see :func:`encode_rows`.

  Returns:
    ``score(requests) -> float64 [len(requests)]``.

  Raises:
    ValueError: bad max_len or batch_rows; at call time, an unknown question or
      turn index.
  """
  max_len = V.check_int(max_len, "max_len", min_value=2)
  batch_rows = V.check_int(batch_rows, "batch_rows", min_value=1)
  questions = [(list(t), x, y) for t, x, y in questions]

  def score(requests):
    rows = []
    for q, idx in requests:
      if not 0 <= q < len(questions):
        raise ValueError(f"request question {q} outside [0, {len(questions)})")
      turns, x, y = questions[q]
      if any(not 0 <= i < len(turns) for i in idx):
        raise ValueError(
          f"request turns {idx} outside [0, {len(turns)}) for question {q}"
        )
      rows.append(
        encode_rows(
          tokenizer,
          [[turns[i] for i in idx]],
          x,
          y,
          max_len=max_len,
          template=template,
        )
      )
    out = np.zeros(len(rows))
    for s in range(0, len(rows), batch_rows):
      chunk = rows[s : s + batch_rows]
      chunk = chunk + [chunk[0]] * (batch_rows - len(chunk))
      ids, attn, tgt = (np.concatenate([r[k] for r in chunk]) for k in range(3))
      lp = np.asarray(
        logprob_fn(jnp.asarray(ids), jnp.asarray(attn), jnp.asarray(tgt)),
        np.float64,
      )
      n = min(batch_rows, len(rows) - s)
      out[s : s + n] = lp[:n]
    return out

  return score
