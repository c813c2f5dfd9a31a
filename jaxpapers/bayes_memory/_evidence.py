"""The LM evidence of a group of dialogues: every scored context, turn features
and costs.

:func:`score_dialogues` scores, for every question of every dialogue, the
reference response y and the contrast y' in the contexts of
:func:`dialogue_rows` (no memory, placebo turn, each turn alone, all turns),
pools LM features of every turn and question, counts the LM tokens each method
needs and, with ``greedy_k > 0``, runs :func:`greedy_select` over turn sets.
Rows of all dialogues of a group share the length buckets' batches, so a bucket
is padded once per group.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from jaxpapers.bayes_memory._baselines import bm25_scores, gate_auroc
from jaxpapers.bayes_memory._data import Dialogue
from jaxpapers.bayes_memory._prefix import score_rows_shared
from jaxpapers.bayes_memory._rows import (
  dialogue_rows,
  pooled_text_features,
  score_rows_bucketed,
  subset_rows,
)
from jaxpapers.bayes_memory._scoring import LogprobFn
from jaxpapers.bayes_memory._selection import greedy_select

SCORING = ("rows", "shared")


def score_dialogues(
  dialogues: Sequence[Dialogue],
  model: tuple[Any, Any, Any],
  fn: LogprobFn,
  *,
  buckets: Sequence[int],
  batch_tokens: int,
  max_targets: int,
  feature_len: int,
  scoring: str = "rows",
  greedy_k: int = 0,
  tau: float = 0.0,
) -> list[dict]:
  """The LM evidence of a group of dialogues, one JSON-able dict per dialogue.

  Args:
    dialogues: the group's dialogues.
    model: ``(config, params, tokenizer)`` of :func:`load_model`.
    fn: the model's :data:`LogprobFn` (:func:`make_logprob_fn`).
    buckets: padded row lengths (one compilation each); rows longer than the
      largest fail.
    batch_tokens: rows per forward = ``batch_tokens // bucket length``
      (``"rows"`` scoring).
    max_targets: the most target tokens of a row.
    feature_len: padded length of a turn or question for the pooled features.
    scoring: ``"rows"`` (every row in full) or ``"shared"`` (each common token
      prefix once, :func:`score_rows_shared`; the same log-probs to float32
      round-off).
    greedy_k: largest greedy turn set (0: no greedy selection).
    tau: the greedy selection's threshold on the conditional log Bayes factor
      (nats).

  Returns:
    per dialogue with Q questions and N turns: ``lp_y`` and ``lp_alt``
    ``[Q, N + 3]`` (columns: no memory, placebo, each turn, all turns;
    ``lp_alt`` NaN at the placebo), ``n_y`` [Q] response tokens, ``f_turn``
    ``[N, d]`` and ``f_query`` ``[Q, d]`` features, ``padded_tokens`` (its
    share), ``oracle_tokens`` and ``distilled_tokens`` (what each method runs
    through the LM); with ``greedy_k``: ``greedy_sel`` ``[Q, greedy_k]`` (padded
    with -1), ``lp_y_greedy``, ``lp_alt_greedy`` [Q] and ``greedy_tokens``.
  """
  if scoring not in SCORING:
    raise ValueError(f"scoring must be one of {SCORING}, got {scoring!r}")
  cfg, params, tok = model
  rows, where, owner = [], [], []
  for g, d in enumerate(dialogues):
    r, w = dialogue_rows(d, tok, max_len=max(buckets))
    rows += r
    where += w
    owner += [g] * len(r)
  if scoring == "shared":
    keys = [((o, col), qi) for o, (qi, _, col) in zip(owner, where)]
    lp, stats = score_rows_shared(
      params,
      rows,
      keys,
      config=cfg,
      max_targets=max_targets,
      buckets=tuple(buckets),
    )
    padded = stats["padded_tokens"]
  else:
    lp, padded = score_rows_bucketed(
      fn, rows, buckets=tuple(buckets), batch_tokens=batch_tokens
    )
  n_tokens = lambda t: min(len(tok.encode(t, add_bos=False)), feature_len)
  cells = []
  for g, d in enumerate(dialogues):
    turns = list(d.turns)
    ncol = len(turns) + 3
    lp_y = np.full((len(d.queries), ncol), np.nan)
    lp_alt = np.full((len(d.queries), ncol), np.nan)
    real_oracle = 0
    mine = [i for i, o in enumerate(owner) if o == g]
    for i in mine:
      (qi, kind, col), v, attn = where[i], lp[i], rows[i][1]
      (lp_y if kind == "y" else lp_alt)[qi, col] = v
      if kind == "y" and col != 1 and col != ncol - 1:
        # what the oracle needs: baseline + one row per turn
        real_oracle += int(attn.sum())
    feats = pooled_text_features(
      params,
      turns + [q.x for q in d.queries],
      tok,
      config=cfg,
      max_len=feature_len,
    )
    cells.append(
      dict(
        lp_y=lp_y,
        lp_alt=lp_alt,
        n_y=[len(tok.encode(q.y, add_bos=False)) for q in d.queries],
        f_turn=feats[: len(turns)],
        f_query=feats[len(turns) :],
        padded_tokens=padded * len(mine) // len(rows),
        oracle_tokens=real_oracle,
        distilled_tokens=sum(map(n_tokens, turns))
        + sum(n_tokens(q.x) for q in d.queries),
      )
    )
  if greedy_k > 0:
    _greedy_sets(
      dialogues, cells, fn, tok, buckets, batch_tokens, greedy_k, tau
    )
  return cells


def _greedy_sets(ds, cells, fn, tok, buckets, batch_tokens, k, tau) -> None:
  """Greedy Bayes-factor turn sets of every question of ``ds``, added to
  ``cells`` in place.

  Sets of at most one turn are read from the cells' single-turn columns; larger
  ones are scored in one bucketed batch per greedy step over all questions of
  the group.
  """
  qs = [(g, qi) for g, d in enumerate(ds) for qi in range(len(d.queries))]
  extra_tokens = np.zeros(len(ds), np.int64)
  padded = [0]

  def score_requests(reqs):  # [(g, qi, kind, sub)]
    out = np.full(len(reqs), np.nan)
    todo = []
    for r, (g, qi, kind, sub) in enumerate(reqs):
      if len(sub) <= 1:
        lp = cells[g]["lp_y" if kind == "y" else "lp_alt"][qi]
        out[r] = lp[0] if not sub else lp[2 + sub[0]]
      elif kind == "y" or ds[g].queries[qi].y_alt is not None:
        todo.append(r)
    if todo:
      big = max(buckets)
      rows = [
        subset_rows(ds[reqs[r][0]], tok, [reqs[r][1:]], max_len=big)[0]
        for r in todo
      ]
      lp, pad = score_rows_bucketed(
        fn, rows, buckets=tuple(buckets), batch_tokens=batch_tokens
      )
      out[todo] = lp
      padded[0] += pad
      for r, row in zip(todo, rows):
        extra_tokens[reqs[r][0]] += int(row[1].sum())
    return out

  def score(requests):  # greedy_select's interface: (question, subset)
    return score_requests([(*qs[q], "y", sub) for q, sub in requests])

  sel = greedy_select(
    score, [len(ds[g].turns) for g, _ in qs], k_max=k, tau=tau
  )
  alt = score_requests(
    [(g, qi, "alt", tuple(sorted(s.selected))) for (g, qi), s in zip(qs, sel)]
  )
  n_rows = np.bincount([g for g, _ in qs], minlength=len(ds))
  for g, cell in enumerate(cells):
    mine = [i for i, (h, _) in enumerate(qs) if h == g]
    cell["greedy_sel"] = [
      list(sel[i].selected) + [-1] * (k - len(sel[i].selected)) for i in mine
    ]
    cell["lp_y_greedy"] = [sel[i].logprob for i in mine]
    cell["lp_alt_greedy"] = [float(alt[i]) for i in mine]
    cell["greedy_tokens"] = cell["oracle_tokens"] + int(extra_tokens[g])
    cell["padded_tokens"] += int(padded[0] * n_rows[g] // max(n_rows.sum(), 1))


def question_arrays(
  dialogues: Sequence[Dialogue], cells: Sequence[dict], seed: int
) -> dict:
  """One seed's questions as arrays, from its dialogues and their evidence
  cells.

  Args:
    dialogues: the seed's dialogues, all with N turns.
    cells: their :func:`score_dialogues` cells (lists or arrays).
    seed: the data seed, recorded per question.

  Returns:
    per question (Q in all): ``lp_y``, ``lp_alt`` float64 ``[Q, N + 3]``,
    ``n_y`` [Q], ``f_turn`` ``[Q, N, d]``, ``f_query`` ``[Q, d]``, ``gold`` [Q]
    (the turn holding the current value, -1 if none), ``stale`` bool ``[Q, N]``,
    ``need`` [Q], ``bm25`` ``[Q, N]``, ``seed`` [Q] and, when the cells have
    greedy sets, ``greedy_sel`` ``[Q, k]``, ``lp_y_greedy`` and
    ``lp_alt_greedy`` [Q].
  """
  if len(cells) != len(dialogues):
    raise ValueError(
      f"cells must hold one cell per dialogue, got {len(cells)} for "
      f"{len(dialogues)} dialogues"
    )
  greedy = bool(cells) and "greedy_sel" in cells[0]
  names = "lp_y lp_alt n_y f_turn f_query gold stale need bm25 seed".split()
  out = {
    k: []
    for k in names
    + (["greedy_sel", "lp_y_greedy", "lp_alt_greedy"] if greedy else [])
  }
  for d, cell in zip(dialogues, cells):
    for qi, q in enumerate(d.queries):
      for k in ("lp_y", "lp_alt", "n_y", "f_query") + (
        ("greedy_sel", "lp_y_greedy", "lp_alt_greedy") if greedy else ()
      ):
        out[k].append(cell[k][qi])
      out["f_turn"].append(cell["f_turn"])
      out["gold"].append(q.gold_turn)
      s = np.zeros(len(d.turns), bool)
      s[list(q.stale_turns)] = True
      out["stale"].append(s)
      out["need"].append(q.need_memory)
      out["bm25"].append(bm25_scores(list(d.turns), q.x))
      out["seed"].append(seed)
  return {
    k: np.asarray(v, np.float64 if k.startswith("lp") else None)
    for k, v in out.items()
  }


def access_signal_metrics(
  lp_y: np.ndarray,
  need: np.ndarray,
  gate_logits: np.ndarray,
  placebo_gate_logits: np.ndarray | None = None,
) -> dict:
  """How well each memory-access signal separates the questions that need
  memory.

  Args:
    lp_y: ``[Q, N + 3]`` log p(y) per context column (no memory, placebo, each
      turn, all).
    need: bool [Q], whether each question needs memory.
    gate_logits: [Q] the distilled gate's logits.
    placebo_gate_logits: [Q] the placebo-controlled gate's logits, or None.

  Returns:
    ``gate_auroc`` (:func:`gate_auroc` of the distilled gate(s) and of the
    largest log Bayes factor against no memory and against the placebo turn),
    ``mean_max_lbf`` and ``mean_max_placebo_lbf`` (the mean largest factor on
    the questions that need memory and on the memory-free ones, None without
    any), and ``placebo_shift_mean`` (mean log p(y) with the placebo turn minus
    without memory).
  """
  lp_y = np.asarray(lp_y, np.float64)
  if lp_y.ndim != 2 or lp_y.shape[1] < 4:
    raise ValueError(
      f"lp_y must have shape [Q, N + 3] with N >= 1, got {lp_y.shape}"
    )
  for name, x in (("need", need), ("gate_logits", gate_logits)):
    if np.shape(x) != lp_y.shape[:1]:
      raise ValueError(
        f"{name} must have shape {lp_y.shape[:1]}, got {np.shape(x)}"
      )
  N = lp_y.shape[1] - 3
  need = np.asarray(need).astype(bool)
  lbf = lp_y[:, 2 : 2 + N] - lp_y[:, :1]
  plc = lp_y[:, 2 : 2 + N] - lp_y[:, 1:2]
  auroc = jax.jit(gate_auroc)
  out: dict[str, Any] = {
    "gate_auroc": {
      "distilled": float(auroc(gate_logits.astype(np.float32), need)),
      "oracle_bf_max": float(auroc(lbf.max(1).astype(np.float32), need)),
      "placebo_bf_max": float(auroc(plc.max(1).astype(np.float32), need)),
    }
  }
  if placebo_gate_logits is not None:
    g = placebo_gate_logits.astype(np.float32)
    out["gate_auroc"]["distilled_placebo"] = float(auroc(g, need))
  for key, x in (("mean_max_placebo_lbf", plc), ("mean_max_lbf", lbf)):
    out[key] = {
      "need_memory": float(x[need].max(1).mean()),
      "memory_free": float(x[~need].max(1).mean()) if (~need).any() else None,
    }
  out["placebo_shift_mean"] = float(np.mean(lp_y[:, 1] - lp_y[:, 0]))
  return out
