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
import jax.numpy as jnp
import numpy as np

from jaxpapers import bayes_memory as bm
from jaxpapers import core, lm

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
)
RETRIEVERS = ("similarity", "bm25", "recency")


# --------------------------------------------------------------------------- model


def load_model(c):
  """(config, params, tokenizer) of the configured LM."""
  core.validate_choice(c.model, name="model", allowed=("smollm2", "tiny"))
  if c.model == "smollm2":
    return lm.load_smollm2()
  cfg = lm.LMConfig(
    vocab_size=257, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, head_dim=8, ffn_dim=32
  )
  # NumPy init: no per-shape random-number programs to compile in the smoke setting.
  rng = np.random.default_rng(c.seed)
  params = {
    k: jnp.asarray(
      np.ones(shp, np.float32) if "norm" in k else 0.3 * rng.normal(size=shp).astype(np.float32)
    )
    for k, shp in lm.param_shapes(cfg).items()
  }
  return cfg, params, bm.WordTokenizer(cfg.vocab_size)


# --------------------------------------------------------------------------- LM scoring


def _score_rows(fn, rows, c):
  """Summed log-probs of rows [(ids, attn, tgt)] (unpadded-length numpy rows), bucketed."""
  buckets = sorted(c.buckets)
  out = np.zeros(len(rows), np.float64)
  groups: dict[int, list[int]] = {}
  padded_tokens = 0
  for r, (_, attn, _) in enumerate(rows):
    n = int(attn.sum())
    b = next((b for b in buckets if b >= n), None)
    if b is None:
      raise ValueError(f"a row has {n} tokens > the largest bucket {buckets[-1]}")
    groups.setdefault(b, []).append(r)
  for b, idx in sorted(groups.items()):
    B = max(1, c.batch_tokens // b)  # rows per batch: fixed per bucket (one compile each)
    for s in range(0, len(idx), B):
      chunk = idx[s : s + B]
      take = chunk + [chunk[0]] * (B - len(chunk))  # fixed batch shape: one compile per bucket
      ids = np.stack([rows[i][0][:b] for i in take])
      attn = np.stack([rows[i][1][:b] for i in take])
      tgt = np.stack([rows[i][2][:b] for i in take])
      lp = np.asarray(fn(ids, attn, tgt))
      out[chunk] = lp[: len(chunk)]
      padded_tokens += B * b
  return out, padded_tokens


def _pool(params, cfg, tok, texts, c):
  ids = np.zeros((len(texts), c.feature_len), np.int32)
  mask = np.zeros_like(ids, bool)
  for i, t in enumerate(texts):
    e = tok.encode(t, add_bos=False)[: c.feature_len]
    ids[i, : len(e)] = e
    mask[i, : len(e)] = True
  return np.asarray(bm.mean_pooled_features(params, ids, mask, config=cfg))


def score_dialogue(d: bm.Dialogue, model, fn, c) -> dict:
  """The LM evidence of one dialogue (JSON-able): log-probs per context, features, costs.

  Context columns: 0 no memory, 1 placebo turn, 2 + i turn i alone, N + 2 the whole history.
  """
  cfg, params, tok = model
  turns = list(d.turns)
  contexts = [[], [bm.PLACEBO_TURN]] + [[t] for t in turns] + [turns]
  rows, where = [], []
  big = max(c.buckets)
  for qi, q in enumerate(d.queries):
    for kind, y, ctxs in (("y", q.y, contexts), ("alt", q.y_alt, [contexts[0]] + contexts[2:])):
      if y is None:
        continue
      ids, attn, tgt = bm.encode_rows(tok, ctxs, q.x, y, max_len=big)
      cols = list(range(len(contexts))) if kind == "y" else [0] + list(range(2, len(contexts)))
      for r, col in enumerate(cols):
        rows.append((ids[r], attn[r], tgt[r]))
        where.append((qi, kind, col))
  lp, padded = _score_rows(fn, rows, c)
  ncol = len(contexts)
  lp_y = np.full((len(d.queries), ncol), np.nan)
  lp_alt = np.full((len(d.queries), ncol), np.nan)
  real_oracle = 0
  for (qi, kind, col), v, (_, attn, _) in zip(where, lp, rows):
    (lp_y if kind == "y" else lp_alt)[qi, col] = v
    if kind == "y" and col != 1 and col != ncol - 1:
      real_oracle += int(attn.sum())  # what the oracle needs: baseline + one row per turn
  feats = _pool(params, cfg, tok, turns + [q.x for q in d.queries], c)
  n_y = [len(tok.encode(q.y, add_bos=False)) for q in d.queries]
  feat_tokens = sum(min(len(tok.encode(t, add_bos=False)), c.feature_len) for t in turns)
  q_tokens = sum(min(len(tok.encode(q.x, add_bos=False)), c.feature_len) for q in d.queries)
  return dict(
    lp_y=lp_y,
    lp_alt=lp_alt,
    n_y=n_y,
    f_turn=feats[: len(turns)],
    f_query=feats[len(turns) :],
    padded_tokens=padded,
    oracle_tokens=real_oracle,
    distilled_tokens=feat_tokens + q_tokens,
  )


# --------------------------------------------------------------------------- analysis


def _questions(dialogues, cells, c, seed):
  """Flatten one seed's questions into arrays."""
  out = {k: [] for k in ("lp_y", "lp_alt", "n_y", "f_turn", "f_query", "gold", "stale", "need")}
  out["bm25"], out["seed"] = [], []
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
  return {k: np.asarray(v, np.float64 if k.startswith("lp") else None) for k, v in out.items()}


def _concat(parts):
  return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def choose_contexts(q, u, g_logit, c, rng) -> dict[str, np.ndarray]:
  """Context column chosen by every method for every question (see `score_dialogue`)."""
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
  return col


def fit_distilled(q_all, c):
  """Leave-one-seed-out distilled utilities u and gate logits for every question."""
  Q, N, _ = q_all["f_turn"].shape
  u = np.zeros((Q, N))
  g = np.zeros(Q)
  pos = np.tile(np.linspace(0.0, 1.0, N), (Q, 1)).astype(np.float32)
  lbf = (q_all["lp_y"][:, 2 : 2 + N] - q_all["lp_y"][:, :1]).astype(np.float32)
  valid = np.ones((Q, N), bool)
  ft, fq = q_all["f_turn"].astype(np.float32), q_all["f_query"].astype(np.float32)
  losses = {}
  for s in np.unique(q_all["seed"]):
    tr, te = q_all["seed"] != s, q_all["seed"] == s
    model, gate, loss = bm.train_utility_model(
      ft[tr],
      fq[tr],
      pos[tr],
      valid[tr],
      lbf[tr],
      seed=int(c.seed),
      steps=c.steps,
      lr=c.lr,
      beta=c.beta,
      tau=c.tau,
      hidden=c.hidden,
    )
    ut, gt = bm.predict_utilities(model, gate, ft[te], fq[te], pos[te], valid[te])
    u[te], g[te] = np.asarray(ut), np.asarray(gt)
    losses[int(s)] = [float(loss[0]), float(loss[-1])]
  return u, g, losses


def _boot_ci(stat, n, n_boot, rng):
  """95% percentile interval half-width of stat(idx) over question resamples."""
  vals = np.array([stat(rng.integers(n, size=n)) for _ in range(n_boot)])
  vals = vals[np.isfinite(vals)]
  if len(vals) < 2:
    return float("nan")
  lo, hi = np.percentile(vals, [2.5, 97.5])
  return float((hi - lo) / 2)


def derived_metrics(q, col, g_logit, c) -> dict:
  """Accuracy, likelihood, recall, reads and the claims' derived values (pure given inputs)."""
  rng = np.random.default_rng(c.seed + 99)
  Q, N = q["f_turn"].shape[:2]
  need = q["need"].astype(bool)
  ar = np.arange(Q)
  correct = {m: q["lp_y"][ar, k] > q["lp_alt"][ar, k] for m, k in col.items()}
  ll = {m: q["lp_y"][ar, k] / q["n_y"] for m, k in col.items()}
  P = np.flatnonzero(need)
  out = {"n_questions": int(Q), "n_preference_questions": int(len(P))}
  out["accuracy"] = {m: float(correct[m][P].mean()) for m in col}
  out["accuracy_ci"] = {
    m: _boot_ci(lambda i, m=m: correct[m][P][i].mean(), len(P), c.n_boot, rng) for m in col
  }
  out["accuracy_per_seed"] = {
    m: [float(correct[m][P][q["seed"][P] == s].mean()) for s in np.unique(q["seed"])] for m in col
  }
  out["loglik_per_token"] = {m: float(ll[m].mean()) for m in col}
  out["loglik_per_token_pref"] = {m: float(ll[m][P].mean()) for m in col}
  gold = q["gold"].astype(int)
  out["evidence_recall_at_1"] = {
    m: float(np.mean(col[m][P] - 2 == gold[P])) for m in col if m not in ("all_memory",)
  }
  stale = q["stale"].astype(bool)
  has_stale = P[stale[P].any(1)]
  out["n_changed_questions"] = int(len(has_stale))
  out["stale_rate_at_1"] = {
    m: float(np.mean([0 <= col[m][i] - 2 < N and stale[i, col[m][i] - 2] for i in has_stale]))
    if len(has_stale)
    else None
    for m in col
    if m not in ("all_memory", "no_memory")
  }
  reads = {m: (col[m] != 0) for m in col}
  out["read_fraction"] = {m: float(reads[m].mean()) for m in col}
  out["turns_read_fraction"] = {
    m: float(np.mean(np.where(col[m] == N + 2, N, (col[m] != 0).astype(int))) / N) for m in col
  }
  lbf = q["lp_y"][:, 2 : 2 + N] - q["lp_y"][:, :1]
  plc = q["lp_y"][:, 2 : 2 + N] - q["lp_y"][:, 1:2]
  auroc = jax.jit(bm.gate_auroc)
  out["gate_auroc"] = {
    "distilled": float(auroc(g_logit.astype(np.float32), need)),
    "oracle_bf_max": float(auroc(lbf.max(1).astype(np.float32), need)),
    "placebo_bf_max": float(auroc(plc.max(1).astype(np.float32), need)),
  }
  out["mean_max_lbf"] = {"need_memory": float(lbf[need].max(1).mean())}
  out["mean_max_lbf"]["memory_free"] = float(lbf[~need].max(1).mean()) if (~need).any() else None
  out["placebo_shift_mean"] = float(np.mean(q["lp_y"][:, 1] - q["lp_y"][:, 0]))

  def best_ret(i):
    return max(correct[m][P][i].mean() for m in RETRIEVERS)

  def diff(a, ref_fn):
    return lambda i: correct[a][P][i].mean() - ref_fn(i)

  full = np.arange(len(P))
  for a, name in (("distilled", "distilled"), ("oracle_bf", "oracle")):
    f = diff(a, best_ret)
    out[f"acc_gain_{name}_vs_best_retriever"] = float(f(full))
    out[f"acc_gain_{name}_vs_best_retriever_ci"] = _boot_ci(f, len(P), c.n_boot, rng)
  out["best_retriever"] = max(RETRIEVERS, key=lambda m: out["accuracy"][m])
  g = lambda i: correct["distilled_gated"][P][i].mean() - correct["distilled"][P][i].mean()
  out["acc_gain_gated_vs_ungated"] = float(g(full))
  out["acc_gain_gated_vs_ungated_ci"] = _boot_ci(g, len(P), c.n_boot, rng)

  def ratio(i):
    den = correct["oracle_bf"][P][i].mean() - correct["no_memory"][P][i].mean()
    num = correct["distilled"][P][i].mean() - correct["no_memory"][P][i].mean()
    return num / den if den > 0 else np.nan

  out["distilled_gain_ratio"] = float(ratio(full))
  out["distilled_gain_ratio_ci"] = _boot_ci(ratio, len(P), c.n_boot, rng)
  return out


def _plots(d, workdir):
  from jaxpapers.core import report

  methods = list(d["accuracy"])
  fig = report.grouped_bars(
    methods,
    {
      "accuracy (preference questions)": (
        [d["accuracy"][m] for m in methods],
        [d["accuracy_ci"][m] for m in methods],
      ),
      "evidence recall@1": ([d["evidence_recall_at_1"].get(m, np.nan) for m in methods], None),
    },
    ylabel="fraction",
    title="Turn selection on changing-preference dialogues (95% bootstrap CI)",
    horizontal_line=0.5,
    figsize=(10, 4),
  )
  core.save_figure(fig, workdir, "accuracy")
  import matplotlib.pyplot as plt

  fig, ax = plt.subplots(figsize=(5, 3.8))
  for m in methods:
    ax.errorbar(
      d["turns_read_fraction"][m], d["accuracy"][m], yerr=d["accuracy_ci"][m], fmt="o", capsize=3
    )
    ax.annotate(m, (d["turns_read_fraction"][m], d["accuracy"][m]), fontsize=7)
  ax.set(xlabel="fraction of history turns put in the prompt", ylabel="accuracy")
  ax.set_title("Memory read vs accuracy")
  fig.tight_layout()
  core.save_figure(fig, workdir, "reads_vs_accuracy")


def train_and_evaluate(config, workdir) -> dict:
  """Score (or resume) every dialogue, derive every method's metrics, write results.json."""
  c = config
  t0 = time.time()
  model = load_model(c)
  cfg, params, _ = model
  fn = bm.make_logprob_fn(params, cfg, max_targets=c.max_targets)
  store = core.CellStore(f"{workdir}/cells")
  lm_s = 0.0
  cost = {"padded_tokens": 0, "oracle_tokens": 0, "distilled_tokens": 0}
  dialogues = {
    s: bm.make_preference_dialogues(
      int(s),
      n_dialogues=c.n_dialogues,
      n_turns=c.n_turns,
      n_queries=c.n_queries,
      change_rate=c.change_rate,
      distractor_rate=c.distractor_rate,
      density=c.density,
      memory_free_rate=c.memory_free_rate,
    )
    for s in c.seeds
  }
  # Dialogue-major order over seeds, so that a partial (resumable) run covers every seed.
  order = [(s, i) for i in range(c.n_dialogues) for s in c.seeds]
  cells = {}
  for s, i in core.progress(order, desc="LM scoring (dialogue x seed)"):
    d = dialogues[s][i]
    t1 = time.time()
    cell = store.get_or_compute(
      f"{c.model}/seed={s}/dialogue={i}", lambda _, d=d: score_dialogue(d, model, fn, c)
    )
    lm_s += time.time() - t1
    cells[s, i] = {k: (np.asarray(v) if isinstance(v, list) else v) for k, v in cell.items()}
    for k in cost:
      cost[k] += cell[k]
  parts = [
    _questions(dialogues[s], [cells[s, i] for i in range(c.n_dialogues)], c, int(s))
    for s in c.seeds
  ]
  q = _concat(parts)
  u, g_logit, losses = fit_distilled(q, c)
  col = choose_contexts(q, u, g_logit, c, np.random.default_rng(c.seed))
  d = derived_metrics(q, col, g_logit, c)
  nq = len(q["seed"])
  d["lm_tokens_per_question"] = {
    "oracle_bf": cost["oracle_tokens"] / nq,
    "distilled": cost["distilled_tokens"] / nq,
    "all_rows_padded": cost["padded_tokens"] / nq,
  }
  d["lm_token_saving"] = cost["oracle_tokens"] / max(cost["distilled_tokens"], 1)
  metrics = {"derived": d, "distill_loss_first_last": losses, "lm_scoring_s": lm_s}
  _plots(d, workdir)
  rows = [
    [
      m,
      core.MeanStd(d["accuracy"][m], d["accuracy_ci"][m]),
      core.MeanStd(
        float(np.mean(d["accuracy_per_seed"][m])), float(np.std(d["accuracy_per_seed"][m]))
      ),
      d["loglik_per_token"][m],
      d["evidence_recall_at_1"].get(m),
      d["stale_rate_at_1"].get(m),
      d["read_fraction"][m],
      d["turns_read_fraction"][m],
    ]
    for m in METHODS
  ]
  table = core.markdown_table(
    [
      "method",
      "accuracy ± 95% CI",
      "per-seed mean ± std",
      "log p(y)/token",
      "recall@1",
      "stale@1",
      "reads memory",
      "turns read",
    ],
    rows,
    fmt=".3f",
  )
  core.write_results(
    workdir,
    metrics=metrics,
    config=c,
    table_markdown=table,
    notes=f"{c.model}: {d['n_questions']} questions ({d['n_preference_questions']} need memory) "
    f"over {len(c.seeds)} seeds; generated dialogues (reconstruction); distilled selector "
    "trained leave-one-seed-out.",
    wall_time_s=time.time() - t0,
  )
  return metrics
