"""LAnR evidence on a frozen LM: latent multi-hop retrieval and learned
stopping.

``train_and_evaluate`` builds the entity-disjoint multi-hop world and reads
every context once (``input_pipeline``), trains P_q, P_d and two control heads
(entropy and oracle labels) per seed on ``core.Sweep``, runs the multi-hop loop
online on the test questions per seed and reads every stopping rule off its
trace, beside the seed-independent references (``evaluate``), and writes
results.json with the claims judged by the rules in ``configs/default.py``.
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

from experiments.lanr import evaluate as E
from experiments.lanr.configs import default as default_config
from experiments.lanr.input_pipeline import prepare
from jaxpapers import core
from jaxpapers import lanr as L

# ---------------------------------------------------------------- head training


def lanr_cfg(c) -> L.LAnRConfig:
  """The library's config of the heads and the loop (``control_labels`` at its
  default)."""
  keys = (
    "rep_dim",
    "rep_layer",
    "t_max",
    "tau_stop",
    "tau_ret",
    "lambda_ret",
    "lambda_ctl",
  )
  return L.LAnRConfig(**{k: c[k] for k in keys}, control_width=c.control_width)


def make_sweep(c, hidden):
  cfg = lanr_cfg(c)
  tx = optax.adamw(c.lr, weight_decay=c.weight_decay)

  def init_fn(hp, key, data):
    k1, k2 = jax.random.split(key)
    heads = L.init_retrieval_heads(k1, hidden, rep_dim=c.rep_dim)
    ctl = L.init_control_head(k2, hidden, width=c.control_width)
    p = {"heads": heads, "ctl_entropy": ctl, "ctl_oracle": ctl}
    return p, tx.init(p)

  def loss_fn(p, data):
    batch = {k: data[k] for k in ("z", "doc_h", "next_doc", "in_context")}
    loss, aux = L.lanr_loss(
      p["heads"],
      p["ctl_entropy"],
      dict(batch, ctl_label=data["y_entropy"]),
      cfg=cfg,
    )
    zo = jax.lax.stop_gradient(data["z"])
    ctl_o = L.control_loss(
      L.control_logits(p["ctl_oracle"], zo), data["y_oracle"]
    )
    return loss + cfg.lambda_ctl * ctl_o, dict(aux, ctl_oracle=ctl_o)

  def step_fn(state, hp, key, step, data):
    p, opt = state
    (loss, aux), g = jax.value_and_grad(loss_fn, has_aux=True)(p, data)
    upd, opt = tx.update(g, opt, p)
    return (optax.apply_updates(p, upd), opt), {"loss": loss, **aux}

  return core.Sweep(init_fn, step_fn)


def head_data(feats: dict, rows: list[dict]) -> tuple[dict, dict]:
  """The heads' training data on the gold-prefix train contexts, with both
  control labels.

  Entropy labels follow rule (a) with eps = the median training answer entropy
  H̄; oracle labels rule (b) (the context holds every gold document).

  Returns:
    ``(data, eps)``: data holds z [M, H], doc_h [N, H], next_doc int32 [M],
    in_context bool [M, N], y_entropy and y_oracle float [M] (jax arrays); eps
    the answer and [PRED] entropy thresholds.
  """
  h_tr = feats["train"]["h_answer"]
  eps = {
    "answer": float(np.median(h_tr)),
    "pred": float(np.median(feats["train"]["h_pred"])),
  }
  data = {
    "z": feats["train"]["z"],
    "doc_h": feats["doc"]["h"],
    "next_doc": np.asarray([r["next_doc"] for r in rows], np.int32),
    "in_context": np.stack([r["in_context"] for r in rows]),
    "y_entropy": np.asarray(L.entropy_labels(jnp.asarray(h_tr), eps["answer"])),
    "y_oracle": np.asarray([float(r["sufficient"]) for r in rows], np.float32),
  }
  return jax.tree.map(jnp.asarray, data), eps


def train_heads(c, data: dict) -> core.SweepResult:
  """P_q, P_d and both control heads, one run per seed (``c.seeds`` runs of
  ``c.steps``)."""
  return make_sweep(c, data["z"].shape[1]).run(
    {"lr": np.full(c.seeds, c.lr, np.float32)},
    jax.random.split(jax.random.key(c.seed), c.seeds),
    num_steps=c.steps,
    chunk_size=c.steps,
    data=data,
    desc=f"heads: {c.seeds} seeds",
    show_progress=False,
  )


def _seed_cell(c, world, feats, p, eps) -> dict:
  ts = time.time()
  return E.evaluate_seed(c, world, feats, p, eps) | {
    "online_s": time.time() - ts
  }


def train_and_evaluate(config, workdir) -> dict:
  """Runs the experiment on ``core.config_view(config)``; writes
  results.json."""
  c = core.config_view(config, default_config.get_config())
  core.validate_seeds(c.seeds, name="seeds")
  t0 = time.time()
  world, feats, stats = prepare(c, workdir)
  hops = np.asarray([q.hops for q in world["test_q"]])
  data, eps = head_data(feats, world["rows"]["train"])
  store = core.CellStore(f"{workdir}/cells")
  res = train_heads(c, data)
  ref = store.get_or_compute(
    "references", lambda _: E.reference_runs(c, world, feats)
  )
  grid = {
    f"seed/{s}": (
      c,
      world,
      feats,
      jax.tree.map(lambda x, s=s: np.asarray(x[s]), res.state[0]),
      eps,
    )
    for s in range(c.seeds)
  }
  per_seed = core.fill_cells(store, grid, _seed_cell, desc="seeds")

  refs = E.reference_metrics(ref, per_seed, hops, c.t_max, stats["documents"])
  refs["bm25_question_only_diagnostics"] = ref["bm25_diagnostics"]
  sufficiency = E.sufficiency_metrics(
    feats, world["rows"]["test"], per_seed, c.n_boot
  )
  sufficiency["entropy_label_rate_train"] = float(
    np.asarray(data["y_entropy"]).mean()
  )
  sufficiency["oracle_label_rate_train"] = float(
    np.asarray(data["y_oracle"]).mean()
  )
  sufficiency["eps"] = eps
  stats["contexts_read"] = len(world["store"])
  metrics = {
    "data": stats,
    "methods": E.aggregate_methods(per_seed, hops),
    "references": refs,
    "sufficiency": sufficiency,
    "next_hop_accuracy": E.next_hop_metrics(
      c, feats, world["rows"]["test"], per_seed, ref
    ),
    "train_final": {
      k: np.asarray(v)[:, -1].tolist() for k, v in res.history.items()
    },
    "online_s_per_seed": [r["online_s"] for r in per_seed],
    "derived": E.claim_values(
      per_seed, ref, hops, sufficiency, c.t_max, c.n_boot
    ),
  }
  d = metrics["data"]
  notes = (
    f"{d['lm']}; {d['documents']} documents, {d['train_questions']} train / "
    f"{d['test_questions']} held-out questions (1-3 hops, disjoint entities); "
    f"{c.seeds} seeds of the heads; synthetic multi-hop QA proxy."
  )
  core.write_results(
    workdir,
    metrics=metrics,
    config=config,
    notes=notes,
    wall_time_s=time.time() - t0,
  )
  return metrics
