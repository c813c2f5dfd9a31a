"""LOCOS evidence: toy retrieval track and real-model tracks (SmolLM2, Gemma-3).

`train_and_evaluate(config, workdir)` trains (or resumes) the toy decoder,
detects retrieval heads with LOCOS and the attention baselines, ablates the
top-k heads of each detector and random heads, and writes results.json plus
accuracy-vs-k plots. The real-model tracks (`REAL_MODELS`: 'smollm2', 'gemma3')
repeat detection and ablation on NoLiMa-style probes when the weights are installed.
"""

from __future__ import annotations

import logging
import time

import jax
import jax.numpy as jnp
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import optax
from flax import nnx

from jaxpapers import core, lm, locos
from jaxpapers.locos import _toy
from jaxpapers.locos._probes import make_probes

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
      m = np.asarray(curve[det]["mean"], float)  # NaN: a cell not run
      err = np.stack(
        [m - np.asarray(curve[det]["lo"], float), np.asarray(curve[det]["hi"], float) - m]
      )
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


# --------------------------------------------------------------------------- real models


_CHECKPOINT_DTYPES = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}


def _checkpoint_args(r):
  """``(directory, dtype)`` of the 'checkpoint' track from the real-model config block, checked."""
  path = r.get("checkpoint_dir", "")
  if not path:
    raise ValueError(
      "the 'checkpoint' track needs --config.real.checkpoint_dir=<a Hugging Face checkpoint "
      "directory: config.json, *.safetensors, tokenizer.json>"
    )
  name = r.get("checkpoint_dtype", "float32")
  core.validate_choice(name, name="real.checkpoint_dtype", allowed=tuple(_CHECKPOINT_DTYPES))
  return path, _CHECKPOINT_DTYPES[name]


def _load_checkpoint(r):
  """The 'checkpoint' track's model: a Hugging Face checkpoint directory on disk."""
  path, dtype = _checkpoint_args(r)
  return lm.load_safetensors(path, dtype=dtype)


# track name -> (loader of the real-model config block, label for plots and notes)
REAL_MODELS = {
  "smollm2": (lambda r: lm.load_smollm2(), "SmolLM2-135M-Instruct (Q4_1)"),
  "gemma3": (lambda r: lm.load_gemma3(), "Gemma-3-270M (pretrained, Q4_K_M)"),
  "checkpoint": (_load_checkpoint, "Hugging Face checkpoint (real.checkpoint_dir)"),
}


def _chat(tok, msg, system_prompt):
  """One user turn and the start of the assistant turn.

  With `system_prompt` the tokenizer's own chat template renders it (Gemma's turns; ChatML
  with SmolLM2's default system message); without, ChatML turns with no system message.
  """
  if system_prompt:
    return tok.apply_chat_template([{"role": "user", "content": msg}])
  return f"<|im_start|>user\n{msg}<|im_end|>\n<|im_start|>assistant\n"


def _parametric_probes(tok, landmarks, system_prompt=False):
  """Landmark -> city recall with no context (the track's chat rendering)."""
  return [
    locos.Trial(
      tok.encode(
        _chat(tok, f"In which city is the {land}? Answer with the city name only.", system_prompt)
        + f"The {land} is in the city of"
      ),
      (0, 0),
      city,
      "parametric",
    )
    for land, city in landmarks
  ]


def _prompt_kw(r):
  """The probes' prompt form (`real.prompt_format`, `real.shots`; default: chat, no examples)."""
  return dict(
    prompt_format=r.get("prompt_format", "chat"),
    shots=r.get("shots", 0),
    shot_seed=r.get("shot_seed", 0),
  )


def _known_landmarks(params, cfg, tok, r, store, gen):
  """The landmarks whose city the model names with no context (the `parametric/known` cell)."""
  no_mean = jnp.zeros((cfg.n_layers, cfg.n_heads, cfg.head_dim), jnp.float32)
  no_abl = np.zeros((cfg.n_layers, cfg.n_heads), bool)
  par_probes = _parametric_probes(tok, locos.LANDMARKS, r.system_prompt)
  par_texts = store.get_or_compute(
    "parametric/known",
    lambda _: _texts(params, cfg, tok, par_probes, no_abl, no_mean, gen),
  )
  par_got = [locos.rouge1_recall(p.answer, t) for p, t in zip(par_probes, par_texts)]
  return par_probes, {lc for lc, g in zip(locos.LANDMARKS, par_got) if g >= 0.5}


def run_prompt_pilot(c, workdir) -> dict:
  """Answered rate of each prompt form on pilot probes, and the form the rule picks.

  The pilot probes are non-literal probes over the *detection* half of the entities (their
  own generator), so no evaluation item takes part in the choice. Every form in
  `c.pilot.forms` ((prompt_format, shots) pairs) renders the same items with the answer
  stem; the unablated model generates `real.max_steps` tokens; a probe is answered when
  ROUGE-1 recall of the name is >= 0.5 (the filtered protocol's filter). The rule, fixed
  before the pilot: the highest answered rate wins; a tie goes to the shorter mean prompt.
  No ablation is run.
  """
  r, pc = c.real, c.pilot
  t0 = time.time()
  track = c.tracks[0]
  loader, label = REAL_MODELS[track]
  try:
    cfg, params, tok = loader(r)
  except lm.ModelNotAvailable as e:
    metrics = {"pilot/skipped": str(e)}
    core.write_results(workdir, metrics=metrics, config=c, notes=str(e), issue_verdicts=False)
    return metrics
  store = core.CellStore(f"{workdir}/cells")
  gen = dict(
    max_new_tokens=r.max_steps,
    stop_ids=tok.stop_ids(),
    batch_size=r.get("gen_batch_size", r.batch_size),
    pad_to=r.buckets,
  )
  (det_names, det_lands), _ = locos.split_entities(c.seed)
  _, known = _known_landmarks(params, cfg, tok, r, store, gen)
  det_lands = tuple(x for x in det_lands if x in known)
  no_mean = jnp.zeros((cfg.n_layers, cfg.n_heads, cfg.head_dim), jnp.float32)
  no_abl = np.zeros((cfg.n_layers, cfg.n_heads), bool)
  forms, rows = {}, []
  for fmt, shots in pc.forms:
    probes = make_probes(
      np.random.default_rng([c.seed, 3]),
      tokenizer=tok,
      num=pc.num_probes,
      kind="nonliteral",
      names=det_names,
      landmarks=det_lands,
      filler_sentences=r.filler_sentences,
      system_prompt=r.system_prompt,
      prompt_format=fmt,
      shots=int(shots),
      shot_seed=r.get("shot_seed", 0),
    )
    t1 = time.time()
    texts = store.get_or_compute(
      f"pilot/{fmt}/shots={shots}",
      lambda _, p=probes: _texts(params, cfg, tok, p, no_abl, no_mean, gen),
    )
    ok = [locos.rouge1_recall(p.answer, t) >= 0.5 for p, t in zip(probes, texts)]
    key = f"{fmt}/shots={shots}"
    forms[key] = {
      "prompt_format": fmt,
      "shots": int(shots),
      "answered": int(sum(ok)),
      "answered_rate": float(np.mean(ok)),
      "mean_prompt_tokens": float(np.mean([len(p.prompt_ids) for p in probes])),
      "examples": texts[:6],
      "time_s": time.time() - t1,
    }
    rows.append([key, f"{sum(ok)}/{len(ok)}", forms[key]["mean_prompt_tokens"]])
    logging.info("pilot %s: %d/%d answered", key, sum(ok), len(ok))
  chosen = max(forms, key=lambda k: (forms[k]["answered_rate"], -forms[k]["mean_prompt_tokens"]))
  metrics = {
    "pilot/model": label,
    "pilot/num_probes": pc.num_probes,
    "pilot/rule": "highest answered rate (ROUGE-1 recall >= 0.5, answer stem); ties: shorter "
    "mean prompt",
    "pilot/forms": forms,
    "pilot/chosen": chosen,
    "pilot/known_landmarks": f"{len(known)}/{len(locos.LANDMARKS)}",
    "pilot/time_s": time.time() - t0,
  }
  core.write_results(
    workdir,
    metrics=metrics,
    config=c,
    table_markdown=core.markdown_table(["form", "answered", "mean prompt tokens"], rows),
    notes="Prompt-form pilot on detection-half entities; no ablation, no claims.",
    wall_time_s=time.time() - t0,
    issue_verdicts=False,
  )
  return metrics


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
  kw = {k: v for k, v in gen.items() if k != "seed_block"}
  return locos.generate_texts(params, cfg, probes, tok, ablation=abl, **kw)


def _seed_blocks(probes, gen, num_seeds):
  """Random-head seed of every probe: seeds cycle over blocks of each length bucket.

  A block is `gen['seed_block']` probes (default: `gen['batch_size']`), so the assignment
  does not depend on how many rows a generation call holds.
  """
  block_size = gen.get("seed_block", gen["batch_size"])
  seed_of = np.zeros(len(probes), int)
  block = 0
  for _, idx in locos.bucket_indices([len(p.prompt_ids) for p in probes], gen["pad_to"]):
    for j0 in range(0, len(idx), block_size):
      for i in idx[j0 : j0 + block_size]:
        seed_of[i] = block % num_seeds
      block += 1
  return seed_of


def _batched_texts(params, cfg, tok, probes, masks, mean_q, gen):
  """Generations of (probe, head set) pairs in one batched pass: `masks` is [N, L, H]."""
  abl = lm.HeadAblation(mask=jnp.asarray(masks), mean=mean_q, mode="mean_q")
  kw = {k: v for k, v in gen.items() if k != "seed_block"}
  return locos.generate_texts(params, cfg, probes, tok, ablation=abl, **kw)


def _run_conditions(
  params,
  cfg,
  tok,
  probes,
  conds,
  mean_q,
  gen,
  store,
  tag,
  only=None,
  deadline=None,
  exempt_baseline=True,
  group_rows=None,
  reuse=(),
):
  """Generations per probe for every condition (resumable cells).

  Random masks cycle over blocks of probes (each block uses the next seed, across length
  buckets), so one random curve costs one detector's. `only` (indices) restricts a
  condition other than the baseline to those probes; the others get NaN scores.

  Cells not yet stored are computed together: their (probe, head set) rows are
  concatenated, up to `group_rows` rows per group (default: one cell per group), and
  generated in full batches with per-row ablation masks (`locos.generate_texts`), then
  stored cell by cell. A group not yet started is skipped (its cells get NaN scores and are
  listed in `res['skipped']`) once `time.time()` passes `deadline`: conditions run in the
  order given, so the most important come first. The unablated baseline runs whatever the
  time when `exempt_baseline`.

  `reuse`: cells of earlier runs over a prefix of the same probe list, as (baseline tag,
  baseline probe indices, ablation tag, ablation probe indices) -- e.g. a run with fewer
  evaluation items from the same generator (its items are the first ones of this list). A
  row (probe, head set) of a cell not yet stored is read from the earlier cell of the same
  condition when that cell covered the probe with the same head set (random heads: the same
  seed's mask); only the other rows are generated. Rows never interact, so this equals
  generating them again.
  """
  res = {"skipped": []}
  n_seeds = max(len(m) for _, _, m in conds)
  plan = []  # (name, k, cell, sub, seed_of, per-row masks)
  for name, k, masks in conds:
    sub = np.arange(len(probes)) if only is None or name == "baseline" else np.asarray(only)
    seed_of = _seed_blocks([probes[i] for i in sub], gen, n_seeds)
    rows = np.stack([masks[s % len(masks)] for s in seed_of]) if sub.size else None
    plan.append((name, k, f"{tag}/{name}/k={k}", sub, seed_of, rows))
  store = core.CellStore(store.directory)  # another process may have stored cells
  pending = [p for p in plan if p[2] not in store and p[3].size]
  have = {p[2]: _reused_rows(p, probes, conds, gen, n_seeds, store, reuse) for p in pending}
  todo = {p[2]: [j for j in range(p[3].size) if j not in have[p[2]]] for p in pending}
  groups, cur, n_cur = [], [], 0
  for p in pending:
    n = len(todo[p[2]])
    if cur and group_rows and n_cur + n > group_rows or cur and not group_rows:
      groups.append(cur)
      cur, n_cur = [], 0
    cur.append(p)
    n_cur += n
  if cur:
    groups.append(cur)
  skipped = set()
  for group in groups:
    late = deadline is not None and time.time() > deadline
    if late and not (exempt_baseline and all(p[0] == "baseline" for p in group)):
      skipped.update(p[2] for p in group if not (exempt_baseline and p[0] == "baseline"))
      group = [p for p in group if exempt_baseline and p[0] == "baseline"]
      if not group:
        continue
    t0 = time.time()
    rows = [probes[p[3][j]] for p in group for j in todo[p[2]]]
    texts = []
    if rows:
      masks = np.concatenate([p[5][todo[p[2]]] for p in group])
      texts = _batched_texts(params, cfg, tok, rows, masks, mean_q, gen)
    j = 0
    for p in group:
      got = dict(have[p[2]])
      for r in todo[p[2]]:
        got[r] = texts[j]
        j += 1
      store.put(p[2], [got[r] for r in range(p[3].size)])
    logging.info(
      "%d cells (%d rows generated, %d reused) in %.1fs: %s", len(group), len(rows),
      sum(len(have[p[2]]) for p in group), time.time() - t0, ", ".join(p[2] for p in group),
    )  # fmt: skip
  for name, k, cell, sub, seed_of, _ in plan:
    if cell in skipped:
      res[(name, k)] = np.full(len(probes), np.nan)
      res[(name, k, "texts")] = [""] * len(probes)
      res["skipped"].append(cell)
      logging.info("%s skipped (time budget)", cell)
      continue
    texts = store[cell] if sub.size else []
    scores = np.full(len(probes), np.nan)
    scores[sub] = [locos.rouge_l(probes[i].answer, t) for i, t in zip(sub, texts)]
    full = [""] * len(probes)
    for i, t in zip(sub, texts):
      full[i] = t
    res[(name, k)] = scores
    res[(name, k, "texts")] = full
    if name == "random":
      res[("random", k, "seeds")] = int(len(set(seed_of.tolist()))) if sub.size else 0
    logging.info("%s ROUGE-L %.3f (%d probes)", cell, np.nanmean(scores), sub.size)
  return res


def _reused_rows(plan_row, probes, conds, gen, n_seeds, store, reuse):
  """{row: text} of one pending cell's rows found in earlier runs' cells (see `_run_conditions`)."""
  name, k, _, sub, _, rows = plan_row
  masks = next(m for n, kk, m in conds if (n, kk) == (name, k))
  got = {}
  for base_tag, base_sub, abl_tag, abl_sub in reuse:
    old_tag, old_sub = (base_tag, base_sub) if name == "baseline" else (abl_tag, abl_sub)
    old = f"{old_tag}/{name}/k={k}"
    if old_sub is None or old not in store:
      continue
    old_sub = np.asarray(old_sub)
    texts = store[old]
    if len(texts) != old_sub.size:
      raise ValueError(f"reuse: cell {old!r} holds {len(texts)} rows, expected {old_sub.size}")
    if old_sub.size and old_sub.max() >= len(probes):
      raise ValueError(f"reuse: cell {old!r} covers probe {old_sub.max()} of {len(probes)}")
    old_seed = _seed_blocks([probes[i] for i in old_sub], gen, n_seeds)
    pos = {int(i): j for j, i in enumerate(old_sub)}
    for r, i in enumerate(sub):
      j = pos.get(int(i))
      if (
        r not in got and j is not None and np.array_equal(masks[old_seed[j] % len(masks)], rows[r])
      ):
        got[r] = texts[j]
  return got


def _stem_tag(num_eval, ablation_num_eval=0):
  """Cell-name prefix of the filtered protocol's ablation cells (the baseline's: no `first=`)."""
  return f"stem/n={num_eval}" + (f"/first={ablation_num_eval}" if ablation_num_eval else "")


def _ablated_probes(answers, texts, ablation_num_eval=0):
  """Indices of the probes the filtered protocol ablates: answered among the first n items.

  A probe is answered when ROUGE-1 recall of its answer in the unablated generation is
  >= 0.5; with `ablation_num_eval` = n > 0 only items 0 .. n-1 are kept (0: every item).
  """
  n = int(ablation_num_eval or 0)
  if n < 0 or n > len(answers):
    raise ValueError(f"ablation_num_eval must be in [0, {len(answers)}], got {ablation_num_eval!r}")
  if len(texts) != len(answers):
    raise ValueError(
      f"texts must hold one generation per answer, got {len(texts)} for {len(answers)}"
    )
  ok = np.flatnonzero([locos.rouge1_recall(a, t) >= 0.5 for a, t in zip(answers, texts)])
  return ok[ok < n] if n else ok


def _collapse_index(curve, b):
  """First grid index whose mean is at or below half the baseline (never: len(grid))."""
  below = curve <= 0.5 * b
  return np.where(below.any(0), below.argmax(0), curve.shape[0])


def _advantage(boot, boot_base, mat, base, ks, grid, baselines):
  """Collapse-index advantage (strongest baseline minus LOCOS) on the k values `grid`."""
  rows = [ks.index(k) for k in grid]
  if any(np.isnan(mat[d][rows]).any() for d in ("locos", *baselines)):  # a cell not run
    return {"grid": list(grid), "baselines": list(baselines), "advantage": None}
  ci = {d: _collapse_index(boot[d][rows], boot_base) for d in ("locos", *baselines)}
  point = {
    d: int(_collapse_index(mat[d].mean(1)[rows][:, None], np.array([base.mean()]))[0])
    for d in ("locos", *baselines)
  }
  adv_boot = np.min([ci[d] for d in baselines], axis=0) - ci["locos"]
  adv = min(point[d] for d in baselines) - point["locos"]
  lo, hi = np.quantile(adv_boot, [0.025, 0.975])
  return {
    "grid": list(grid),
    "baselines": list(baselines),
    "collapse_index": point,
    "collapse_k": {d: (grid[i] if i < len(grid) else None) for d, i in point.items()},
    "advantage": float(adv),
    "ci": [float(lo), float(hi)],
    "halfwidth": float(max(adv - lo, hi - adv)),
  }


def _curves(res, detectors, ks, keep, num_resamples, seed, claim_ks=None, claim_baselines=None):
  """Means, 95 % bootstrap intervals and collapse statistics over the probes in `keep`.

  Every detector and k is resampled with the *same* probe indices (paired bootstrap), so the
  intervals of differences and of collapse indices account for the shared probes. The
  claim's statistic (`collapse_step_advantage`) uses the k values `claim_ks` and the
  baselines `claim_baselines` (the rule fixed in configs/default.py); the same statistic on
  the full grid against each baseline is reported beside it (`advantage_full_grid`).
  """
  keep = np.asarray(keep)
  names = ("baseline", *detectors, "random")
  baselines = [d for d in detectors if d != "locos"]
  claim_baselines = list(claim_baselines or baselines)
  claim_ks = [k for k in (claim_ks or ks) if k in ks]
  if keep.size == 0:
    return None
  ks = list(ks)
  base = res[("baseline", 0)][keep]
  mat = {d: np.stack([res[(d, k)][keep] for k in ks]) for d in names[1:]}  # [K, N]
  rng = np.random.default_rng(seed)
  idx = rng.integers(0, keep.size, size=(num_resamples, keep.size))
  boot_base = base[idx].mean(1)  # [R]
  boot = {d: m[:, idx].mean(-1) for d, m in mat.items()}  # [K, R]
  out = {
    "ks": ks,
    "num_probes": int(keep.size),
    "baseline": {
      "mean": float(base.mean()),
      "lo": float(np.quantile(boot_base, 0.025)),
      "hi": float(np.quantile(boot_base, 0.975)),
    },
  }

  def nan_none(x):  # cells skipped for time: null in results.json
    return [None if np.isnan(v) else float(v) for v in x]

  for d, m in mat.items():
    out[d] = {
      "mean": nan_none(m.mean(1)),
      "lo": nan_none(np.quantile(boot[d], 0.025, axis=1)),
      "hi": nan_none(np.quantile(boot[d], 0.975, axis=1)),
    }
  out["not_run"] = {d: [k for k, row in zip(ks, m) if np.isnan(row).any()] for d, m in mat.items()}
  claim = _advantage(boot, boot_base, mat, base, ks, claim_ks, claim_baselines)
  out["claim_grid"] = claim["grid"]
  out["claim_baselines"] = claim["baselines"]
  rows = [ks.index(k) for k in claim["grid"]]

  def first_collapse(m, grid_rows, grid):  # None: a cell not run before the collapse
    for i, r in enumerate(grid_rows):
      if np.isnan(m[r]).any():
        return None, "not run"
      if m[r].mean() <= 0.5 * base.mean():
        return i, grid[i]
    return len(grid_rows), None

  point = {d: first_collapse(m, rows, claim["grid"]) for d, m in mat.items()}
  out["collapse_index"] = {d: v[0] for d, v in point.items()}
  out["collapse_k"] = {d: v[1] for d, v in point.items()}
  out["collapse_step_advantage"] = claim["advantage"]
  out["collapse_step_advantage_ci"] = claim.get("ci")
  out["collapse_step_advantage_halfwidth"] = claim.get("halfwidth")
  out["collapse_k_full_grid"] = {
    d: first_collapse(m, list(range(len(ks))), ks)[1] for d, m in mat.items()
  }
  out["advantage_full_grid"] = {
    d: _advantage(boot, boot_base, mat, base, ks, ks, [d]) for d in baselines
  }
  # paired differences LOCOS - each baseline at each k (negative: LOCOS hurts more)
  diffs = {}
  for d in (*baselines, "random"):
    dd = boot["locos"] - boot[d]
    diffs[d] = {
      "mean": nan_none((mat["locos"] - mat[d]).mean(1)),
      "lo": nan_none(np.quantile(dd, 0.025, axis=1)),
      "hi": nan_none(np.quantile(dd, 0.975, axis=1)),
    }
  out["locos_minus"] = diffs
  return out


def _wait_for_cell(store, cell, workdir, deadline):
  """The store once `cell` is on disk (re-read every 20 s), or None past `deadline`."""
  while cell not in store:
    if deadline is not None and time.time() > deadline:
      return None
    time.sleep(20)
    store = core.CellStore(f"{workdir}/cells")
  return store


def _help(c, workdir, store, params, cfg, tok, ev_stem, ev_paper, conds, mean_q, gen, deadline):
  """A helper process (`real.helper`): computes cells into the shared store, writes nothing else.

  The paper protocol (baseline, then k = 50 for LOCOS, contrastive, random and Wu), then, once
  the main process has stored the unablated filtered generations, the claim's filtered cells
  in reverse order (the main process runs them forward) and random heads at the largest k.
  Cells already on disk are read, not recomputed. Rerunning the main process on the same
  workdir assembles every stored cell into results.json.
  """
  r = c.real
  order = {"baseline": 0, "locos": 1, **{d: 2 + i for i, d in enumerate(r.claim_baselines)}}
  order.update(random=8, wu=9)
  paper = sorted(
    [cd for cd in conds if cd[1] in (0, *r.paper_ks)], key=lambda cd: order.get(cd[0], 10)
  )
  gen_paper = dict(gen, max_new_tokens=r.paper_max_steps)
  tag = f"paper/n={len(ev_paper)}"
  for cd in paper:
    store = core.CellStore(f"{workdir}/cells")
    _run_conditions(
      params, cfg, tok, ev_paper, [cd], mean_q, gen_paper, store, tag, deadline=deadline
    )
  tag = f"stem/n={r.num_eval}"
  store = _wait_for_cell(store, f"{tag}/baseline/k=0", workdir, deadline)
  if store is None:
    return
  texts = store[f"{tag}/baseline/k=0"]
  correct = np.flatnonzero(
    [locos.rouge1_recall(p.answer, t) >= 0.5 for p, t in zip(ev_stem, texts)]
  )
  first = [cd for cd in conds if cd[0] in ("locos", *r.claim_baselines) and cd[1] in r.claim_ks]
  more = [cd for cd in conds if cd[0] == "random" and cd[1] == max(r.ks)]
  for cd in [*reversed(first), *more]:
    store = core.CellStore(f"{workdir}/cells")
    _run_conditions(
      params, cfg, tok, ev_stem, [cd], mean_q, gen, store, tag, only=correct, deadline=deadline
    )


def run_real_track(c, workdir, track) -> tuple[dict, str]:
  """Detection and ablation on a real model (`REAL_MODELS[track]`); metrics under `track/`."""
  r = c.real
  loader, label = REAL_MODELS[track]
  try:
    cfg, params, tok = loader(r)
  except lm.ModelNotAvailable as e:
    return {f"{track}/skipped": str(e)}, f"{label} track skipped: {e}"
  t_start = time.time()
  store = core.CellStore(f"{workdir}/cells")
  L, H = cfg.n_layers, cfg.n_heads
  stop = tok.stop_ids()
  (det_names, det_lands), (ev_names, ev_lands) = locos.split_entities(
    c.seed, names=locos.NAMES, landmarks=locos.LANDMARKS
  )
  # generation calls hold `gen_batch_size` rows; random seeds cycle over blocks of
  # `batch_size` probes (as in the committed runs, whatever the generation batch)
  gen = dict(
    max_new_tokens=r.max_steps,
    stop_ids=stop,
    batch_size=r.get("gen_batch_size", r.batch_size),
    seed_block=r.batch_size,
    pad_to=r.buckets,
  )
  timings = {}
  # 1. the landmarks the model knows (both halves); probes use only those
  t0 = time.time()
  par_probes, known = _known_landmarks(params, cfg, tok, r, store, gen)
  det_lands = tuple(x for x in det_lands if x in known)
  ev_lands = tuple(x for x in ev_lands if x in known)
  timings["known_landmarks_s"] = time.time() - t0
  probe_kw = dict(tokenizer=tok, filler_sentences=r.filler_sentences, system_prompt=r.system_prompt)
  probe_kw.update(_prompt_kw(r))
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
      max_steps=r.detect_max_steps,
      stop_ids=stop,
      batch_size=r.batch_size,
      pad_to=r.buckets,
    )
    return {
      "scores": {d: v.tolist() for d, v in sc.items()},
      "accepted": [bool(p.accepted) for p in per],
      "generations": [p.generation for p in per],
    }

  helper = r.get("helper", False)
  budget = r.get("time_budget_s", 0)
  deadline = t_start + budget if budget else None
  if helper:  # a second process sharing the cells: the main process detects
    store = _wait_for_cell(store, f"detection/n={r.num_detect}", workdir, deadline)
    if store is None:
      return {}, ""
  det = store.get_or_compute(f"detection/n={r.num_detect}", detect)
  scores = {d: np.asarray(v) for d, v in det["scores"].items()}
  timings["detection_s"] = time.time() - t0
  logging.info("detection %.1fs, %d accepted", timings["detection_s"], sum(det["accepted"]))
  # 3. evaluation probes on the other half: the same items with an answer stem (ours) and
  #    without (the paper's protocol); identical generator state gives identical items
  ev_kw = dict(num=r.num_eval, kind="nonliteral", names=ev_names, landmarks=ev_lands, **probe_kw)
  ev_stem = make_probes(np.random.default_rng([c.seed, 2]), answer_prefix=True, **ev_kw)
  ev_paper = make_probes(np.random.default_rng([c.seed, 2]), answer_prefix=False, **ev_kw)
  t0 = time.time()
  calib = [p.prompt_ids for p in ev_paper[: r.num_calibration]]
  mean_q = lm.mean_queries(params, calib, config=cfg, batch_size=r.batch_size)
  key = jax.random.key(c.seed)
  ks = list(r.ks)
  dets = tuple(r.detectors)
  conds = _conditions(scores, dets, ks, L, H, r.num_random, key)
  ev_paper = ev_paper[: r.get("paper_num_eval", r.num_eval)]
  if helper:
    _help(c, workdir, store, params, cfg, tok, ev_stem, ev_paper, conds, mean_q, gen, deadline)
    return {}, ""
  # filtered protocol: the unablated model on every probe, ablations on the probes it answers;
  # rows of earlier runs over fewer items of the same generator (`real.reuse_from`: their
  # (num_eval, ablation_num_eval)) are read back, not generated again
  reuse_from = [(int(n), int(a)) for n, a in r.get("reuse_from", ())]
  for n, a in reuse_from:
    if not 0 < n <= r.num_eval or not 0 <= a <= n:
      raise ValueError(
        f"real.reuse_from entries must be (num_eval, ablation_num_eval) with 0 < num_eval <= "
        f"{r.num_eval} and 0 <= ablation_num_eval <= num_eval, got {(n, a)}"
      )
  base_reuse = [(f"stem/n={n}", np.arange(n), _stem_tag(n, a), None) for n, a in reuse_from]
  base_only = [cd for cd in conds if cd[0] == "baseline"]
  res_base = _run_conditions(
    params, cfg, tok, ev_stem, base_only, mean_q, gen, store, f"stem/n={r.num_eval}",
    reuse=base_reuse,
  )  # fmt: skip
  base_texts = res_base[("baseline", 0, "texts")]
  answers = [p.answer for p in ev_stem]
  base_r1 = np.asarray([locos.rouge1_recall(a, t) for a, t in zip(answers, base_texts)])
  # CPU time: the ablations may use only the answered probes among the first
  # `real.ablation_num_eval` items (0: all); the unablated model still runs on every probe
  n_abl = int(r.get("ablation_num_eval", 0) or 0)
  correct = _ablated_probes(answers, base_texts, n_abl)
  reuse = [
    (bt, bs, at, _ablated_probes(answers[:n], base_texts[:n], a))
    for (bt, bs, at, _), (n, a) in zip(base_reuse, reuse_from)
  ]
  claim_ks = tuple(r.claim_ks)
  first = [cd for cd in conds if cd[0] in ("locos", *r.claim_baselines) and cd[1] in claim_ks]
  rest = [cd for cd in conds if cd[0] != "baseline" and cd not in first]
  # the first place of each detector (a dict comprehension would keep the last: LOCOS and
  # the claim's baselines, listed again in `dets`, would fall behind random heads)
  rank = {}
  for d in ("locos", *r.claim_baselines, "random", *dets):
    rank.setdefault(d, len(rank))
  # random heads at the largest k (the random-heads claim) first, then the claim grid's k
  rest.sort(
    key=lambda cd: (cd[1] not in claim_ks, cd[:2] != ("random", max(ks)), rank[cd[0]], cd[1])
  )
  stem_kw = dict(
    only=correct, deadline=deadline, group_rows=r.get("group_rows", 0) or None, reuse=reuse
  )
  tag = _stem_tag(r.num_eval, n_abl)
  # priority when a time budget is set: the claim's cells, the parametric control at the
  # claim's k, random heads at the largest k, random heads and Wu at the claim's k, the other
  # k values, then the paper's protocol (its 100-step decodes cost the most per probe)
  res_stem = _run_conditions(params, cfg, tok, ev_stem, first, mean_q, gen, store, tag, **stem_kw)
  res_stem.update({key: v for key, v in res_base.items() if key != "skipped"})
  timings["filtered_claim_cells_s"] = time.time() - t0
  t0 = time.time()
  par_ev = [p for p, lc in zip(par_probes, locos.LANDMARKS) if lc in ev_lands]
  par_res = {}

  def run_parametric(ks_par):
    for name, k, masks in [cd for cd in conds if cd[0] in ("baseline", "locos")]:
      cell = f"parametric/{name}/k={k}"
      if k not in ks_par or (name, k) in par_res:
        continue
      late = deadline is not None and cell not in store and time.time() > deadline
      if late and name != "baseline":
        continue
      texts = store.get_or_compute(
        cell, lambda _, m=masks[0]: _texts(params, cfg, tok, par_ev, m, mean_q, gen)
      )
      par_res[(name, k)] = [locos.rouge1_recall(p.answer, t) for p, t in zip(par_ev, texts)]

  run_parametric((0, *claim_ks))
  timings["parametric_s"] = time.time() - t0
  t0 = time.time()
  more = _run_conditions(params, cfg, tok, ev_stem, rest, mean_q, gen, store, tag, **stem_kw)
  res_stem["skipped"] += more.pop("skipped")
  res_stem.update(more)
  timings["filtered_other_cells_s"] = time.time() - t0
  # 4. parametric control at the other k: the evaluation-half landmarks, LOCOS heads ablated
  t0 = time.time()
  run_parametric(ks)
  timings["parametric_s"] += time.time() - t0
  t0 = time.time()
  # the paper's protocol: every probe (the first `paper_num_eval`), no stem, its decode length
  paper_conds = [cd for cd in conds if cd[1] in (0, *r.paper_ks)]
  gen_paper = dict(gen, max_new_tokens=r.paper_max_steps)
  res_paper = _run_conditions(
    params,
    cfg,
    tok,
    ev_paper,
    paper_conds,
    mean_q,
    gen_paper,
    store,
    f"paper/n={len(ev_paper)}",
    deadline=deadline,
    exempt_baseline=False,
    group_rows=r.get("group_rows", 0) or None,
  )
  timings["paper_s"] = time.time() - t0
  paper_run = not np.isnan(res_paper[("baseline", 0)]).any()
  paper_texts = res_paper[("baseline", 0, "texts")] if paper_run else [""]
  curve_kw = dict(claim_ks=tuple(r.claim_ks), claim_baselines=tuple(r.claim_baselines))
  paper_ks = list(r.paper_ks)
  curves = {
    "filtered": _curves(res_stem, dets, ks, correct, r.num_resamples, c.seed, **curve_kw),
    "paper": None
    if not paper_ks or not paper_run
    else _curves(
      res_paper,
      dets,
      paper_ks,
      np.arange(len(ev_paper)),
      r.num_resamples,
      c.seed,
      **dict(curve_kw, claim_ks=[k for k in r.claim_ks if k in paper_ks] or paper_ks),
    ),
  }
  par_base = float(np.mean(par_res[("baseline", 0)])) if par_ev else float("nan")
  parametric = {
    "num_probes": len(par_ev),
    "baseline": par_base,
    "ks": ks,
    "locos": [
      float(np.mean(par_res[("locos", k)])) if ("locos", k) in par_res else None for k in ks
    ]
    if par_ev
    else [],
  }
  skipped = res_stem["skipped"] + res_paper["skipped"]
  skipped += [f"parametric/locos/k={k}" for k in ks if ("locos", k) not in par_res]
  seeds = {
    proto: {k: res.get(("random", k, "seeds")) for k in kk}
    for proto, res, kk in (("filtered", res_stem, ks), ("paper", res_paper, paper_ks))
  }
  metrics = {
    f"{track}/model": label,
    f"{track}/entities": {
      "detection": {"names": len(det_names), "landmarks": len(det_lands)},
      "evaluation": {"names": len(ev_names), "landmarks": len(ev_lands)},
      "known_landmarks": f"{len(known)}/{len(locos.LANDMARKS)}",
      "known_landmark_list": sorted(x[0] for x in known),
      "shared_entities": len(
        (set(det_names) & set(ev_names)) | ({x[1] for x in det_lands} & {x[1] for x in ev_lands})
      ),
    },
    f"{track}/num_detect_probes": len(det_probes),
    f"{track}/accepted_detection_trials": int(sum(det["accepted"])),
    f"{track}/num_eval_probes": len(ev_stem),
    f"{track}/num_paper_probes": len(ev_paper),
    f"{track}/eval_correct_fraction": float(np.mean(base_r1 >= 0.5)),
    f"{track}/ablation_items": n_abl or len(ev_stem),
    f"{track}/reused_from": [{"num_eval": n, "ablation_num_eval": a} for n, a in reuse_from],
    f"{track}/ablated_probes": int(correct.size),
    f"{track}/random_seeds_used": seeds,
    f"{track}/examples": {
      "stem_baseline": res_base[("baseline", 0, "texts")][:5],
      "paper_baseline": res_paper[("baseline", 0, "texts")][:5],
      "answers": [p.answer for p in ev_stem[:5]],
    },
    f"{track}/paper_generation_tokens": {
      "mean": float(np.mean([len(tok.encode(t, add_bos=False)) for t in paper_texts])),
      "max": int(max(len(tok.encode(t, add_bos=False)) for t in paper_texts)),
    },
    f"{track}/context_tokens": {
      "stem_mean": float(np.mean([len(p.prompt_ids) for p in ev_stem])),
      "max": int(max(len(p.prompt_ids) for p in ev_stem)),
    },
    f"{track}/top_heads": {d: locos.rank_heads(scores[d])[:10] for d in DETECTORS},
    f"{track}/jaccard_vs_locos@10": {
      d: locos.jaccard_top_k(scores["locos"], scores[d], 10) for d in DETECTORS[1:]
    },
    f"{track}/curves": curves,
    f"{track}/parametric": parametric,
    f"{track}/timings_s": timings,
    f"{track}/time_budget_s": budget,
    f"{track}/cells_not_run": skipped,
    f"{track}/time_s": time.time() - t_start,
  }
  panels = {
    f"{track} {n} ({cv['num_probes']} probes)": cv for n, cv in curves.items() if cv is not None
  }
  if panels:
    fig = _curves_figure(panels, f"{label}, mean-q ablation, ROUGE-L")
    core.save_figure(fig, workdir, f"{track}_ablation")
  dets = [*dets, "random"]
  rows = []
  for n, cv in curves.items():
    if cv is None:
      continue
    for i, k in enumerate(cv["ks"]):
      rows.append(
        [track, n, cv["num_probes"], k, f"{cv['baseline']['mean']:.2f}"]
        + [
          "not run"
          if cv[d]["mean"][i] is None
          else f"{cv[d]['mean'][i]:.2f} [{cv[d]['lo'][i]:.2f}, {cv[d]['hi'][i]:.2f}]"
          for d in dets
        ]
      )
  table = core.markdown_table(
    ["model", "protocol", "probes", "k", "no ablation"] + [f"{d} [95% CI]" for d in dets], rows
  )
  return metrics, table


def train_and_evaluate(config, workdir) -> dict:
  """Run the configured tracks; write results.json and plots into `workdir`."""
  if config.get("needle") is not None:  # long-context needle probes (configs/needle.py)
    return run_needle(config, workdir)
  if config.get("pilot") is not None:  # prompt-form pilot (configs/gemma3_pilot.py)
    return run_prompt_pilot(config, workdir)
  t0 = time.time()
  for tr in config.tracks:
    core.validate_choice(tr, name="tracks", allowed=("toy", *REAL_MODELS))
  if "checkpoint" in config.tracks:
    _checkpoint_args(config.real)  # fail before any track runs, naming the flag
  metrics, tables = {}, []
  if "toy" in config.tracks:
    m, tab = run_toy_track(config, workdir)
    metrics.update(m)
    tables.append(tab)
  for track in REAL_MODELS:
    if track in config.tracks:
      m, tab = run_real_track(config, workdir, track)
      metrics.update(m)
      tables.append(tab)
  if "real" in config and config.real.get("helper", False):
    return metrics  # a helper process only fills the shared cell store
  metrics["derived"] = derived_metrics(metrics)
  core.write_results(
    workdir,
    metrics=metrics,
    config=config,
    table_markdown="\n\n".join(tables),
    notes="Toy track: synthetic task (reconstruction). Real models: quantised GGUF weights "
    "(SmolLM2-135M-Instruct Q4_1, Gemma-3-270M Q4_K_M); NoLiMa-style probes generated offline.",
    wall_time_s=time.time() - t0,
  )
  return metrics


_ATTENTION_DETECTORS = ("wu", "contrastive", "attention_spatial")


def derived_metrics(metrics) -> dict:
  """The values the claims in ``configs/default.py`` are judged on (pure).

  Toy track: ``collapse_k_advantage`` (best attention detector's collapse k minus LOCOS's, a
  detector that never halves the score counting as max k + 1) and
  ``parametric_retained_at_collapse``. SmolLM2 track, per protocol (``filtered``,
  ``paper``): ``collapse_step_advantage`` = collapse grid index of the claim's baselines
  (``real.claim_baselines``: contrastive attention) minus LOCOS's on the claim's grid
  (``real.claim_ks``: {1, 5, 20, 50}; never collapsing = one step past the grid), its
  bootstrap half-width, and the random-heads drop at the largest k; ``parametric_retained`` = parametric recall with LOCOS's filtered-protocol
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
  for track in REAL_MODELS:
    real = metrics.get(f"{track}/curves")
    if not real:
      continue
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
        "random_drop_at_max_k": None
        if cv["random"]["mean"][-1] is None
        else cv["baseline"]["mean"] - cv["random"]["mean"][-1],
      }
    par = metrics.get(f"{track}/parametric", {})
    filt = real.get("filtered")
    rec["parametric_retained"] = None
    if filt and par.get("locos") and par["baseline"] > 0:
      i = filt["collapse_index"]["locos"]
      if i is not None and i < len(filt["claim_grid"]):
        got = par["locos"][list(par["ks"]).index(filt["claim_grid"][i])]
        rec["parametric_retained"] = None if got is None else got / par["baseline"]
    out[track] = rec
  return out


# --------------------------------------------------------------------------- long context


def run_needle(c, workdir) -> dict:
  """LOCOS on long-context needle probes (`locos.make_needle_probes`), per context length.

  For each length in `c.needle.context_tokens`: detection probes over one entity half and
  evaluation probes over the other (`split_entities`), every detector scored by
  `detect_heads`, then ROUGE-L of the evaluation generations unablated and with the top-k
  heads of each of `c.needle.detectors` mean-query ablated (means from the evaluation
  prompts, as in the default run). Prompts are padded to `lm.bucket_length(T)`; prefill uses
  the blockwise attention (`attention='auto'`). Writes results.json; no claims are judged.
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
