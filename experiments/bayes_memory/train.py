"""Bayes-factor memory access and selection on generated changing-preference
dialogues.

Scores every dialogue of every seed (``jaxpapers.bayes_memory.score_dialogues``;
one cell of ``core.CellStore`` per dialogue, so a run resumes), fits the
distilled selector leave-one-seed-out, derives every method's context choice and
metrics, and writes results.json with the claims of ``configs/default.py``
judged.
"""

from __future__ import annotations

import time

import numpy as np

from experiments.bayes_memory.configs import default as default_config
from jaxpapers import bayes_memory as bm
from jaxpapers import core


def score_dialogues(ds: list[bm.Dialogue], model, fn, c) -> list[dict]:
  """:func:`jaxpapers.bayes_memory.score_dialogues` with the config's scoring
  settings."""
  names = (
    "scoring buckets batch_tokens max_targets feature_len greedy_k tau".split()
  )
  return bm.score_dialogues(ds, model, fn, **{n: c[n] for n in names})


def report_view(record: dict) -> dict:
  """The methods of a results record as ``configs/default.py``'s report shows
  them.

  Returns:
    ``{"methods": {method: its values}, "table": {method: its values}}``: every
    method with an accuracy, and the reported ones (with the greedy arm when
    ``greedy_k > 0``), each with ``label``, ``accuracy``, ``accuracy_ci``,
    ``seed_mean``, ``seed_std`` (over the per-seed accuracies),
    ``loglik_per_token``, ``evidence_recall_at_1`` and ``stale_rate_at_1`` (None
    where not defined), ``read_fraction`` and ``turns_read_fraction``.
  """
  d = record["metrics"]["derived"]

  def row(m):
    per_seed = np.asarray(d["accuracy_per_seed"][m], np.float64)
    return {
      "label": f"{m} (oracle: upper bound)" if m in bm.ORACLE_METHODS else m,
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

  shown = bm.METHODS + (
    bm.GREEDY_METHODS if record["config"]["greedy_k"] > 0 else ()
  )
  return {
    "methods": {m: row(m) for m in d["accuracy"]},
    "table": {m: row(m) for m in shown},
  }


def scored_dialogues(store, key, c) -> list[int]:
  """Dialogue indices whose cells exist for every seed (``score_missing=False``:
  analyse those).

  Which dialogues get scored by a deadline depends only on their position in the
  scoring order, never on their scores.
  """
  return [
    i for i in range(c.n_dialogues) if all(key(s, i) in store for s in c.seeds)
  ]


def make_dialogues(c):
  """Every seed's generated dialogues for config ``c``."""
  names = (
    "n_dialogues n_turns n_queries change_rate distractor_rate density "
    "memory_free_rate"
  )
  kw = {k: c[k] for k in names.split()}
  return {s: bm.make_preference_dialogues(int(s), **kw) for s in c.seeds}


def train_and_evaluate(config, workdir) -> dict:
  """Score (or resume) every dialogue, derive every method's metrics, write
  results.json."""
  c = core.config_view(config, default_config.get_config())
  core.validate_seeds(tuple(c.seeds), name="seeds")
  t0 = time.time()
  model = bm.load_model(c.model, seed=c.seed)
  cfg, params, _ = model
  fn = bm.make_logprob_fn(params, cfg, max_targets=c.max_targets)
  store = core.CellStore(f"{workdir}/cells")
  lm_s = 0.0
  dialogues = make_dialogues(c)
  # Dialogue-major order over seeds, so that a partial (resumable) run covers
  # every seed. Dialogues missing from the store are scored in groups of
  # c.group_dialogues (shared batches); each dialogue is still its own cell,
  # stored as soon as its group is done.
  key = lambda s, i: f"{c.model}/greedy={c.greedy_k}/seed={s}/dialogue={i}"
  keep = (
    scored_dialogues(store, key, c)
    if not c.score_missing
    else list(range(c.n_dialogues))
  )
  order = [(s, i) for i in keep for s in c.seeds]
  todo = [(s, i) for s, i in order if key(s, i) not in store]
  groups = [
    todo[j : j + c.group_dialogues]
    for j in range(0, len(todo), c.group_dialogues)
  ]
  for grp in core.progress(
    groups, desc=(f"LM scoring ({len(todo)} dialogues, grouped)")
  ):
    t1 = time.time()
    for (s, i), cell in zip(
      grp, score_dialogues([dialogues[s][i] for s, i in grp], model, fn, c)
    ):
      store.put(key(s, i), cell)
    lm_s += time.time() - t1
  arrays = lambda cell: {
    k: np.asarray(v) if isinstance(v, list) else v for k, v in cell.items()
  }
  cells = {(s, i): arrays(store[key(s, i)]) for s, i in order}
  # The LM tokens each method's scoring reads (cell field <name>_tokens), summed
  # over the cells.
  tokens = {
    "oracle_bf": "oracle",
    "distilled": "distilled",
    "all_rows_padded": ("padded"),
  }
  if c.greedy_k > 0:
    tokens["oracle_bf_greedy"] = "greedy"
  cost = {
    m: sum(cells[o][f"{k}_tokens"] for o in order) for m, k in tokens.items()
  }
  parts = [
    bm.question_arrays(
      [dialogues[s][i] for i in keep], [cells[s, i] for i in keep], int(s)
    )
    for s in c.seeds
  ]
  q = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
  fit_kw = {
    n: c[n] for n in "seed steps lr beta tau hidden tau_placebo".split()
  }
  u, g_logit, g_plc, losses = bm.fit_leave_one_seed_out(q, **fit_kw)
  rng = np.random.default_rng(c.seed)
  col = bm.choose_contexts(
    q, u, g_logit, tau=c.tau, tau_placebo=c.tau_placebo, rng=rng, g_plc=g_plc
  )
  boot_kw = {n: c[n] for n in "seed n_boot greedy_k tau_placebo".split()}
  d = bm.selection_metrics(q, col, g_logit, g_plc=g_plc, **boot_kw)
  d["lm_tokens_per_question"] = {m: v / len(q["seed"]) for m, v in cost.items()}
  d["n_dialogues_analysed"] = len(keep)
  d["dialogue_indices"] = keep if len(keep) < c.n_dialogues else "all"
  d["lm_token_saving"] = cost["oracle_bf"] / max(cost["distilled"], 1)
  metrics = {
    "derived": d,
    "distill_loss_first_last": losses,
    "lm_scoring_s": lm_s,
  }
  core.write_results(
    workdir,
    metrics=metrics,
    config=config,
    notes=(
      f"{c.model}: {d['n_questions']} questions "
      f"({d['n_preference_questions']} need memory) over {len(c.seeds)} "
      "seeds; generated dialogues (reconstruction); "
      "distilled selector trained leave-one-seed-out."
    ),
    wall_time_s=time.time() - t0,
  )
  return metrics
