"""LogSTOP on digit videos: query matching and ranked retrieval vs baselines.

Reconstruction of the paper's QMTP / TP2VR evidence (arXiv:2510.06512) at CPU
scale: a JAX MLP detector trained on one half of sklearn digits predicts "digit
k visible" per frame of videos rendered from the other half with occlusion,
flicker and blur. Query matching compares balanced accuracy of LogSTOP (adaptive
threshold, several windows) with Boolean LTLf on thresholded scores, STL
robustness, the exact probability under independent Bernoullis and a mean-score
heuristic. Retrieval compares segment-max scores by mAP and Recall@5. The code
reads its settings through ``core.config_view`` of the config against
``configs/default.py``.
"""

from __future__ import annotations

import functools
import json
import time

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
from absl import logging
from flax import nnx

from experiments.logstop import data as D
from experiments.logstop.configs import default as default_config
from jaxpapers import core, metrics
from jaxpapers import logstop as L

# --------------------------------------------------------------------- detector


def detector(num_atoms: int, hidden: int, rngs: nnx.Rngs) -> nnx.Sequential:
  """MLP multi-label detector: flat frames [N, 16 * 32] -> logits [N, K] for 'digit k visible'."""
  linear = lambda i, o: nnx.Linear(i, o, rngs=rngs)
  return nnx.Sequential(
    linear(D.H * D.W, hidden),
    jax.nn.relu,
    linear(hidden, hidden),
    jax.nn.relu,
    linear(hidden, num_atoms),
  )


def train_detector(cfg, pool, workdir, seed):
  bank = D.DigitBank.from_split("train", seed=seed)
  K = len(pool)

  def batch_fn(step):
    rng = np.random.default_rng([seed, 1, step])
    presence = rng.random((cfg.detector_batch, K)) < 0.35
    slots = D.slots_from_presence(presence, pool, rng)
    frames = D.render(slots, bank, rng)[:, None]
    frames = D.corrupt(frames, rng, **D.noise_kwargs(cfg, train=True))[:, 0]
    # [B, K]: atom k in either slot
    on = (slots[:, :, None] == np.asarray(pool)).any(1)
    return {
      "x": jnp.asarray(frames.reshape(len(frames), -1)),
      "y": jnp.asarray(on, jnp.float32),
    }

  state = core.TrainState.create(
    detector(K, cfg.detector_hidden, nnx.Rngs(seed)),
    optax.adam(cfg.detector_lr),
  )

  @jax.jit
  def step_fn(state, batch):
    loss_fn = lambda m: optax.sigmoid_binary_cross_entropy(
      m(batch["x"]), batch["y"]
    ).mean()
    loss, grads, rest = state.value_and_grad(loss_fn)
    return state.apply_gradients(grads, rest=rest), {"loss": loss}

  # Training takes seconds, so no checkpoints; the step loop is resumable if
  # enabled.
  return core.train_loop(
    state,
    step_fn,
    batch_fn,
    num_steps=cfg.detector_steps,
    workdir=workdir,
    checkpoint_every=0,
    log_every=max(cfg.detector_steps // 5, 1),
    desc="detector",
  )


@jax.jit
def _predict(state, x):
  return jax.nn.sigmoid(state.model()(x))


def predict_videos(state, frames):
  """frames [B, T, 16, 32] -> scores [B, T, K], in chunks of one static shape
  (one compile)."""
  B, T = frames.shape[:2]
  flat, chunk = frames.reshape(B * T, D.H * D.W), 4096
  out = []
  for i in range(0, len(flat), chunk):
    x = np.pad(
      flat[i : i + chunk], ((0, max(chunk - (len(flat) - i), 0)), (0, 0))
    )
    out.append(np.asarray(_predict(state, jnp.asarray(x)))[: len(flat) - i])
  return np.concatenate(out).reshape(B, T, -1)


# ----------------------------------------------------------------- ground truth

_GEN_BATCH = 256


def _truth(formula, names, timelines):
  props = {
    n: jnp.asarray(timelines[:, j], jnp.float32) for j, n in enumerate(names)
  }
  return np.asarray(L.boolean_ltlf(formula, props))


def _collect(make, keep, need: int, rounds: int) -> list:
  """The candidates of ``make()`` that ``keep`` selects, drawn until ``need``
  (or ``rounds``)."""
  out = []
  for _ in range(rounds):
    cand = make()
    out.extend(cand[keep(cand)])
    if len(out) >= need:
      break
  return out


def sample_balanced(rng, formula, names, n_each, T, max_rounds=60):
  """n_each satisfying and n_each violating timelines (half near-misses)."""
  k = len(names)
  sat, vio = [], []
  for _ in range(max_rounds):
    cand = D.random_timelines(rng, _GEN_BATCH, T, k)
    truth = _truth(formula, names, cand)
    sat.extend(cand[truth])
    vio.extend(cand[~truth][: max(n_each // 2 - len(vio), 0) + 1])
    if len(sat) >= n_each and len(vio) >= n_each // 2:
      break
  violates = lambda cand: ~_truth(formula, names, cand)
  near = []
  if sat:
    resample = lambda: np.stack(
      [sat[i] for i in rng.integers(len(sat), size=_GEN_BATCH)]
    )
    near = _collect(
      lambda: D.near_misses(rng, resample()),
      violates,
      n_each - n_each // 2,
      max_rounds,
    )
  vio = (vio[: n_each // 2] + near)[:n_each]
  if len(vio) < n_each:
    draw = lambda: D.random_timelines(rng, _GEN_BATCH, T, k)
    vio = (vio + _collect(draw, violates, n_each - len(vio), max_rounds))[
      :n_each
    ]
  sat = sat[:n_each]
  n = min(len(sat), len(vio))
  if n == 0:
    raise RuntimeError(f"could not sample both classes for {formula}")
  x = np.stack(sat[:n] + vio[:n])
  y = np.array([1] * n + [0] * n)
  return x, y


# --------------------------------------------------------------------- matching


def _with_half(props, T):
  """Appends the all-0.5 trace (the adaptive threshold's reference) to the
  batch."""
  return {
    n: jnp.concatenate([jnp.asarray(v), jnp.full((1, T), 0.5, jnp.float32)])
    for n, v in props.items()
  }


BASELINES = (
  "Boolean LTLf (p>=0.5)",
  "STL robustness > 0",
  "exact P (adaptive)",
  "mean score (adaptive)",
)


def matching_arms(formula, props, cfg):
  """Binary match decisions [n] for every arm; every arm runs at every window of
  cfg.windows.

  Boolean LTLf and robustness take the window directly (the same window means
  and stride as LogSTOP); the exact probability and the mean score run on the
  block means (`L.block_means`), which gives them the same window.
  """
  T = next(iter(props.values())).shape[-1]
  ext = _with_half(props, T)
  out = {}
  log_half = np.log(0.5)
  for w in cfg.windows:
    s = np.asarray(L.score(formula, ext, window=w))
    out[f"LogSTOP w={w}"] = s[:-1] > min(s[-1], log_half)
    out[f"{BASELINES[0]} w={w}"] = np.asarray(
      L.boolean_ltlf(formula, props, window=w)
    )
    out[f"{BASELINES[1]} w={w}"] = (
      np.asarray(L.robustness(formula, props, window=w)) > 0
    )
    blocks = L.block_means(props, w)
    bext = _with_half(blocks, next(iter(blocks.values())).shape[-1])
    p = np.asarray(L.exact_probability(formula, bext))
    out[f"{BASELINES[2]} w={w}"] = p[:-1] > min(p[-1], 0.5)
    m = np.asarray(L.mean_score(formula, bext))
    out[f"{BASELINES[3]} w={w}"] = m[:-1] > min(m[-1], 0.5)
  return out


def run_matching(cfg, predict, pool, rng, seed):
  bank = D.DigitBank.from_split("video", seed=seed)
  per_template = {}
  frame_acc = []
  for i in range(cfg.num_templates):
    template = D.TEMPLATES[i]
    digits = [
      pool[(i + j) % len(pool)] for j in range(len(D.template_atoms(template)))
    ]
    text = D.instantiate(template, digits)
    formula = L.parse(text)
    names = [D.atom_name(d) for d in digits]
    x, y = sample_balanced(
      rng, formula, names, cfg.sequences_per_template // 2, cfg.T
    )
    frames = D.render_videos(x, digits, pool, bank, rng, cfg)
    scores = predict(frames)  # [n, T, K]
    props = {
      n: jnp.asarray(scores[:, :, pool.index(d)]) for n, d in zip(names, digits)
    }
    for j, d in enumerate(digits):
      frame_acc.append(((scores[:, :, pool.index(d)] >= 0.5) == x[:, j]).mean())
    arms = matching_arms(formula, props, cfg)
    per_template[text] = {
      name: float(
        metrics.balanced_accuracy(
          jnp.asarray(pred.astype(np.int32)), jnp.asarray(y), 2
        )
      )
      for name, pred in arms.items()
    }
    per_template[text]["n"] = int(len(y))
    logging.info("seed %d matching %s: %s", seed, text, per_template[text])
  return per_template, float(np.mean(frame_acc))


# -------------------------------------------------------------------- retrieval

RETRIEVAL_TEMPLATES = (
  "{a} U {b}",
  "F({a} & X {b})",
  "G {a}",
  "F({a} & F {b})",
  "{a} U ({b} & X {c})",
  "G({a} | {b})",
  "F({a} & {b})",
  "F({a} & X X {b})",
  "F({a} & !{b}) & F({b} & !{a})",
  "G({a} -> X {b})",
)


def retrieval_queries(cfg, pool):
  queries = []
  for i in range(cfg.retrieval_templates):
    template = RETRIEVAL_TEMPLATES[i]
    k = len(D.template_atoms(template))
    for m in range(cfg.mappings_per_template):
      digits = [pool[(i + m + j * (m + 1)) % len(pool)] for j in range(k)]
      if len(set(digits)) < k:
        digits = [pool[(i + m + j) % len(pool)] for j in range(k)]
      queries.append((template, digits))
  return queries


def build_database(cfg, pool, queries, rng):
  """Sparse background timelines over the pool with planted satisfying
  segments."""
  K, T, n = len(pool), cfg.db_T, cfg.db_size
  tl = D.random_timelines(rng, n, T, K, sparse=True)  # [n, K, T]
  seg_len = (cfg.min_len + cfg.max_len) // 2
  segments = {}
  for q, (template, digits) in enumerate(queries):
    names = [D.atom_name(d) for d in digits]
    f = L.parse(D.instantiate(template, digits))
    draw = functools.partial(
      D.random_timelines, rng, _GEN_BATCH, seg_len, len(digits)
    )
    segments[q] = _collect(draw, functools.partial(_truth, f, names), 32, 40)
  for i in range(n):
    if rng.random() >= cfg.plant_prob:
      continue
    q = int(rng.integers(len(queries)))
    if not segments[q]:
      continue
    seg = segments[q][rng.integers(len(segments[q]))]
    s = int(rng.integers(0, T - seg_len + 1))
    tl[i, :, s : s + seg_len] = False
    for j, d in enumerate(queries[q][1]):
      tl[i, pool.index(d), s : s + seg_len] = seg[j]
  return tl


RETRIEVAL_BASELINES = (
  "Boolean LTLf segment-max",
  "STL robustness segment-max",
  "max per-frame product",
  "mean score",
)


def run_retrieval(cfg, predict, pool, rng, seed):
  bank = D.DigitBank.from_split("video", seed=seed)
  queries = retrieval_queries(cfg, pool)
  tl = build_database(cfg, pool, queries, rng)
  frames = D.render_videos(tl, pool, pool, bank, rng, cfg)
  pred = predict(frames)  # [n, T, K]
  true_props = {
    D.atom_name(d): jnp.asarray(tl[:, j], jnp.float32)
    for j, d in enumerate(pool)
  }
  props = {
    D.atom_name(d): jnp.asarray(pred[:, :, j]) for j, d in enumerate(pool)
  }
  seg = dict(min_len=cfg.min_len, max_len=cfg.max_len)
  tie = 1e-6 * np.random.default_rng(seed + 7).random(cfg.db_size)
  rows, skipped = {}, []
  for template, digits in queries:
    text = D.instantiate(template, digits)
    f = L.parse(text)
    rel = (
      np.asarray(L.segment_max_score(f, true_props, semantics="boolean", **seg))
      > 0.5
    )
    if rel.sum() == 0 or rel.mean() > 0.5:
      skipped.append((text, float(rel.mean())))
      continue
    names = L.atoms(f)
    arms = {}
    # Every arm at every window: the segment-max baselines with the same window
    # semantics, the per-frame heuristics on window means of the frames.
    for w in cfg.retrieval_windows:
      smax = lambda w=w, **kw: np.asarray(
        L.segment_max_score(f, props, window=w, **seg, **kw)
      )
      arms[f"LogSTOP w={w} segment-max"] = smax()
      arms[f"{RETRIEVAL_BASELINES[0]} w={w}"] = smax(semantics="boolean") + tie
      arms[f"{RETRIEVAL_BASELINES[1]} w={w}"] = smax(semantics="robustness")
      prod = np.prod([L.sliding_means(props[nm], w) for nm in names], axis=0)
      arms[f"{RETRIEVAL_BASELINES[2]} w={w}"] = prod.max(-1)
      arms[f"{RETRIEVAL_BASELINES[3]} w={w}"] = np.asarray(
        L.mean_score(f, L.block_means(props, w))
      )
    relj = jnp.asarray(rel[None].astype(np.float32))
    rows[text] = {"template": template, "relevant": int(rel.sum())}
    for name, s in arms.items():
      sj = jnp.asarray(np.nan_to_num(s, neginf=-1e30)[None])
      rows[text][name] = {
        "AP": float(metrics.average_precision(sj, relj)[0]),
        "R@5": float(metrics.recall_at_k(sj, relj, 5)[0]),
        "P@5": float(metrics.precision_at_k(sj, relj, 5)[0]),
      }
    logging.info("seed %d retrieval %s: %s", seed, text, rows[text])
  return rows, skipped


# ------------------------------------------------------------------------- main


def _mean_ci(per_seed: list[dict]) -> tuple[dict, dict]:
  """Per-seed {arm: value} -> ({arm: mean over seeds}, {arm: 95% CI half-width})."""
  arms = list(per_seed[0])
  mean = {a: float(np.mean([p[a] for p in per_seed])) for a in arms}
  ci = {a: core.ci95_halfwidth([p[a] for p in per_seed]) for a in arms}
  return mean, ci


def compare_arms(per_seed: list[dict], windows) -> dict:
  """Best LogSTOP arm vs best baseline arm, paired over seeds (pure; JSON in and
  out).

  The best arm of each side is the one with the highest mean over seeds (every
  side has every window); the measured value is the mean over seeds of the
  paired difference, with its 95% CI half-width over seeds. ``same_window``
  compares LogSTOP at w with the best baseline at the same w.

  Args:
    per_seed: one ``{arm: value}`` per seed; LogSTOP arms start with
      ``'LogSTOP'`` and every arm name contains ``w=<window>``.
    windows: the windows of the run.

  Returns:
    ``{'best_logstop', 'best_baseline', 'diff', 'diff_ci95', 'diff_per_seed',
    'same_window': {w: {...}}}``.
  """
  mean, _ = _mean_ci(per_seed)

  def best(pred):
    cands = [a for a in mean if pred(a)]
    return max(cands, key=lambda a: mean[a]) if cands else None

  def paired(a, b):
    d = [p[a] - p[b] for p in per_seed]
    return {
      "logstop_arm": a,
      "baseline_arm": b,
      "diff": float(np.mean(d)),
      "diff_ci95": core.ci95_halfwidth(d),
      "diff_per_seed": d,
    }

  is_ls = lambda a: a.startswith("LogSTOP")
  out = paired(best(is_ls), best(lambda a: not is_ls(a)))
  out["same_window"] = {}
  for w in windows:
    tag = f"w={w}"
    in_w = lambda a, tag=tag: tag in a.split()
    ls, bl = (
      best(lambda a: is_ls(a) and in_w(a)),
      best(lambda a: not is_ls(a) and in_w(a)),
    )
    if ls and bl:
      out["same_window"][str(w)] = paired(ls, bl)
  return out


def report_view(record: dict) -> dict:
  """What ``configs/default.py``'s report reads, in the shapes it reads them
  (pure).

  Returns:
    ``{"matching": {arm: {"m", "s"}}, "retrieval": {arm: {"m", "s", "R5",
    "P5"}}, "n_templates", "n_queries" (per seed, as text), "relevant" (mean
    relevant sequences per query), "recall_cap", "qmtp": {arm: {"v"}}}`` (``s``:
    the 95% CI half-width, None if not finite).
  """
  m = record["metrics"]
  if "matching/overall" not in m:  # a QMTP-video run (run_qmtp)
    return {"qmtp": {a: {"v": v} for a, v in m.get("overall", {}).items()}}
  fin = lambda x: None if x is None or not np.isfinite(float(x)) else float(x)
  ci, rci = m["matching/overall_ci95"], m["retrieval/overall_mAP_ci95"]
  kept = [q for q in m["retrieval/per_query"] if q]
  rel = (
    float(np.mean([np.mean([r["relevant"] for r in q.values()]) for q in kept]))
    if kept
    else 0.0
  )
  return {
    "matching": {
      a: {"m": v, "s": fin(ci[a])} for a, v in m["matching/overall"].items()
    },
    "retrieval": {
      a: {"m": v["mAP"], "s": fin(rci[a]), "R5": v["R@5"], "P5": v["P@5"]}
      for a, v in m["retrieval/overall"].items()
    },
    "n_templates": len(m["matching/per_template"]),
    "n_queries": str([len(q) for q in m["retrieval/per_query"]]),
    "relevant": rel,
    "recall_cap": min(1.0, 5 / max(rel, 1)),
  }


def run_seed(cfg, seed: int, workdir) -> dict:
  """Detector training, matching and retrieval for one seed (detector, digits,
  videos)."""
  pool = list(cfg.digit_pool)
  state, history = train_detector(cfg, pool, f"{workdir}/seed{seed}", seed)
  predict = functools.partial(predict_videos, state)
  per_template, frame_acc = run_matching(
    cfg, predict, pool, np.random.default_rng(seed + 1), seed
  )
  rows, skipped = run_retrieval(
    cfg, predict, pool, np.random.default_rng(seed + 2), seed
  )
  arms = [k for k in next(iter(per_template.values())) if k != "n"]
  rarms = (
    [k for k in next(iter(rows.values())) if k not in ("template", "relevant")]
    if rows
    else []
  )
  return {
    "matching": {
      a: float(np.mean([r[a] for r in per_template.values()])) for a in arms
    },
    "matching_per_template": per_template,
    "retrieval": {
      a: {
        m: float(np.mean([r[a][k] for r in rows.values()]))
        for m, k in (("mAP", "AP"), ("R@5", "R@5"), ("P@5", "P@5"))
      }
      for a in rarms
    },
    "retrieval_per_query": rows,
    "retrieval_skipped": skipped,
    "frame_acc": frame_acc,
    "final_loss": float(history[-1]["train/loss"]) if history else None,
  }


def train_and_evaluate(config: ml_collections.ConfigDict, workdir: str) -> dict:
  """Trains a detector per seed, runs query matching and retrieval, writes
  results.json.

  With ``config.qmtp_dir`` set, instead scores the paper's QMTP-video benchmark
  from the per-frame detector scores stored there (`run_qmtp`).
  """
  run_config, cfg = (
    config,
    core.config_view(config, default_config.get_config()),
  )
  if cfg.qmtp_dir:
    return run_qmtp(cfg, workdir, run_config)
  t0 = time.time()
  if cfg.num_templates > len(D.TEMPLATES):
    raise ValueError(
      f"num_templates must be <= {len(D.TEMPLATES)}, got {cfg.num_templates}"
    )
  seeds = [int(s) for s in core.validate_seeds(tuple(cfg.seeds), name="seeds")]
  runs = [run_seed(cfg, s, workdir) for s in seeds]
  match_seed = [r["matching"] for r in runs]
  match_overall, match_ci = _mean_ci(match_seed)
  match_cmp = compare_arms(match_seed, cfg.windows)
  kept = [r for r in runs if r["retrieval"]]
  retr_seed = [{a: v["mAP"] for a, v in r["retrieval"].items()} for r in kept]
  retr_ci = _mean_ci(retr_seed)[1] if retr_seed else {}
  retr_cmp = (
    compare_arms(retr_seed, cfg.retrieval_windows) if retr_seed else None
  )
  retr_full = {
    a: {
      m: float(np.mean([r["retrieval"][a][m] for r in kept]))
      for m in ("mAP", "R@5", "P@5")
    }
    for a in (kept[0]["retrieval"] if kept else {})
  }
  per_template = {
    t: {
      a: float(np.mean([r["matching_per_template"][t][a] for r in runs]))
      for a in match_overall
    }
    for t in runs[0]["matching_per_template"]
  }
  results = {
    "seeds": seeds,
    "matching/overall": match_overall,
    "matching/overall_ci95": match_ci,
    "matching/per_seed": match_seed,
    "matching/per_template": per_template,
    "matching/comparison": match_cmp,
    "matching/best_logstop_minus_best_baseline": match_cmp["diff"],
    "matching/best_logstop_minus_best_baseline_ci95": match_cmp["diff_ci95"],
    "detector/per_frame_accuracy": [r["frame_acc"] for r in runs],
    "detector/final_loss": [r["final_loss"] for r in runs],
    "retrieval/overall": retr_full,
    "retrieval/overall_mAP_ci95": retr_ci,
    "retrieval/per_seed_mAP": retr_seed,
    "retrieval/comparison": retr_cmp,
    "retrieval/best_logstop_minus_best_baseline_mAP": (retr_cmp or {}).get(
      "diff"
    ),
    "retrieval/best_logstop_minus_best_baseline_mAP_ci95": (retr_cmp or {}).get(
      "diff_ci95"
    ),
    "retrieval/per_query": [r["retrieval_per_query"] for r in runs],
    "retrieval/skipped_queries": [r["retrieval_skipped"] for r in runs],
  }
  notes = (
    "Synthetic digit videos (reconstruction); per seed a JAX MLP detector "
    "trained on a disjoint half of sklearn digits and freshly generated "
    "videos; every arm at every window."
  )
  _write(workdir, json.loads(json.dumps(results)), run_config, notes, t0)
  return results


def _write(workdir, metrics_, config, notes, t0, **kw) -> None:
  """``core.write_results`` (the config's claims and report); prints the table
  on process 0."""
  path = core.write_results(
    workdir,
    metrics=metrics_,
    config=config,
    notes=notes,
    wall_time_s=time.time() - t0,
    **kw,
  )
  if core.is_main_process():
    print(json.loads(path.read_text())["table_markdown"])


def run_qmtp(cfg, workdir, run_config) -> dict:
  """The paper's QMTP-video matching table from per-frame scores in
  ``cfg.qmtp_dir``.

  Format and matching rule: `jaxpapers.logstop.qmtp`. Writes ``results.json``
  (recording ``run_config``, the run's own config) with balanced accuracy per
  arm (LogSTOP, Boolean LTLf, robustness at every window of ``cfg.windows``),
  template and category.
  """
  t0 = time.time()
  samples = L.load_qmtp(cfg.qmtp_dir)
  res = L.evaluate_qmtp(
    samples,
    windows=tuple(cfg.windows),
    smoothing_radius=cfg.qmtp_smoothing_radius,
    baselines=cfg.qmtp_baselines,
  )
  metrics_ = {k: v for k, v in res.items() if k != "decisions"}
  notes = (
    f"QMTP-video from {len(samples)} samples of per-frame scores in qmtp_dir."
  )
  _write(workdir, metrics_, run_config, notes, t0, claims=())
  return metrics_
