"""SOLA evidence: a real teacher distilled into a student with a different
tokenizer.

``train_and_evaluate(config, workdir)`` reads the texts, tokenizations, teacher
cache and cost tables of ``input_pipeline.prepare``; trains the student with
each method (CE-only, ULD, MinED-style, ALM-style, SOLA and its ablations) for
the same steps, batch and seeds (``core.Sweep``: seeds vmapped, one program per
group of methods; each direct baseline computes only its own loss) and measures
held-out bits per byte; and writes results.json (claims judged by the rules in
``configs/default.py``) and plots.
"""

from __future__ import annotations

import functools
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

from experiments.sola import input_pipeline
from experiments.sola.configs import default as default_config
from jaxpapers import core
from jaxpapers import sola as S

LABELS = {
  "ce": "CE only (no teacher)",
  "uld": "ULD",
  "mined": "MinED-style KL",
  "alm": "ALM-style chunk likelihood",
  "sola": "SOLA",
  "sola_lexical": "SOLA, lexical cost only",
  "sola_hard": "SOLA, hard counts only",
  "sola_none": "SOLA, no local support (K_T x K_S)",
  "same_tok_ce": "teacher's tokenizer, CE only",
  "same_tok_kd": "teacher's tokenizer, top-k KL (upper reference)",
}
METHODS = tuple(LABELS)


def student_config(c, vocab):
  return S.StudentConfig(vocab_size=vocab, max_len=c.max_len, **c.student)


# The direct baselines each train in a program of their own, computing only
# their own loss. ``joint_baselines`` (the committed runs before this split)
# trains them in one vmapped program in which every run computes all three
# teacher losses and weights two of them by 0: the same students (tested) at the
# cost of every baseline loss in every run.
BASELINES = ("ce", "uld", "mined", "alm")
GROUPS = {
  **{m: (m,) for m in BASELINES},
  "sola": ("sola", "sola_lexical", "sola_hard"),
  "sola_none": ("sola_none",),
  "same_tok": input_pipeline.SAME_TOK,
}


def make_sweep(c, group: str, cfg):
  """One program per group; the methods of a group differ only in
  hyperparameters (vmapped)."""
  # the teacher-tokenizer student's data
  sfx = "_tt" if group == "same_tok" else ""
  sched = optax.warmup_cosine_decay_schedule(
    0.0, 1.0, max(c.steps // 10, 1), c.steps, 0.1
  )

  def tx(hp):
    return optax.adamw(lambda n: hp["lr"] * sched(n), weight_decay=0.01)

  def init_fn(hp, key, data):
    params = S.init_student(key, cfg)
    return params, tx(hp).init(params)

  def loss_fn(params, hp, batch, key, data):
    logits = S.student_logits(params, batch["tokens"], cfg)  # [B, T, V]
    tl = S.token_logp(logits, batch["tokens"], batch["len"])
    n_tok = jnp.maximum((batch["len"] - 1).sum(), 1)
    ce = -tl.sum() / n_tok
    # the same random subset of aligned pairs for every distillation method
    # [B, Kd] each
    sel, mask = S.sample_aligned_pairs(key, batch["valid"], c.kd_blocks)
    pos = jnp.take_along_axis(batch["blk_pos"], sel, 1)
    s_logits = jnp.take_along_axis(logits, pos[..., None], 1)  # [B, Kd, V]
    t_ids = jnp.take_along_axis(batch["t_ids"], sel[..., None], 1)
    t_logp = jnp.take_along_axis(batch["t_logp"], sel[..., None], 1)
    coverage = jnp.float32(0.0)
    if group == "baselines" or group in BASELINES:
      kd = _baseline_kd(c, group, hp, batch, sel, mask, tl, s_logits, t_logp)
    elif group == "same_tok":
      # plain KL(teacher top-k || student) with the identity map: the MinED-style loss when
      # both sides share one vocabulary
      kl = S.mined_kl_loss(
        t_ids[..., : c.k], t_logp[..., : c.k], s_logits, mask=mask
      )
      kd = hp["w_kd"] * kl
    else:
      table = data["table"]
      if "table_hard" in data:
        table = jax.tree.map(
          lambda a, b: jnp.where(hp["hard"], a, b), data["table_hard"], table
        )
      table = jax.tree.map(
        lambda a, b: jnp.where(hp["lexical"], a, b), data["table_lex"], table
      )
      ot = dict(k=c.k, epsilon=c.epsilon, iters=c.iters)
      support = "none" if group == "sola_none" else "bidirectional"
      kd, a = S.sola_loss(
        t_ids, t_logp, s_logits, table, mask=mask, support=support, **ot
      )
      coverage = a["coverage"]
    return ce + c.lam * kd, {"ce": ce, "coverage": coverage, "kd": kd}

  def step_fn(state, hp, key, step, data):
    params, opt = state
    k1, k2 = jax.random.split(jax.random.fold_in(key, step))
    n = data["train" + sfx]["tokens"].shape[0]
    idx = jax.random.choice(k1, n, (c.batch_size,), replace=False)
    batch = jax.tree.map(lambda a: a[idx], data["train" + sfx])
    (loss, aux), g = jax.value_and_grad(loss_fn, has_aux=True)(
      params, hp, batch, k2, data
    )
    upd, opt = tx(hp).update(g, opt, params)
    return (optax.apply_updates(params, upd), opt), {"loss": loss, **aux}

  def eval_fn(state, hp, key, data):
    bpb = lambda d: S.student_bits_per_byte(
      state[0], d["tokens"], d["len"], d["n_bytes"], cfg
    )
    return {
      "bpb_eval": bpb(data["eval" + sfx]),
      "bpb_code": bpb(data["code" + sfx]),
    }

  return core.Sweep(init_fn, step_fn, eval_fn)


def _baseline_kd(c, group, hp, batch, sel, mask, tl, s_logits, t_logp):
  """The direct baselines' distillation loss on the selected blocks ``sel``
  ([B, Kd]).

  A group of one baseline computes its own loss only; the joint group
  ``'baselines'`` all three, each weighted by its ``hp['w_<name>']``.
  """
  need = BASELINES[1:] if group == "baselines" else (group,)  # static
  kd = jnp.float32(0.0)
  if "uld" in need:
    kd = kd + hp["w_uld"] * S.uld_loss(t_logp, s_logits, mask=mask)
  if "mined" in need:
    mapped = jnp.take_along_axis(batch["mined"], sel[..., None], 1)
    mined = S.mined_kl_loss(mapped, t_logp[..., : c.k], s_logits, mask=mask)
    kd = kd + hp["w_mined"] * mined
  if "alm" in need:
    # ALM-style: binarised KL of chunk likelihoods on the same selected blocks
    n_blk = batch["valid"].shape[1]
    rows = jnp.arange(mask.shape[0])[:, None]
    blk_mask = jnp.zeros(batch["valid"].shape, bool).at[rows, sel].set(mask)
    alm, _ = S.alm_chunk_loss(
      batch["t_tok_logp"],
      batch["t_block"],
      tl,
      batch["s_block"],
      n_blocks=n_blk,
      mask=blk_mask,
    )
    kd = kd + hp["w_alm"] * alm
  return kd


def _method_rows(i: int, seeds: int) -> slice:
  """The sweep rows of the ``i``-th method of a group: methods are the outer
  axis, seeds inner."""
  return slice(i * seeds, (i + 1) * seeds)


def _group_hparams(c, methods):
  """Per sweep row (methods outer, seeds inner): the loss weights and ablation
  switches."""
  rows = [m for m in methods for _ in range(c.seeds)]
  is_ = lambda name, dtype=np.float32: np.array(
    [m == name for m in rows], dtype
  )
  return {
    "w_uld": is_("uld"),
    "w_mined": is_("mined"),
    "w_alm": is_("alm"),
    "w_kd": is_("same_tok_kd"),
    "lexical": is_("sola_lexical", bool),
    "hard": is_("sola_hard", bool),
    "lr": np.full(len(rows), c.lr, np.float32),
  }


_ms = functools.partial(core.seed_summary, ci_key=None, values_key="per_seed")


def derived_metrics(methods: dict, n_seeds: int) -> dict:
  """The values the claims are judged on (pure; see ``configs/default.py``)."""
  out = {}
  if "sola" not in methods:
    return out
  sola = methods["sola"]["bpb_eval"]
  base = [m for m in ("uld", "mined", "alm") if m in methods]

  def diff(a, b):  # seed-mean difference a - b and its 95% noise half-width
    d = a["mean"] - b["mean"]
    noise = 2.0 * float(np.sqrt((a["std"] ** 2 + b["std"] ** 2) / n_seeds))
    return d, noise

  bpb = lambda m: methods[m]["bpb_eval"]
  if base:
    best = min(base, key=lambda m: bpb(m)["mean"])
    d, h = diff(sola, bpb(best))
    out.update(
      best_ctkd_baseline=best,
      sola_minus_best_ctkd_bpb=d,
      sola_vs_best_ctkd_noise=h,
    )
  if "ce" in methods:
    d, h = diff(sola, bpb("ce"))
    out.update(sola_minus_ce_bpb=d, sola_vs_ce_noise=h)
  # the ablations and the same-tokenizer reference (SOLA minus each)
  for m in (
    "alm",
    "sola_none",
    "sola_hard",
    "sola_lexical",
    "same_tok_kd",
    "same_tok_ce",
  ):
    if m in methods:
      d, h = diff(sola, bpb(m))
      out[f"sola_minus_{m.removeprefix('sola_')}_bpb"] = d
      out[f"sola_vs_{m.removeprefix('sola_')}_noise"] = h
  for a, b, name in (
    ("alm", "ce", "alm"),
    ("same_tok_kd", "same_tok_ce", "same_tok_kd"),
  ):
    if a in methods and b in methods:
      d, h = diff(bpb(a), bpb(b))
      out[f"{name}_minus_ce_bpb"] = d
      out[f"{name}_vs_ce_noise"] = h
  return out


def report_view(record: dict) -> dict:
  """The methods of a results record as the report shows them
  (``configs/default.py``).

  Returns:
    ``{"methods": {method: its metrics, plus "label", "s_per_step_seed"
    (training seconds per step per seed) and "coverage_cell" (SOLA's mean
    coverage, '' for the others)}}``.
  """
  steps = record["config"]["steps"]
  return {
    "methods": {
      m: {
        **v,
        "label": LABELS[m],
        "s_per_step_seed": v["group_wall_s"] / steps / v["group_runs"],
        "coverage_cell": v["coverage"]["mean"] if m.startswith("sola") else "",
      }
      for m, v in record["metrics"]["methods"].items()
    }
  }


def train_and_evaluate(config, workdir) -> dict:
  c = core.config_view(config, default_config.get_config())
  core.validate_seeds(c.seeds, name="seeds")
  t0 = time.time()
  for m in c.methods:
    core.validate_choice(m, name="methods", allowed=METHODS)
  data, stats = input_pipeline.prepare(c, workdir)
  cfg = student_config(c, stats["student_vocab"])
  cfg_tt = student_config(c, stats["teacher_vocab"])
  store = core.CellStore(f"{workdir}/cells")
  chunk = c.steps // c.num_evals
  methods = {}
  groups = dict(GROUPS)
  if c.joint_baselines:
    groups = {
      "baselines": BASELINES,
      **{g: v for g, v in GROUPS.items() if g not in BASELINES},
    }
  for group, members in groups.items():
    members = tuple(m for m in members if m in c.methods)
    if not members:
      continue
    # the same seeds (keys) for every method: paired comparisons
    keys = jnp.concatenate(
      [jax.random.split(jax.random.key(c.seed), c.seeds)] * len(members)
    )

    def compute(ckpt_dir, group=group, members=members, keys=keys):
      ts = time.time()
      res = make_sweep(c, group, cfg_tt if group == "same_tok" else cfg).run(
        _group_hparams(c, members),
        keys,
        num_steps=c.steps,
        chunk_size=chunk,
        data=data,
        checkpoint_dir=ckpt_dir,
        desc=f"{group}: {len(members)} methods x {c.seeds} seeds",
      )
      out = {}
      for i, m in enumerate(members):
        sl = _method_rows(i, c.seeds)
        out[m] = {
          "bpb_eval": _ms(res.evals["bpb_eval"][sl, -1]),
          "bpb_code": _ms(res.evals["bpb_code"][sl, -1]),
          "curve_steps": res.steps.tolist(),
          "curve_bpb_eval": np.asarray(res.evals["bpb_eval"][sl]).tolist(),
          "final_train_ce": _ms(res.history["ce"][sl, -10:].mean(1)),
          "final_train_kd": _ms(res.history["kd"][sl, -10:].mean(1)),
          "coverage": _ms(res.history["coverage"][sl].mean(1)),
          "group_wall_s": time.time() - ts,
          "group_runs": len(members) * c.seeds,
        }
      return out

    methods.update(store.get_or_compute(f"group/{group}", compute))
  methods = {m: methods[m] for m in c.methods}
  metrics = {"data": stats, "methods": methods}
  metrics["derived"] = derived_metrics(methods, c.seeds)
  core.write_results(
    workdir,
    metrics=metrics,
    config=config,  # the ConfigDict: its claims, verdict rule and report
    notes=(
      f"Teacher {stats['teacher']}; student {cfg.n_layers}x{cfg.d_model} with "
      f"a {stats['student_vocab']}-token Metaspace BPE trained on the train "
      f"split; {c.seeds} seeds; offline text (pydoc topics, stdlib source)."
    ),
    wall_time_s=time.time() - t0,
  )
  return metrics
