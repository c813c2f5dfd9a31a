"""SOLA evidence: a real teacher distilled into a student with a different tokenizer.

`train_and_evaluate(config, workdir)`:
1. splits offline text (the standard library's ``pydoc_data`` topics) by document into
   calibration / train / held-out, plus a code-transfer set (standard-library source);
2. trains the student's BPE tokenizer on the train split and aligns every window with the
   teacher's own tokenization by MCC blocks;
3. caches the teacher's top-K_c predictions once (resumable, ``<workdir>/teacher_cache``);
4. estimates the correspondence cost on the calibration split;
5. trains the student with each method (CE-only, ULD, MinED-style, SOLA and its ablations)
   for the same steps, batch and seeds (``core.Sweep``: seeds vmapped, one program per group
   of methods; each direct baseline computes only its own loss), and measures held-out bits
   per byte;
6. writes results.json (claims judged by the rules in ``configs/default.py``) and plots.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

from experiments.sola.configs import default as default_config
from jaxpapers import core, lm
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
# Methods whose student uses the teacher's own tokenizer (a student with the teacher's vocabulary).
SAME_TOK = ("same_tok_ce", "same_tok_kd")


# ------------------------------------------------------------------------------------ data


def load_texts(c):
  """Document-level split of pydoc topics, and the code-transfer texts (stdlib source)."""
  import pydoc_data.topics

  docs = [v for _, v in sorted(pydoc_data.topics.topics.items()) if len(v) > 200]
  code = [inspect.getsource(importlib.import_module(name)) for name in c.code_modules]
  sizes = dict(train=c.n_train, calib=c.n_calib, eval=c.n_eval, code=c.n_code)
  return S.window_splits(docs, code, sizes=sizes, window_chars=c.window_chars, seed=c.data_seed)


def load_teacher(c, split):
  """(logits_fn, tokenizer, description)."""
  if c.teacher == "smollm2":
    cfg, params, tok = lm.load_smollm2()
    desc = "SmolLM2-135M-Instruct (Q4_1 GGUF), byte-level BPE 49,152"
  elif c.teacher == "gemma3":
    cfg, params, tok = lm.load_gemma3()
    desc = "Gemma-3-270M (Q4_K_M GGUF), SentencePiece 262,144"
  elif c.teacher == "random":
    tok = S.train_bpe(split["train"], vocab_size=c.random_teacher.vocab, style="bytelevel")
    t = c.random_teacher
    cfg = lm.LMConfig(
      vocab_size=tok.vocab_size,
      d_model=t.d_model,
      n_layers=t.n_layers,
      n_heads=2,
      n_kv_heads=2,
      head_dim=t.d_model // 2,
      ffn_dim=2 * t.d_model,
      rope_base=10000.0,
    )
    params = lm.init_params(jax.random.key(123), cfg, std=0.5)
    desc = f"random-init {t.n_layers}-layer teacher, byte-level BPE {tok.vocab_size}"
  else:
    raise ValueError(f"teacher must be 'smollm2', 'gemma3' or 'random', got {c.teacher!r}")
  f = jax.jit(lambda p, x: lm.forward(p, x, config=cfg)[0])
  return (lambda x: f(params, x)), tok, desc


def prepare(c, workdir):
  """Tokenizes, aligns and caches the teacher once: the arrays every sweep of the run reads.

  Returns:
    ``(data, stats)``: ``data`` holds the student's ``train`` / ``eval`` / ``code`` arrays, the
    correspondence tables (``table``, ``table_lex`` and, with ``sola_hard``, ``table_hard``) and,
    with a same-tokenizer method, the ``*_tt`` arrays in the teacher's tokens; ``stats`` what
    the run reports about the texts, the tokenizers and the teacher cache.
  """
  split, wins = load_texts(c)
  t0 = time.time()
  s_tok = S.train_bpe(split["train"], vocab_size=c.student_vocab, style="metaspace")
  logits_fn, t_tok, t_desc = load_teacher(c, split)
  al = {k: S.align_texts(w, t_tok, s_tok, max_len=c.max_len) for k, w in wins.items()}
  tc = time.time()
  caches, cache = _cache_teacher(c, workdir, logits_fn, al)
  cache_s = time.time() - tc
  t_str = S.token_strings(t_tok)
  s_str = S.token_strings(s_tok)
  tables = _correspondence_tables(c, al["calib"], caches["calib"], t_str, s_str)
  tr, ev = al["train"], al["eval"]
  teacher_bpb = float(
    S.bits_per_byte(jnp.asarray(caches["eval"].tok_logp.sum(1)), jnp.asarray(ev.n_bytes))
  )
  data = {**_student_data(c, al, caches["train"], t_str, s_str), **tables}
  if any(m in c.methods for m in SAME_TOK):
    data.update(_same_tokenizer_data(al, caches["train"]))
  data = jax.tree.map(jnp.asarray, data)
  stats = {
    "teacher": t_desc,
    "teacher_vocab": len(t_str),
    "student_vocab": s_tok.vocab_size,
    "vocab_overlap": len(set(t_str) & set(s_str)) / len(set(s_str)),
    "windows": {k: len(a.texts) for k, a in al.items()},
    "bytes": {k: int(a.n_bytes.sum()) for k, a in al.items()},
    "teacher_tokens_cached": int(sum(int(al[k].t_len.sum()) for k in _CACHED)),
    "teacher_cache_s": cache_s,
    "teacher_cache_bytes_per_token": cache.bytes_per_token,
    "blocks_per_window": {k: float(a.blk_valid.sum(1).mean()) for k, a in al.items()},
    "tokens_per_block": {
      "teacher": float((tr.t_len - 1).sum() / tr.blk_valid.sum()),
      "student": float((tr.s_len - 1).sum() / tr.blk_valid.sum()),
    },
    "teacher_bpb_eval": teacher_bpb,
    "prepare_s": time.time() - t0,
  }
  return data, stats


_CACHED = ("train", "calib", "eval")  # the splits whose teacher predictions are cached


def _cache_teacher(c, workdir, logits_fn, al):
  """The teacher's top-``kc`` predictions on the cached splits, computed once per workdir.

  Returns:
    ``({split: its S.TeacherCache}, the cache of all of them)``.
  """
  cat = lambda f: np.concatenate([getattr(al[k], f) for k in _CACHED])
  cache = S.cache_teacher(
    logits_fn,
    cat("t_tokens"),
    cat("t_len"),
    top_k=c.kc,
    batch_size=c.teacher_batch,
    directory=f"{workdir}/teacher_cache",
  )
  cuts = np.cumsum([len(al[k].texts) for k in _CACHED])[:-1]
  parts = zip(*(np.split(x, cuts) for x in cache))  # per split: (ids, logp, tok_logp)
  return dict(zip(_CACHED, (S.TeacherCache(*p) for p in parts))), cache


def _correspondence_tables(c, ca, calib_cache, t_str, s_str) -> dict:
  """The correspondence cost estimated on the calibration alignment ``ca`` (soft counts, and
  hard counts for ``sola_hard``) and the lexical table of the ``sola_lexical`` ablation."""
  cid, clp = S.gather_cache(calib_cache, ca.blk_t_pos)
  v = ca.blk_valid
  args = (ca.blk_t_id[v], ca.blk_s_id[v], cid[v], clp[v])
  out = {
    "table": S.estimate_correspondence(*args, t_strings=t_str, s_strings=s_str, r=c.r),
    "table_lex": S.lexical_table(t_str, s_str, r=c.r),
  }
  if "sola_hard" in c.methods:
    out["table_hard"] = S.estimate_correspondence(
      *args, t_strings=t_str, s_strings=s_str, r=c.r, soft_counts=False
    )
  return out


def _student_data(c, al, train_cache, t_str, s_str) -> dict:
  """The student's training arrays (its tokens, the aligned blocks, the teacher's cached top-k,
  the MinED-style map and the ALM chunk maps) and its held-out and code-transfer tokens."""
  tr, ev, cd = al["train"], al["eval"], al["code"]
  tid, tlp = S.gather_cache(train_cache, tr.blk_t_pos)
  uniq = np.unique(tid[..., : c.k])
  lut = np.zeros(len(t_str), np.int32)
  lut[uniq] = S.mined_map([t_str[i] for i in uniq], s_str)
  train = {
    "tokens": tr.s_tokens,
    "len": tr.s_len,
    "blk_pos": tr.blk_s_pos,
    "valid": tr.blk_valid,
    "t_ids": tid,
    "t_logp": tlp,
    "mined": lut[tid[..., : c.k]],
    # ALM-style chunk loss: token -> block maps and the teacher's realised-token log-probs
    "s_block": tr.s_block,
    "t_block": tr.t_block,
    "t_tok_logp": train_cache.tok_logp,
  }
  texts = lambda a: {"tokens": a.s_tokens, "len": a.s_len, "n_bytes": a.n_bytes}
  return {"train": train, "eval": texts(ev), "code": texts(cd)}


def _same_tokenizer_data(al, train_cache) -> dict:
  """The same-tokenizer reference: the student reads the teacher's tokens; every teacher
  position is an aligned pair (one MCC block per token), distilled on the cached top-k."""
  tr, ev, cd = al["train"], al["eval"], al["code"]
  t_len = tr.t_len
  n_pos = tr.t_tokens.shape[1] - 1
  pos = np.broadcast_to(np.arange(n_pos, dtype=np.int32), (len(t_len), n_pos))
  return {
    "train_tt": {
      "tokens": tr.t_tokens,
      "len": t_len,
      "blk_pos": pos,
      "valid": pos < (t_len[:, None] - 1),
      "t_ids": train_cache.ids[:, :n_pos],
      "t_logp": train_cache.logp[:, :n_pos].astype(np.float32),
    },
    "eval_tt": {"tokens": ev.t_tokens, "len": ev.t_len, "n_bytes": ev.n_bytes},
    "code_tt": {"tokens": cd.t_tokens, "len": cd.t_len, "n_bytes": cd.n_bytes},
  }


# ------------------------------------------------------------------------------- training


def student_config(c, vocab):
  return S.StudentConfig(vocab_size=vocab, max_len=c.max_len, **c.student)


# The direct baselines each train in a program of their own, computing only their own loss.
# ``joint_baselines`` (the committed runs before this split) trains them in one vmapped program
# in which every run computes all three teacher losses and weights two of them by 0: the same
# students (tested) at the cost of every baseline loss in every run.
BASELINES = ("ce", "uld", "mined", "alm")
GROUPS = {
  **{m: (m,) for m in BASELINES},
  "sola": ("sola", "sola_lexical", "sola_hard"),
  "sola_none": ("sola_none",),
  "same_tok": SAME_TOK,
}


def make_sweep(c, group: str, cfg):
  """One program per group; the methods of a group differ only in hyperparameters (vmapped)."""
  sfx = "_tt" if group == "same_tok" else ""  # the teacher-tokenizer student's data
  sched = optax.warmup_cosine_decay_schedule(0.0, 1.0, max(c.steps // 10, 1), c.steps, 0.1)

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
    sel, mask = S.sample_aligned_pairs(key, batch["valid"], c.kd_blocks)  # [B, Kd] each
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
      kl = S.mined_kl_loss(t_ids[..., : c.k], t_logp[..., : c.k], s_logits, mask=mask)
      kd = hp["w_kd"] * kl
    else:
      table = data["table"]
      if "table_hard" in data:
        table = jax.tree.map(lambda a, b: jnp.where(hp["hard"], a, b), data["table_hard"], table)
      table = jax.tree.map(lambda a, b: jnp.where(hp["lexical"], a, b), data["table_lex"], table)
      support = "none" if group == "sola_none" else "bidirectional"
      kd, a = S.sola_loss(
        t_ids,
        t_logp,
        s_logits,
        table,
        mask=mask,
        k=c.k,
        epsilon=c.epsilon,
        iters=c.iters,
        support=support,
      )
      coverage = a["coverage"]
    return ce + c.lam * kd, {"ce": ce, "coverage": coverage, "kd": kd}

  def step_fn(state, hp, key, step, data):
    params, opt = state
    k1, k2 = jax.random.split(jax.random.fold_in(key, step))
    n = data["train" + sfx]["tokens"].shape[0]
    idx = jax.random.choice(k1, n, (c.batch_size,), replace=False)
    batch = jax.tree.map(lambda a: a[idx], data["train" + sfx])
    (loss, aux), g = jax.value_and_grad(loss_fn, has_aux=True)(params, hp, batch, k2, data)
    upd, opt = tx(hp).update(g, opt, params)
    return (optax.apply_updates(params, upd), opt), {"loss": loss, **aux}

  def eval_fn(state, hp, key, data):
    bpb = lambda d: S.student_bits_per_byte(state[0], d["tokens"], d["len"], d["n_bytes"], cfg)
    return {"bpb_eval": bpb(data["eval" + sfx]), "bpb_code": bpb(data["code" + sfx])}

  return core.Sweep(init_fn, step_fn, eval_fn)


def _baseline_kd(c, group, hp, batch, sel, mask, tl, s_logits, t_logp):
  """The direct baselines' distillation loss on the selected blocks ``sel`` ([B, Kd]).

  A group of one baseline computes its own loss only; the joint group ``'baselines'`` all three,
  each weighted by its ``hp['w_<name>']``.
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
      batch["t_tok_logp"], batch["t_block"], tl, batch["s_block"], n_blocks=n_blk, mask=blk_mask
    )
    kd = kd + hp["w_alm"] * alm
  return kd


def _method_rows(i: int, seeds: int) -> slice:
  """The sweep rows of the ``i``-th method of a group: methods are the outer axis, seeds inner."""
  return slice(i * seeds, (i + 1) * seeds)


def _group_hparams(c, methods):
  """Per sweep row (methods outer, seeds inner): the loss weights and ablation switches."""
  rows = [m for m in methods for _ in range(c.seeds)]
  is_ = lambda name, dtype=np.float32: np.array([m == name for m in rows], dtype)
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
    out.update(best_ctkd_baseline=best, sola_minus_best_ctkd_bpb=d, sola_vs_best_ctkd_noise=h)
  if "ce" in methods:
    d, h = diff(sola, bpb("ce"))
    out.update(sola_minus_ce_bpb=d, sola_vs_ce_noise=h)
  # the ablations and the same-tokenizer reference (SOLA minus each)
  for m in ("alm", "sola_none", "sola_hard", "sola_lexical", "same_tok_kd", "same_tok_ce"):
    if m in methods:
      d, h = diff(sola, bpb(m))
      out[f"sola_minus_{m.removeprefix('sola_')}_bpb"] = d
      out[f"sola_vs_{m.removeprefix('sola_')}_noise"] = h
  for a, b, name in (("alm", "ce", "alm"), ("same_tok_kd", "same_tok_ce", "same_tok_kd")):
    if a in methods and b in methods:
      d, h = diff(bpb(a), bpb(b))
      out[f"{name}_minus_ce_bpb"] = d
      out[f"{name}_vs_ce_noise"] = h
  return out


def report_view(record: dict) -> dict:
  """The methods of a results record as the report shows them (``configs/default.py``).

  Returns:
    ``{"methods": {method: its metrics, plus "label", "s_per_step_seed" (training seconds
    per step per seed) and "coverage_cell" (SOLA's mean coverage, '' for the others)}}``.
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
  data, stats = prepare(c, workdir)
  cfg = student_config(c, stats["student_vocab"])
  cfg_tt = student_config(c, stats["teacher_vocab"])
  store = core.CellStore(f"{workdir}/cells")
  chunk = c.steps // c.num_evals
  methods = {}
  groups = dict(GROUPS)
  if c.joint_baselines:
    groups = {"baselines": BASELINES, **{g: v for g, v in GROUPS.items() if g not in BASELINES}}
  for group, members in groups.items():
    members = tuple(m for m in members if m in c.methods)
    if not members:
      continue
    # the same seeds (keys) for every method: paired comparisons
    keys = jnp.concatenate([jax.random.split(jax.random.key(c.seed), c.seeds)] * len(members))

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
    notes=f"Teacher {stats['teacher']}; student {cfg.n_layers}x{cfg.d_model} with a "
    f"{stats['student_vocab']}-token Metaspace BPE trained on the train split; "
    f"{c.seeds} seeds; offline text (pydoc topics, stdlib source).",
    wall_time_s=time.time() - t0,
  )
  return metrics
