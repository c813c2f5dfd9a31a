"""LOCOS evidence: the toy track here, the real-model tracks (real.py), needle
probes (needle.py) and the prompt-form pilot (pilot.py); tables and figures are
declared in the configs.
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from experiments.locos import real
from experiments.locos.configs import default as default_config
from experiments.locos.configs import needle as needle_config
from experiments.locos.configs import smollm2_pilot as pilot_config

# derived_metrics: re-judged by experiments.reproduce
from experiments.locos.evaluate import DETECTORS, collapse_k, derived_metrics
from experiments.locos.needle import run_needle
from experiments.locos.pilot import run_prompt_pilot
from jaxpapers import core, lm, locos

__all__ = [
  "derived_metrics",
  "run_toy_track",
  "train_and_evaluate",
  "train_toy",
]

_TASK_FIELDS = (
  "num_names",
  "num_landmarks",
  "num_fillers",
  "prompt_len",
  "max_needles",
)
_MODEL_FIELDS = ("d_model", "n_layers", "n_heads", "n_kv_heads", "ffn_dim")
_KINDS = ("nonliteral", "literal", "parametric")


@jax.jit
def _train_step(state, batch):
  (loss, acc), grads, rest = state.value_and_grad(
    locos.toy_lm_loss, *batch, has_aux=True
  )
  return state.apply_gradients(grads, rest=rest), {"loss": loss, "acc": acc}


def train_toy(c, workdir):
  """Train (or resume) the toy decoder of ``c.toy``; returns (config, params,
  task, history)."""
  t = c.toy
  task = locos.ToyTask(**{f: t[f] for f in _TASK_FIELDS}, seed=0)
  cfg = locos.toy_model_config(task, **{f: t[f] for f in _MODEL_FIELDS})
  model = lm.Decoder(cfg, rngs=nnx.Rngs(c.seed))
  sched = optax.warmup_cosine_decay_schedule(
    0.0,
    t.learning_rate,
    min(100, t.steps // 5 + 1),
    t.steps,
    t.learning_rate / 10,
  )
  state = core.TrainState.create(model, optax.adamw(sched, weight_decay=0.01))
  fracs = dict(parametric_frac=t.parametric_frac, literal_frac=t.literal_frac)

  def batch_fn(step):
    tokens, mask = locos.toy_batch(
      task, np.random.default_rng([c.seed, step]), t.batch_size, **fracs
    )
    return jnp.asarray(tokens), jnp.asarray(mask)

  kw = dict(num_steps=t.steps, log_every=max(t.steps // 10, 1), desc="toy LM")
  kw.update(workdir=f"{workdir}/toy" if t.checkpoint_every else None)
  kw.update(checkpoint_every=t.checkpoint_every)
  state, history = core.train_loop(state, _train_step, batch_fn, **kw)
  return cfg, state.model().params(), task, history


def _toy_curves(c, params, cfg, task, tok, rng, evals, scores):
  """Exact-match accuracy against k of every probe set, heads ranked on
  non-literal probes."""
  t = c.toy
  calib = [
    p.prompt_ids
    for kind in _KINDS[:2]
    for p in locos.make_toy_trials(task, rng, 64, kind)
  ]
  mean_q = lm.mean_queries(params, calib, config=cfg, batch_size=64)
  kw = dict(
    tokenizer=tok,
    mode=t.ablation_mode,
    mean=mean_q,
    metric="exact",
    max_new_tokens=2,
  )
  kw.update(
    batch_size=min(64, t.num_eval), num_random=t.num_random, num_resamples=500
  )
  rankings = {d: scores[d] for d in DETECTORS}
  return {
    kind: locos.ablation_curve(
      params, cfg, evals[kind], rankings, t.ks, key=jax.random.key(c.seed), **kw
    )
    for kind in _KINDS
  }


def run_toy_track(c, workdir) -> dict:
  """The toy track: train, detect on non-literal and literal probes, ablate;
  returns the metrics under 'toy/'."""
  t = c.toy
  t0 = time.time()
  cfg, params, task, history = train_toy(c, workdir)
  train_s = time.time() - t0
  tok = task.tokenizer()
  rng = np.random.default_rng(c.seed + 1)
  evals = {k: locos.make_toy_trials(task, rng, t.num_eval, k) for k in _KINDS}
  ev = dict(
    tokenizer=tok,
    max_new_tokens=2,
    metric="exact",
    batch_size=min(64, t.num_eval),
  )
  base_acc = {
    k: float(locos.evaluate_probes(params, cfg, p, **ev).mean())
    for k, p in evals.items()
  }
  detect = {}  # kind -> (scores, accepted fraction)
  for kind in _KINDS[:2]:
    trials = locos.make_toy_trials(task, rng, t.num_detect, kind)
    scores, per = locos.detect_heads(
      params, cfg, trials, tok, max_steps=2, batch_size=min(32, t.num_detect)
    )
    detect[kind] = (scores, float(np.mean([p.accepted for p in per])))
  scores = detect["nonliteral"][0]
  curves = _toy_curves(c, params, cfg, task, tok, rng, evals, scores)
  jacc = {
    d: {k: locos.jaccard_top_k(scores["locos"], scores[d], k) for k in (2, 4)}
    for d in DETECTORS[1:]
  }
  return {
    "toy/train_time_s": train_s,
    "toy/final_train_loss": history[-1].get("train/loss") if history else None,
    "toy/base_accuracy": base_acc,
    "toy/accepted_fraction": {k: v[1] for k, v in detect.items()},
    "toy/top_heads": {d: locos.rank_heads(scores[d])[:4] for d in DETECTORS},
    "toy/jaccard_vs_locos": jacc,
    "toy/collapse_k_nonliteral": {
      d: collapse_k(curves["nonliteral"], d) for d in (*DETECTORS, "random")
    },
    "toy/curves": {
      k: {kk: vv for kk, vv in v.items() if kk != "per_probe"}
      for k, v in curves.items()
    },
  }


# ------------------------------------------------------------------- the binary


def _base_config(config):
  """The base config of ``config``'s view: the needle or pilot binary's, else
  default.py's."""
  if config.get("needle") is not None:
    return needle_config.get_config()
  if config.get("pilot") is not None:
    return pilot_config.get_config()
  return default_config.get_config()


def train_and_evaluate(config, workdir) -> dict:
  """Run the configured tracks on ``core.config_view`` of ``config`` (against
  its base: the needle probes of configs/needle.py, the prompt-form pilot of
  configs/smollm2_pilot.py, else configs/default.py); write results.json and the
  declared figures into `workdir`."""
  run_config, c = config, core.config_view(config, _base_config(config))
  if "needle" in c:  # long-context needle probes (configs/needle.py)
    return run_needle(c, run_config, workdir)
  if "pilot" in c:  # prompt-form pilot (configs/gemma3_pilot.py)
    return run_prompt_pilot(c, run_config, workdir)
  t0 = time.time()
  for tr in c.tracks:
    core.validate_choice(tr, name="tracks", allowed=("toy", *real.REAL_MODELS))
  if "checkpoint" in c.tracks:
    real.checkpoint_args(c.real)  # fail before any track runs, naming the flag
  metrics = run_toy_track(c, workdir) if "toy" in c.tracks else {}
  for track in real.REAL_MODELS:
    if track in c.tracks:
      metrics.update(real.run_real_track(c, workdir, track))
  metrics["derived"] = derived_metrics(metrics)
  core.write_results(
    workdir,
    metrics=metrics,
    config=run_config,  # its `report` declares the tables and figures
    notes=(
      "Toy track: synthetic task (reconstruction). Real models: "
      "quantised GGUF weights (SmolLM2-135M-Instruct Q4_1, "
      "Gemma-3-270M Q4_K_M); NoLiMa-style probes generated offline."
    ),
    wall_time_s=time.time() - t0,
  )
  return metrics
