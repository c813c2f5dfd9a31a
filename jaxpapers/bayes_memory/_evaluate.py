"""Turn selection by every method and the metrics that compare them, on scored
questions.

:func:`choose_contexts` turns the LM evidence of :func:`question_arrays` into
the context column each method reads for each question (no memory, all memory, a
retriever's top-1, the Bayes factor's or the distilled selector's top-1, with or
without an access gate); :func:`selection_metrics` scores those choices with the
two-way forced choice (log p(y) above log p(y') in the chosen context) and
bootstraps the differences between methods over questions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jax
import numpy as np

from jaxpapers.bayes_memory._baselines import cosine_scores
from jaxpapers.bayes_memory._evidence import access_signal_metrics

METHODS = (
  "no_memory",
  "all_memory",
  "random",
  "recency",
  "bm25",
  "similarity",
  "distilled",
  "distilled_gated",
  "oracle_bf",
  "oracle_bf_gated",
  "distilled_placebo_gated",
  "oracle_bf_placebo_gated",
)
GREEDY_METHODS = ("oracle_bf_greedy",)
# Methods that score turns against the reference response y, which a user does
# not have at inference: upper bounds, never a headline.
ORACLE_METHODS = (
  "oracle_bf",
  "oracle_bf_gated",
  "oracle_bf_placebo_gated",
  "oracle_bf_greedy",
)
# The retrievers the Bayes-factor selectors are compared with (the best of them
# on a resample).
BASELINE_RETRIEVERS = ("similarity", "bm25", "recency")


def _check_questions(
  q: Mapping[str, Any], keys: tuple[str, ...]
) -> tuple[int, int]:
  """``(Q, N)`` of the question arrays ``q``, after checking the fields ``keys``
  are there."""
  missing = [k for k in keys if k not in q]
  if missing:
    raise ValueError(
      f"q must hold the question_arrays fields {list(keys)}, missing {missing}"
    )
  lp_y = np.shape(q["lp_y"])
  if len(lp_y) != 2 or lp_y[1] < 4:
    raise ValueError(
      f"q['lp_y'] must have shape [Q, N + 3] with N >= 1, got {lp_y}"
    )
  Q, N = lp_y[0], lp_y[1] - 3
  if np.shape(q["f_turn"])[:2] != (Q, N):
    raise ValueError(f"q['f_turn'] must have shape [Q, N, d] = [{Q}, {N}, d]")
  return Q, N


def choose_contexts(
  q: Mapping[str, np.ndarray],
  u: np.ndarray,
  g_logit: np.ndarray,
  *,
  tau: float,
  tau_placebo: float,
  rng: np.random.Generator,
  g_plc: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
  """The context column every method chooses for every question.

  Columns as in :func:`dialogue_rows`: 0 no memory, 1 the placebo turn, ``2 + i`` turn i alone,
  ``N + 2`` all turns. With the log Bayes factor ``LBF_i = log p(y | m_i, x) - log p(y | x)``,
  ``oracle_bf`` reads ``argmax_i LBF_i`` (it uses the reference y: an upper bound), gated by
  ``max_i LBF_i > tau`` (``oracle_bf_gated``) or by ``max_i log p(y | m_i, x) -
  log p(y | placebo, x) > tau_placebo`` (``oracle_bf_placebo_gated``); ``distilled`` reads the
  argmax of the distilled utilities, gated by the learned gates' logits > 0. Retrievers read
  their top-1 (BM25 ties go to the newest turn), ``recency`` the last turn, ``random`` a turn
  drawn from ``rng``.

  Args:
    q: the questions' arrays (:func:`question_arrays`): ``lp_y`` ``[Q, N + 3]``,
      ``f_turn`` ``[Q, N, d]``, ``f_query`` ``[Q, d]``, ``bm25`` ``[Q, N]``.
    u: ``[Q, N]`` the distilled selector's utilities.
    g_logit: ``[Q]`` the distilled access gate's logits.
    tau: the access threshold on the largest log Bayes factor (nats).
    tau_placebo: the threshold of the placebo-controlled gate (nats).
    rng: the generator of the random selector.
    g_plc: ``[Q]`` the placebo-controlled distilled gate's logits (None: not
      run).

  Returns:
    ``{method: int [Q] column}`` for every name of :data:`METHODS` (without
    ``distilled_placebo_gated`` when ``g_plc`` is None).
  """
  Q, N = _check_questions(q, ("lp_y", "f_turn", "f_query", "bm25"))
  for name, x, shape in (
    ("u", u, (Q, N)),
    ("g_logit", g_logit, (Q,)),
    ("g_plc", g_plc, (Q,)),
  ):
    if x is not None and np.shape(x) != shape:
      raise ValueError(
        f"{name} must have shape {list(shape)}, got {list(np.shape(x))}"
      )
  valid = np.ones((Q, N), bool)
  pos = np.arange(N)
  lbf = q["lp_y"][:, 2 : 2 + N] - q["lp_y"][:, :1]
  tie = 1e-6 * pos[None]  # ties go to the newest turn
  sim = np.asarray(jax.jit(cosine_scores)(q["f_turn"], q["f_query"], valid))
  # = access_and_select(lbf, valid, tau)[0]
  access_bf = np.asarray(lbf > tau).any(1)
  col = {
    "no_memory": np.zeros(Q, int),
    "all_memory": np.full(Q, N + 2),
    "random": 2 + rng.integers(N, size=Q),
    "recency": np.full(Q, 2 + N - 1),
    "bm25": 2 + np.argmax(q["bm25"] + tie, axis=1),
    "similarity": 2 + np.argmax(sim, axis=1),
    "distilled": 2 + np.argmax(u, axis=1),
    "oracle_bf": 2 + np.argmax(lbf, axis=1),
  }
  col["distilled_gated"] = np.where(g_logit > 0, col["distilled"], 0)
  col["oracle_bf_gated"] = np.where(np.asarray(access_bf), col["oracle_bf"], 0)
  # Placebo-controlled access: the best turn must beat a content-free note by
  # tau_placebo.
  plc = q["lp_y"][:, 2 : 2 + N] - q["lp_y"][:, 1:2]
  col["oracle_bf_placebo_gated"] = np.where(
    plc.max(1) > tau_placebo, col["oracle_bf"], 0
  )
  if g_plc is not None:
    col["distilled_placebo_gated"] = np.where(g_plc > 0, col["distilled"], 0)
  return col


def _boot_ci(
  stat: Callable[[np.ndarray], float], n: int, n_boot: int, rng
) -> float:
  """95% percentile interval half-width of stat(idx) over question resamples."""
  vals = np.array([stat(rng.integers(n, size=n)) for _ in range(n_boot)])
  vals = vals[np.isfinite(vals)]
  if len(vals) < 2:
    return float("nan")
  lo, hi = np.percentile(vals, [2.5, 97.5])
  return float((hi - lo) / 2)


def selection_metrics(
  q: Mapping[str, np.ndarray],
  col: Mapping[str, np.ndarray],
  g_logit: np.ndarray,
  *,
  seed: int,
  n_boot: int,
  greedy_k: int,
  tau_placebo: float,
  g_plc: np.ndarray | None = None,
) -> dict:
  """Accuracy, likelihood, recall and reads of every method, and the gains
  between methods.

  Accuracy is the two-way forced choice ``log p(y | c) > log p(y' | c)`` in the
  chosen column c, over the questions that need memory (P); a gain is a
  difference of accuracies on P with its 95% percentile bootstrap half-width
  over P (``<name>_ci``). Every bootstrap interval draws from one generator
  seeded by ``seed + 99``, in a fixed order.

  Args:
    q: the questions' arrays (:func:`question_arrays`): ``lp_y``, ``lp_alt``
      ``[Q, N + 3]``, ``n_y`` [Q], ``f_turn`` ``[Q, N, d]``, ``need``, ``gold``,
      ``seed`` [Q], ``stale`` ``[Q, N]``; with greedy sets ``greedy_sel``
      ``[Q, k]``, ``lp_y_greedy``, ``lp_alt_greedy`` [Q].
    col: ``{method: int [Q] column}`` (:func:`choose_contexts`).
    g_logit: ``[Q]`` the distilled gate's logits.
    seed: seeds the bootstrap generator.
    n_boot: bootstrap resamples per interval.
    greedy_k: the largest greedy set (the histogram's range).
    tau_placebo: the placebo gate's threshold, recorded for the claims'
      preconditions.
    g_plc: ``[Q]`` the placebo-controlled gate's logits (None: not run).

  Returns:
    per method ``accuracy`` (``accuracy_ci``, ``accuracy_per_seed``),
    ``loglik_per_token``, ``evidence_recall_at_1``, ``stale_rate_at_1``,
    ``read_fraction``, ``turns_read_fraction``; the gains ``acc_gain_*`` against
    the best of :data:`BASELINE_RETRIEVERS` and of the gates,
    ``distilled_gain_ratio``, the reader check ``accuracy_gold_turn`` (``_lo``:
    its lower end), :func:`access_signal_metrics`, and ``n_questions``,
    ``min_seed``, ``tau_placebo``.
  """
  _check_questions(
    q, ("lp_y", "lp_alt", "n_y", "f_turn", "need", "gold", "seed", "stale")
  )
  rng = np.random.default_rng(seed + 99)
  Q = q["f_turn"].shape[0]
  ar = np.arange(Q)
  correct = {m: q["lp_y"][ar, k] > q["lp_alt"][ar, k] for m, k in col.items()}
  ll = {m: q["lp_y"][ar, k] / q["n_y"] for m, k in col.items()}
  # the greedy set is not one of the scored columns: its own rows
  if "lp_y_greedy" in q:
    correct["oracle_bf_greedy"] = q["lp_y_greedy"] > q["lp_alt_greedy"]
    ll["oracle_bf_greedy"] = q["lp_y_greedy"] / q["n_y"]
  P = np.flatnonzero(q["need"].astype(bool))
  # right or wrong on each preference question
  acc = {m: v[P] for m, v in correct.items()}

  def boot(stat):
    return _boot_ci(stat, len(P), n_boot, rng)

  # the value on all preference questions and its interval half-width
  def gain(name, stat):
    out[name] = float(stat(np.arange(len(P))))
    out[f"{name}_ci"] = boot(stat)

  def minus(a, b):  # accuracy of method a minus that of method b on a resample
    return lambda i: acc[a][i].mean() - acc[b][i].mean()

  out: dict[str, Any] = {
    "n_questions": int(Q),
    "n_preference_questions": int(len(P)),
  }
  out.update(_method_metrics(q, col, acc, ll, P, boot))
  if "lp_y_greedy" in q:
    _add_greedy_metrics(out, q, P, greedy_k)
    gain("acc_gain_greedy_vs_top1", minus("oracle_bf_greedy", "oracle_bf"))
    for other in ("distilled", "recency"):
      gain(f"acc_gain_greedy_vs_{other}", minus("oracle_bf_greedy", other))
  out.update(access_signal_metrics(q["lp_y"], q["need"], g_logit, g_plc))
  for a, name in (("distilled", "distilled"), ("oracle_bf", "oracle")):
    best = lambda i, a=a: (
      acc[a][i].mean() - max(acc[m][i].mean() for m in BASELINE_RETRIEVERS)
    )
    gain(f"acc_gain_{name}_vs_best_retriever", best)
  out["best_retriever"] = max(
    BASELINE_RETRIEVERS, key=lambda m: out["accuracy"][m]
  )
  gain("acc_gain_gated_vs_ungated", minus("distilled_gated", "distilled"))
  for gated, base, name in (
    ("distilled_placebo_gated", "distilled", "placebo"),
    ("oracle_bf_placebo_gated", "oracle_bf", "oracle_placebo"),
  ):
    if gated in acc:
      gain(f"acc_gain_{name}_gated_vs_ungated", minus(gated, base))

  def ratio(i):
    den = acc["oracle_bf"][i].mean() - acc["no_memory"][i].mean()
    num = acc["distilled"][i].mean() - acc["no_memory"][i].mean()
    return num / den if den > 0 else np.nan

  gain("distilled_gain_ratio", ratio)
  out["best_retriever_accuracy"] = out["accuracy"][out["best_retriever"]]
  # The reader check: the LM's forced choice with the gold turn (the current
  # value) in context.
  gold = q["gold"].astype(int)[P]
  if (gold < 0).any():
    raise ValueError(
      "every question that needs memory must have a gold turn (gold >= 0)"
    )
  gold_ok = q["lp_y"][P, 2 + gold] > q["lp_alt"][P, 2 + gold]
  gain("accuracy_gold_turn", lambda i: gold_ok[i].mean())
  out["accuracy_gold_turn_lo"] = (
    out["accuracy_gold_turn"] - out["accuracy_gold_turn_ci"]
  )
  # What the claims' preconditions check against the registration: the gate and
  # the data seeds.
  out["tau_placebo"] = float(tau_placebo)
  out["min_seed"] = int(np.min(q["seed"]))
  return out


def _method_metrics(q, col, acc, ll, P, boot) -> dict:
  """Per method: accuracy (with its interval and per seed), likelihood, recall,
  staleness, reads.

  Args:
    q: the questions' arrays (`question_arrays`).
    col: the context column every method chose, ``{method: [Q]}``
      (`choose_contexts`).
    acc: whether each method answers each preference question,
      ``{method: [P]}``.
    ll: each method's log-likelihood per token of the reference,
      ``{method: [Q]}``.
    P: the indices of the preference questions, ``[P]``.
    boot: the bootstrap interval half-width of a statistic of a resample of the
      P questions.
  """
  N = q["f_turn"].shape[1]
  gold = q["gold"].astype(int)
  stale = q["stale"].astype(bool)
  has_stale = P[stale[P].any(1)]
  seeds = q["seed"][P]

  def stale_rate(m):
    return float(
      np.mean(
        [0 <= col[m][i] - 2 < N and stale[i, col[m][i] - 2] for i in has_stale]
      )
    )

  return {
    "accuracy": {m: float(a.mean()) for m, a in acc.items()},
    "accuracy_ci": {
      m: boot(lambda i, a=a: a[i].mean()) for m, a in acc.items()
    },
    "accuracy_per_seed": {
      m: [float(a[seeds == s].mean()) for s in np.unique(q["seed"])]
      for m, a in acc.items()
    },
    "loglik_per_token": {m: float(ll[m].mean()) for m in acc},
    "loglik_per_token_pref": {m: float(ll[m][P].mean()) for m in acc},
    "evidence_recall_at_1": {
      m: float(np.mean(col[m][P] - 2 == gold[P]))
      for m in col
      if m != "all_memory"
    },
    "n_changed_questions": int(len(has_stale)),
    "stale_rate_at_1": {
      m: stale_rate(m) if len(has_stale) else None
      for m in col
      if m not in ("all_memory", "no_memory")
    },
    "read_fraction": {m: float((col[m] != 0).mean()) for m in col},
    "turns_read_fraction": {
      m: float(
        np.mean(np.where(col[m] == N + 2, N, (col[m] != 0).astype(int))) / N
      )
      for m in col
    },
  }


def _add_greedy_metrics(out, q, P, greedy_k) -> None:
  """Recall and staleness of the greedy SET (any chosen turn), its reads and
  sizes, in ``out``."""
  m = "oracle_bf_greedy"
  N = q["f_turn"].shape[1]
  sel = q["greedy_sel"].astype(int)
  n_sel = (sel >= 0).sum(1)
  gold = q["gold"].astype(int)
  stale = q["stale"].astype(bool)
  has_stale = P[stale[P].any(1)]
  out["evidence_recall_at_1"][m] = float(
    np.mean([gold[i] in sel[i] for i in P])
  )
  if len(has_stale):
    out["stale_rate_at_1"][m] = float(
      np.mean([stale[i, sel[i][sel[i] >= 0]].any() for i in has_stale])
    )
  out["read_fraction"][m] = float(np.mean(n_sel > 0))
  out["turns_read_fraction"][m] = float(np.mean(n_sel) / N)
  out["greedy_set_size"] = {
    "mean": float(np.mean(n_sel)),
    "histogram": [int(np.sum(n_sel == k)) for k in range(greedy_k + 1)],
  }
