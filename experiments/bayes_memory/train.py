"""Bayes-factor memory access and selection on generated changing-preference dialogues.

`train_and_evaluate(config, workdir)`:
1. generates the dialogues of every seed (`make_preference_dialogues`);
2. scores, per dialogue, every question's reference response y and a contrast response y'
   (a wrong value) in the contexts {no memory, placebo turn, each turn alone, all turns}, and
   the pooled LM features of every turn and question; one cell of `core.CellStore` per
   dialogue, so an interrupted run resumes;
3. derives each method's context choice (no memory, all memory, recency, random, similarity,
   BM25, oracle Bayes factor with and without the gate, distilled selector with and without
   its gate, trained leave-one-seed-out) and its accuracy (log p(y) > log p(y')), answer
   log-likelihood, evidence recall and stale-retrieval rate, with bootstrap intervals;
4. writes results.json (claims judged by the rules in configs/default.py) and two plots.
"""

from __future__ import annotations

import time

import jax
import numpy as np

from jaxpapers import bayes_memory as bm
from jaxpapers import core

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
RETRIEVERS = ("similarity", "bm25", "recency")
# Methods that score turns against the reference response y, which a user does not have at
# inference: upper bounds, never a headline.
ORACLE_METHODS = ("oracle_bf", "oracle_bf_gated", "oracle_bf_placebo_gated", "oracle_bf_greedy")


# --------------------------------------------------------------------------- model


def load_model(c):
  """(config, params, tokenizer) of the configured LM (:func:`jaxpapers.bayes_memory.load_model`)."""
  core.validate_choice(c.model, name="model", allowed=bm.MODELS)
  return bm.load_model(c.model, seed=c.seed)


# --------------------------------------------------------------------------- LM scoring


def _greedy_sets(ds, cells, fn, tok, c):
  """Greedy Bayes-factor turn sets (bm.greedy_select) of every question of ``ds``, in place.

  Sets of at most one turn are read from the cells' single-turn columns; larger ones are
  scored in one bucketed batch per greedy step over all questions of the group. Adds to each
  cell: greedy_sel (padded with -1), lp_y_greedy, lp_alt_greedy, greedy_tokens.
  """
  qs = [(g, qi) for g, d in enumerate(ds) for qi in range(len(d.queries))]
  extra_tokens = np.zeros(len(ds), np.int64)
  padded = [0]

  def lookup(g, qi, kind, sub):
    lp = cells[g]["lp_y" if kind == "y" else "lp_alt"][qi]
    return lp[0] if not sub else lp[2 + sub[0]]

  def score_requests(reqs):  # [(g, qi, kind, sub)]
    out = np.full(len(reqs), np.nan)
    todo = []
    for r, (g, qi, kind, sub) in enumerate(reqs):
      if len(sub) <= 1:
        out[r] = lookup(g, qi, kind, sub)
      elif kind == "y" or ds[g].queries[qi].y_alt is not None:
        todo.append(r)
    if todo:
      big = max(c.buckets)
      rows = [bm.subset_rows(ds[reqs[r][0]], tok, [reqs[r][1:]], max_len=big)[0] for r in todo]
      lp, pad = bm.score_rows_bucketed(fn, rows, buckets=c.buckets, batch_tokens=c.batch_tokens)
      out[todo] = lp
      padded[0] += pad
      for r, row in zip(todo, rows):
        extra_tokens[reqs[r][0]] += int(row[1].sum())
    return out

  def score(requests):  # greedy_select's interface: (question, subset)
    return score_requests([(*qs[q], "y", sub) for q, sub in requests])

  k = c.greedy_k
  sel = bm.greedy_select(score, [len(ds[g].turns) for g, _ in qs], k_max=k, tau=c.tau)
  alt = score_requests([(g, qi, "alt", tuple(sorted(s.selected))) for (g, qi), s in zip(qs, sel)])
  n_rows = np.bincount([g for g, _ in qs], minlength=len(ds))
  for g, cell in enumerate(cells):
    mine = [i for i, (h, _) in enumerate(qs) if h == g]
    cell["greedy_sel"] = [list(sel[i].selected) + [-1] * (k - len(sel[i].selected)) for i in mine]
    cell["lp_y_greedy"] = [sel[i].logprob for i in mine]
    cell["lp_alt_greedy"] = [float(alt[i]) for i in mine]
    cell["greedy_tokens"] = cell["oracle_tokens"] + int(extra_tokens[g])
    cell["padded_tokens"] += int(padded[0] * n_rows[g] // max(n_rows.sum(), 1))


def score_dialogues(ds: list[bm.Dialogue], model, fn, c) -> list[dict]:
  """The LM evidence (JSON-able cells) of a group of dialogues, scored in shared batches.

  Rows of all dialogues of the group go through the length buckets together, so the fixed
  batch of a bucket is padded once per group rather than once per dialogue.
  """
  cfg, params, tok = model
  rows, where, owner = [], [], []
  for g, d in enumerate(ds):
    r, w = bm.dialogue_rows(d, tok, max_len=max(c.buckets))
    rows += r
    where += w
    owner += [g] * len(r)
  scoring = c.get("scoring", "rows")
  core.validate_choice(scoring, name="scoring", allowed=("rows", "shared"))
  if scoring == "shared":  # each common token prefix run once; same log-probs to round-off
    keys = [((o, col), qi) for o, (qi, _, col) in zip(owner, where)]
    lp, stats = bm.score_rows_shared(
      params, rows, keys, config=cfg, max_targets=c.max_targets, buckets=c.buckets
    )
    padded = stats["padded_tokens"]
  else:
    lp, padded = bm.score_rows_bucketed(fn, rows, buckets=c.buckets, batch_tokens=c.batch_tokens)
  cells = []
  for g, d in enumerate(ds):
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
        real_oracle += int(attn.sum())  # what the oracle needs: baseline + one row per turn
    feats = bm.pooled_text_features(
      params, turns + [q.x for q in d.queries], tok, config=cfg, max_len=c.feature_len
    )
    n_y = [len(tok.encode(q.y, add_bos=False)) for q in d.queries]
    feat_tokens = sum(min(len(tok.encode(t, add_bos=False)), c.feature_len) for t in turns)
    q_tokens = sum(min(len(tok.encode(q.x, add_bos=False)), c.feature_len) for q in d.queries)
    cells.append(
      dict(
        lp_y=lp_y,
        lp_alt=lp_alt,
        n_y=n_y,
        f_turn=feats[: len(turns)],
        f_query=feats[len(turns) :],
        padded_tokens=padded * len(mine) // len(rows),
        oracle_tokens=real_oracle,
        distilled_tokens=feat_tokens + q_tokens,
      )
    )
  if c.greedy_k > 0:
    _greedy_sets(ds, cells, fn, tok, c)
  return cells


def score_dialogue(d: bm.Dialogue, model, fn, c) -> dict:
  """The LM evidence of one dialogue (see :func:`score_dialogues`)."""
  return score_dialogues([d], model, fn, c)[0]


# --------------------------------------------------------------------------- analysis


def _questions(dialogues, cells, c, seed):
  """Flatten one seed's questions into arrays."""
  out = {k: [] for k in ("lp_y", "lp_alt", "n_y", "f_turn", "f_query", "gold", "stale", "need")}
  out["bm25"], out["seed"] = [], []
  greedy = c.greedy_k > 0
  if greedy:
    out.update(greedy_sel=[], lp_y_greedy=[], lp_alt_greedy=[])
  for d, cell in zip(dialogues, cells):
    for qi, q in enumerate(d.queries):
      out["lp_y"].append(cell["lp_y"][qi])
      out["lp_alt"].append(cell["lp_alt"][qi])
      out["n_y"].append(cell["n_y"][qi])
      out["f_turn"].append(cell["f_turn"])
      out["f_query"].append(cell["f_query"][qi])
      out["gold"].append(q.gold_turn)
      s = np.zeros(len(d.turns), bool)
      s[list(q.stale_turns)] = True
      out["stale"].append(s)
      out["need"].append(q.need_memory)
      out["bm25"].append(bm.bm25_scores(list(d.turns), q.x))
      out["seed"].append(seed)
      if greedy:
        out["greedy_sel"].append(cell["greedy_sel"][qi])
        out["lp_y_greedy"].append(cell["lp_y_greedy"][qi])
        out["lp_alt_greedy"].append(cell["lp_alt_greedy"][qi])
  return {k: np.asarray(v, np.float64 if k.startswith("lp") else None) for k, v in out.items()}


def _concat(parts):
  return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def choose_contexts(q, u, g_logit, c, rng, g_plc=None) -> dict[str, np.ndarray]:
  """Context column chosen by every method for every question (see `bm.dialogue_rows`).

  ``g_plc``: the gate logits of the placebo-controlled distilled gate (None: not run).
  """
  Q, N = q["f_turn"].shape[:2]
  valid = np.ones((Q, N), bool)
  pos = np.arange(N)
  lbf = q["lp_y"][:, 2 : 2 + N] - q["lp_y"][:, :1]
  tie = 1e-6 * pos[None]  # ties go to the newest turn
  sim = np.asarray(jax.jit(bm.cosine_scores)(q["f_turn"], q["f_query"], valid))
  access_bf = np.asarray(lbf > c.tau).any(1)  # = access_and_select(lbf, valid, tau)[0]
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
  # Placebo-controlled access: the best turn must beat a content-free note by tau_placebo.
  plc = q["lp_y"][:, 2 : 2 + N] - q["lp_y"][:, 1:2]
  col["oracle_bf_placebo_gated"] = np.where(plc.max(1) > c.tau_placebo, col["oracle_bf"], 0)
  if g_plc is not None:
    col["distilled_placebo_gated"] = np.where(g_plc > 0, col["distilled"], 0)
  return col


def fit_distilled(q_all, c):
  """Leave-one-seed-out distilled utilities u, gate logits g and placebo-gate logits g_plc.

  The placebo-controlled gate is the gate of a second model trained on LBF - LBF(placebo) -
  tau_placebo with threshold 0 (the same compiled program as the first), i.e. on the label
  1[max_i log p(y | m_i, x) - log p(y | placebo, x) > tau_placebo].
  """
  Q, N, _ = q_all["f_turn"].shape
  u = np.zeros((Q, N))
  g = np.zeros(Q)
  g_plc = np.zeros(Q)
  pos = np.tile(np.linspace(0.0, 1.0, N), (Q, 1)).astype(np.float32)
  lbf = (q_all["lp_y"][:, 2 : 2 + N] - q_all["lp_y"][:, :1]).astype(np.float32)
  plc = (q_all["lp_y"][:, 2 : 2 + N] - q_all["lp_y"][:, 1:2] - c.tau_placebo).astype(np.float32)
  valid = np.ones((Q, N), bool)
  ft, fq = q_all["f_turn"].astype(np.float32), q_all["f_query"].astype(np.float32)
  losses = {}

  def fit_predict(target, tr, te):
    """Trains on the ``tr`` questions against ``target``; predicts the ``te`` questions."""
    model, gate, loss = bm.train_utility_model(
      ft[tr],
      fq[tr],
      pos[tr],
      valid[tr],
      target[tr],
      seed=int(c.seed),
      steps=c.steps,
      lr=c.lr,
      beta=c.beta,
      tau=c.tau,
      hidden=c.hidden,
    )
    ut, gt = bm.predict_utilities(model, gate, ft[te], fq[te], pos[te], valid[te])
    return np.asarray(ut), np.asarray(gt), loss

  for s in np.unique(q_all["seed"]):  # leave one seed out
    tr, te = q_all["seed"] != s, q_all["seed"] == s
    u[te], g[te], loss = fit_predict(lbf, tr, te)
    losses[int(s)] = [float(loss[0]), float(loss[-1])]
    g_plc[te] = fit_predict(plc, tr, te)[1]
  return u, g, g_plc, losses


def _boot_ci(stat, n, n_boot, rng):
  """95% percentile interval half-width of stat(idx) over question resamples."""
  vals = np.array([stat(rng.integers(n, size=n)) for _ in range(n_boot)])
  vals = vals[np.isfinite(vals)]
  if len(vals) < 2:
    return float("nan")
  lo, hi = np.percentile(vals, [2.5, 97.5])
  return float((hi - lo) / 2)


def derived_metrics(q, col, g_logit, c, g_plc=None) -> dict:
  """Accuracy, likelihood, recall, reads and the claims' derived values (pure given inputs).

  Every bootstrap interval draws from one generator seeded by ``c.seed``, in a fixed order.
  """
  rng = np.random.default_rng(c.seed + 99)
  Q = q["f_turn"].shape[0]
  ar = np.arange(Q)
  correct = {m: q["lp_y"][ar, k] > q["lp_alt"][ar, k] for m, k in col.items()}
  ll = {m: q["lp_y"][ar, k] / q["n_y"] for m, k in col.items()}
  if "lp_y_greedy" in q:  # the greedy set is not one of the scored columns: its own rows
    correct["oracle_bf_greedy"] = q["lp_y_greedy"] > q["lp_alt_greedy"]
    ll["oracle_bf_greedy"] = q["lp_y_greedy"] / q["n_y"]
  P = np.flatnonzero(q["need"].astype(bool))
  acc = {m: v[P] for m, v in correct.items()}  # right or wrong on each preference question

  def boot(stat):
    return _boot_ci(stat, len(P), c.n_boot, rng)

  def gain(name, stat):  # the value on all preference questions and its interval half-width
    out[name] = float(stat(np.arange(len(P))))
    out[f"{name}_ci"] = boot(stat)

  def minus(a, b):  # accuracy of method a minus that of method b on a resample
    return lambda i: acc[a][i].mean() - acc[b][i].mean()

  out = {"n_questions": int(Q), "n_preference_questions": int(len(P))}
  out.update(_method_metrics(q, col, acc, ll, P, boot))
  if "lp_y_greedy" in q:
    _add_greedy_metrics(out, q, P, c.greedy_k)
    gain("acc_gain_greedy_vs_top1", minus("oracle_bf_greedy", "oracle_bf"))
    for other in ("distilled", "recency"):
      gain(f"acc_gain_greedy_vs_{other}", minus("oracle_bf_greedy", other))
  out.update(_gate_metrics(q, g_logit, g_plc))
  for a, name in (("distilled", "distilled"), ("oracle_bf", "oracle")):
    best = lambda i, a=a: acc[a][i].mean() - max(acc[m][i].mean() for m in RETRIEVERS)
    gain(f"acc_gain_{name}_vs_best_retriever", best)
  out["best_retriever"] = max(RETRIEVERS, key=lambda m: out["accuracy"][m])
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
  # The reader check: the LM's forced choice with the gold turn (the current value) in context.
  gold = q["gold"].astype(int)[P]
  if (gold < 0).any():
    raise ValueError("every question that needs memory must have a gold turn (gold >= 0)")
  gold_ok = q["lp_y"][P, 2 + gold] > q["lp_alt"][P, 2 + gold]
  gain("accuracy_gold_turn", lambda i: gold_ok[i].mean())
  out["accuracy_gold_turn_lo"] = out["accuracy_gold_turn"] - out["accuracy_gold_turn_ci"]
  # What the claims' preconditions check against the registration: the gate and the data seeds.
  out["tau_placebo"] = float(c.tau_placebo)
  out["min_seed"] = int(np.min(q["seed"]))
  return out


def _method_metrics(q, col, acc, ll, P, boot) -> dict:
  """Per method: accuracy (with its interval and per seed), likelihood, recall, staleness, reads.

  Args:
    q: the questions' arrays (`_questions`).
    col: the context column every method chose, ``{method: [Q]}`` (`choose_contexts`).
    acc: whether each method answers each preference question, ``{method: [P]}``.
    ll: each method's log-likelihood per token of the reference, ``{method: [Q]}``.
    P: the indices of the preference questions, ``[P]``.
    boot: the bootstrap interval half-width of a statistic of a resample of the P questions.
  """
  N = q["f_turn"].shape[1]
  gold = q["gold"].astype(int)
  stale = q["stale"].astype(bool)
  has_stale = P[stale[P].any(1)]
  seeds = q["seed"][P]

  def stale_rate(m):
    return float(np.mean([0 <= col[m][i] - 2 < N and stale[i, col[m][i] - 2] for i in has_stale]))

  return {
    "accuracy": {m: float(a.mean()) for m, a in acc.items()},
    "accuracy_ci": {m: boot(lambda i, a=a: a[i].mean()) for m, a in acc.items()},
    "accuracy_per_seed": {
      m: [float(a[seeds == s].mean()) for s in np.unique(q["seed"])] for m, a in acc.items()
    },
    "loglik_per_token": {m: float(ll[m].mean()) for m in acc},
    "loglik_per_token_pref": {m: float(ll[m][P].mean()) for m in acc},
    "evidence_recall_at_1": {
      m: float(np.mean(col[m][P] - 2 == gold[P])) for m in col if m != "all_memory"
    },
    "n_changed_questions": int(len(has_stale)),
    "stale_rate_at_1": {
      m: stale_rate(m) if len(has_stale) else None
      for m in col
      if m not in ("all_memory", "no_memory")
    },
    "read_fraction": {m: float((col[m] != 0).mean()) for m in col},
    "turns_read_fraction": {
      m: float(np.mean(np.where(col[m] == N + 2, N, (col[m] != 0).astype(int))) / N) for m in col
    },
  }


def _add_greedy_metrics(out, q, P, greedy_k) -> None:
  """Recall and staleness of the greedy SET (any chosen turn), its reads and sizes, in ``out``."""
  m = "oracle_bf_greedy"
  N = q["f_turn"].shape[1]
  sel = q["greedy_sel"].astype(int)
  n_sel = (sel >= 0).sum(1)
  gold = q["gold"].astype(int)
  stale = q["stale"].astype(bool)
  has_stale = P[stale[P].any(1)]
  out["evidence_recall_at_1"][m] = float(np.mean([gold[i] in sel[i] for i in P]))
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


def _gate_metrics(q, g_logit, g_plc) -> dict:
  """How well each access signal separates the questions that need memory (AUROC), and the
  mean largest log Bayes factor (against no memory and against the placebo turn)."""
  N = q["f_turn"].shape[1]
  need = q["need"].astype(bool)
  lbf = q["lp_y"][:, 2 : 2 + N] - q["lp_y"][:, :1]
  plc = q["lp_y"][:, 2 : 2 + N] - q["lp_y"][:, 1:2]
  auroc = jax.jit(bm.gate_auroc)
  out = {
    "gate_auroc": {
      "distilled": float(auroc(g_logit.astype(np.float32), need)),
      "oracle_bf_max": float(auroc(lbf.max(1).astype(np.float32), need)),
      "placebo_bf_max": float(auroc(plc.max(1).astype(np.float32), need)),
    }
  }
  if g_plc is not None:
    out["gate_auroc"]["distilled_placebo"] = float(auroc(g_plc.astype(np.float32), need))
  for key, x in (("mean_max_placebo_lbf", plc), ("mean_max_lbf", lbf)):
    out[key] = {
      "need_memory": float(x[need].max(1).mean()),
      "memory_free": float(x[~need].max(1).mean()) if (~need).any() else None,
    }
  out["placebo_shift_mean"] = float(np.mean(q["lp_y"][:, 1] - q["lp_y"][:, 0]))
  return out


def report_view(record: dict) -> dict:
  """The methods of a results record as ``configs/default.py``'s report shows them.

  Returns:
    ``{"methods": {method: its values}, "table": {method: its values}}``: every method with
    an accuracy, and the reported ones (with the greedy arm when ``greedy_k > 0``), each with
    ``label``, ``accuracy``, ``accuracy_ci``, ``seed_mean``, ``seed_std`` (over the per-seed
    accuracies), ``loglik_per_token``, ``evidence_recall_at_1`` and ``stale_rate_at_1`` (None
    where not defined), ``read_fraction`` and ``turns_read_fraction``.
  """
  d = record["metrics"]["derived"]

  def row(m):
    per_seed = np.asarray(d["accuracy_per_seed"][m], np.float64)
    return {
      "label": f"{m} (oracle: upper bound)" if m in ORACLE_METHODS else m,
      "accuracy": d["accuracy"][m],
      "accuracy_ci": d["accuracy_ci"][m],
      "seed_mean": float(per_seed.mean()),
      "seed_std": float(per_seed.std()),
      "loglik_per_token": d["loglik_per_token"][m],
      "evidence_recall_at_1": d["evidence_recall_at_1"].get(m),
      "stale_rate_at_1": d["stale_rate_at_1"].get(m),
      "read_fraction": d["read_fraction"][m],
      "turns_read_fraction": d["turns_read_fraction"][m],
    }

  shown = METHODS + (GREEDY_METHODS if record["config"]["greedy_k"] > 0 else ())
  return {"methods": {m: row(m) for m in d["accuracy"]}, "table": {m: row(m) for m in shown}}


def scored_dialogues(store, key, c) -> list[int]:
  """Dialogue indices whose cells exist for every seed (``score_missing=False``: analyse those).

  Which dialogues get scored by a deadline depends only on their position in the scoring order,
  never on their scores.
  """
  return [i for i in range(c.n_dialogues) if all(key(s, i) in store for s in c.seeds)]


def seed_dialogues(c, seed, n_dialogues=None):
  """Seed ``seed``'s generated dialogues for config ``c`` (``n_dialogues`` overrides the config's)."""
  return bm.make_preference_dialogues(
    int(seed),
    n_dialogues=c.n_dialogues if n_dialogues is None else n_dialogues,
    n_turns=c.n_turns,
    n_queries=c.n_queries,
    change_rate=c.change_rate,
    distractor_rate=c.distractor_rate,
    density=c.density,
    memory_free_rate=c.memory_free_rate,
  )


def make_dialogues(c, n_dialogues=None):
  """Every seed's generated dialogues for config ``c`` (``n_dialogues`` overrides the config's)."""
  return {s: seed_dialogues(c, s, n_dialogues) for s in c.seeds}


def train_and_evaluate(config, workdir) -> dict:
  """Score (or resume) every dialogue, derive every method's metrics, write results.json."""
  c = config
  core.validate_seeds(tuple(c.seeds), name="seeds")
  t0 = time.time()
  model = load_model(c)
  cfg, params, _ = model
  fn = bm.make_logprob_fn(params, cfg, max_targets=c.max_targets)
  store = core.CellStore(f"{workdir}/cells")
  lm_s = 0.0
  cost = {"padded_tokens": 0, "oracle_tokens": 0, "distilled_tokens": 0}
  if c.greedy_k > 0:
    cost["greedy_tokens"] = 0
  dialogues = make_dialogues(c)
  # Dialogue-major order over seeds, so that a partial (resumable) run covers every seed.
  # Dialogues missing from the store are scored in groups of c.group_dialogues (shared batches);
  # each dialogue is still its own cell, stored as soon as its group is done.
  key = lambda s, i: f"{c.model}/greedy={c.greedy_k}/seed={s}/dialogue={i}"
  keep = scored_dialogues(store, key, c) if not c.score_missing else list(range(c.n_dialogues))
  order = [(s, i) for i in keep for s in c.seeds]
  todo = [(s, i) for s, i in order if key(s, i) not in store]
  groups = [todo[j : j + c.group_dialogues] for j in range(0, len(todo), c.group_dialogues)]
  for grp in core.progress(groups, desc=f"LM scoring ({len(todo)} dialogues, grouped)"):
    t1 = time.time()
    for (s, i), cell in zip(grp, score_dialogues([dialogues[s][i] for s, i in grp], model, fn, c)):
      store.put(key(s, i), cell)
    lm_s += time.time() - t1
  cells = {}
  for s, i in order:
    cell = store[key(s, i)]
    cells[s, i] = {k: (np.asarray(v) if isinstance(v, list) else v) for k, v in cell.items()}
    for k in cost:
      cost[k] += cell[k]
  parts = [
    _questions([dialogues[s][i] for i in keep], [cells[s, i] for i in keep], c, int(s))
    for s in c.seeds
  ]
  q = _concat(parts)
  u, g_logit, g_plc, losses = fit_distilled(q, c)
  col = choose_contexts(q, u, g_logit, c, np.random.default_rng(c.seed), g_plc=g_plc)
  d = derived_metrics(q, col, g_logit, c, g_plc=g_plc)
  nq = len(q["seed"])
  d["lm_tokens_per_question"] = {
    "oracle_bf": cost["oracle_tokens"] / nq,
    "distilled": cost["distilled_tokens"] / nq,
    "all_rows_padded": cost["padded_tokens"] / nq,
  }
  if c.greedy_k > 0:
    d["lm_tokens_per_question"]["oracle_bf_greedy"] = cost["greedy_tokens"] / nq
  d["n_dialogues_analysed"] = len(keep)
  d["dialogue_indices"] = keep if len(keep) < c.n_dialogues else "all"
  d["lm_token_saving"] = cost["oracle_tokens"] / max(cost["distilled_tokens"], 1)
  metrics = {"derived": d, "distill_loss_first_last": losses, "lm_scoring_s": lm_s}
  core.write_results(
    workdir,
    metrics=metrics,
    config=c,
    notes=f"{c.model}: {d['n_questions']} questions ({d['n_preference_questions']} need memory) "
    f"over {len(c.seeds)} seeds; generated dialogues (reconstruction); distilled selector "
    "trained leave-one-seed-out.",
    wall_time_s=time.time() - t0,
  )
  return metrics
