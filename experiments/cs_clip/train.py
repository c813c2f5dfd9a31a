"""Half-truths of a tiny dual encoder and component-supervised fine-tuning (synthetic proxy).

``train_and_evaluate(config, workdir)``:

1. renders training scenes (co-occurrence prior, mostly relation captions) and off-prior test
   scenes; builds captions, units, foils (``jaxpapers.cs_clip``) and the half-truth triples;
2. trains, per text-encoder architecture, two grids on the shared sweep engine (``core.Sweep``:
   vmapped runs sharded over the devices, checkpointed every ``chunk_steps``): CLIP
   pre-training for every text encoder x seed, then, from each seed's pre-trained parameters,
   ``finetune_steps`` of every arm's loss (plain CLIP, NegCLIP on the full caption, or the
   CS-CLIP loss). Every run of one seed draws the same batches (the data key depends on the
   seed only), so arms and encoders are compared on paired batches and paired test items;
3. evaluates after each chunk: half-truth accuracy (entity / relation), image<->text R@1 on
   the test captions and the relation-foil pairwise accuracy, and the per-item outcomes of the
   relation triples, the retrieval queries and the foil pairs (packed bits);
4. decides the claims of ``configs/default.py`` from ``derived``: every interval is the wider
   of a paired bootstrap over the test items (seed-averaged outcomes) and a paired t-interval
   over the seeds; writes results.json, a table and plots. Finished grids are stored in
   ``<workdir>/cells`` and pre-trained parameters beside them (resume).
"""

from __future__ import annotations

import json
import pathlib
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

import jaxpapers.cs_clip as C
from experiments.cs_clip import evaluate as ev
from experiments.cs_clip.configs import default as default_config
from experiments.cs_clip.evaluate import derived_metrics, rejudge_metrics  # re-judged by reproduce
from jaxpapers import core

__all__ = ["ARMS", "ENCODERS", "derived_metrics", "rejudge_metrics", "train_and_evaluate"]

ARMS = ("clip_ft", "negclip_ft", "cs_ft")
# text encoder -> (TextEncoder kind, order strength); 'bow' is the weak-order tower with the
# position scaling off (order-blind), 'positional' the order-aware tower (word + position
# embeddings through a per-token MLP)
ENCODERS = {
  "weak_order": ("weak_order", 1.0),
  "bow": ("weak_order", 0.0),
  "positional": ("positional", 0.0),
}


def _weights(cfg, arm: str) -> dict[str, float]:
  """Fine-tuning loss weights of an arm: w_clip L_CLIP + w_neg L_NegCLIP + CS unit terms."""
  w = dict(clip=0.0, neg=0.0, comp=0.0, align=0.0, rank=0.0)
  if arm == "clip_ft":
    w["clip"] = 1.0
  elif arm == "negclip_ft":
    w["neg"] = 1.0
  else:
    w.update(neg=1.0, comp=cfg.cs_lambda_comp, align=cfg.cs_lambda_align, rank=cfg.cs_lambda_rank)
  return w


def _data(cfg):
  scenes = lambda seed, n, prior: C.render_scenes(
    seed, n, size=cfg.size, prior=prior, distractors=cfg.distractors, vertical=cfg.vertical
  )
  tr = scenes(cfg.seed + 1, cfg.n_train, cfg.prior)
  te = scenes(cfg.seed + 2, cfg.n_test, cfg.test_prior)
  caps = C.training_captions(
    tr, cfg.seed + 3, p_partial=cfg.p_partial, p_paraphrase=cfg.p_paraphrase
  )
  ht = C.half_truth_set(te, cfg.seed + 4)
  test_caps = C.training_captions(te, cfg.seed + 5, p_partial=0.0, p_paraphrase=0.0)
  ids = {c: i for i, c in enumerate(sorted(set(ht.caption)))}
  data = {
    "train_images": tr.images,
    **{f"train_{k}": v for k, v in caps.arrays().items()},
    "test_images": te.images,
    "ht_short": C.tokenize(ht.short),
    "ht_long": C.tokenize(ht.long),
    "ht_kind": ht.kind,
    "ht_image": ht.image,
    "test_caption": C.tokenize(ht.caption),
    "test_caption_id": np.array([ids[c] for c in ht.caption], np.int32),
    "test_foil": C.tokenize(test_caps.caption_foil),  # the relation foil of each test caption
  }
  examples = {
    "train": [
      {
        "caption": caps.caption[i],
        "caption_foil": caps.caption_foil[i],
        "units": caps.units[i],
        "foils": caps.foils[i],
      }
      for i in range(min(8, cfg.n_train))
    ],
    "half_truth": [
      {"short": ht.short[i], "long": ht.long[i], "kind": int(ht.kind[i])}
      for i in range(min(8, len(ht.short)))
    ],
  }
  return data, examples


def _model(cfg, key, kind: str):
  return C.DualEncoder(len(C.VOCAB), cfg.dim, text_kind=kind, size=cfg.size, rngs=nnx.Rngs(key))


def _optimizer(lr):
  return optax.chain(optax.clip_by_global_norm(1.0), optax.adam(lr))


# The CS arm's unit terms at unit weight; the arms weight them with their hyperparameters.
_TERMS_CFG = C.CSLossConfig(
  lambda_full=1.0, negatives_full=True, lambda_comp=1.0, lambda_align=1.0, lambda_rank=1.0
)


def _batch_losses(model: C.DualEncoder, order: jax.Array, batch: dict) -> dict[str, jax.Array]:
  """Every fine-tuning loss term of one batch (the arms weight them, :func:`_weights`).

  Args:
    model: the dual encoder.
    order: scalar order strength of the text tower (``ENCODERS``).
    batch: ``images`` ``[B, H, W, 3]``, token ids ``caption`` / ``caption_foil`` ``[B, L]`` and
      ``units`` / ``foils`` ``[B, U, L]``, ``unit_mask`` ``[B, U]``.

  Returns:
    Scalars ``clip`` (L_CLIP), ``neg`` (NegCLIP on the full caption) and the CS unit terms
    ``comp``, ``align``, ``rank``.
  """
  B, L, U = batch["caption"].shape[0], C.MAX_LEN, C.U_MAX
  img = model.image(batch["images"])
  toks = jnp.concatenate(
    [
      batch["caption"],
      batch["caption_foil"],
      batch["units"].reshape(-1, L),
      batch["foils"].reshape(-1, L),
    ]
  )
  txt = model.text(toks, order_strength=order)
  full, ffoil = txt[:B], txt[B : 2 * B]
  units = txt[2 * B : 2 * B + B * U].reshape(B, U, -1)
  foils = txt[2 * B + B * U :].reshape(B, U, -1)
  s = model.logit_scale()
  _, terms = C.cs_clip_loss(
    img, full, ffoil, units, foils, batch["unit_mask"], s, _TERMS_CFG, validate=False
  )
  return {
    "clip": C.clip_loss(img, full, s, validate=False),
    "neg": terms["full"],
    **{k: terms[k] for k in ("comp", "align", "rank")},
  }


def _test_metrics(model: C.DualEncoder, order: jax.Array, data: dict) -> dict:
  """Half-truth accuracy, R@1 and relation-foil accuracy on the test set, and per-item outcomes
  (``items``: relation triples ``[2N]`` read where ``ht_kind == 1``, one image->text and one
  text->image query ``[N]`` per test scene, foil pairs ``[N]``)."""
  img = model.image(data["test_images"])
  enc = lambda t: model.text(t, order_strength=order)
  short, long = enc(data["ht_short"]), enc(data["ht_long"])
  img_ht = img[data["ht_image"]]
  ht = C.half_truth_accuracy(img_ht, short, long, data["ht_kind"])
  rel = data["ht_kind"] == 1
  cap, foil = enc(data["test_caption"]), enc(data["test_foil"])
  i2t, t2i = C.retrieval_hits(img, cap, data["test_caption_id"])
  return {
    **{f"ht_{k}": ht[k] for k in ("all", "entity", "relation", "ties")},
    "r1_i2t": i2t.mean(),
    "r1_t2i": t2i.mean(),
    "r1": 0.5 * (i2t.mean() + t2i.mean()),
    "relation_foil_acc": C.pairwise_caption_accuracy(img, cap, foil),
    "items": {
      "ht_relation": jnp.where(rel, C.half_truth_outcomes(img_ht, short, long), 0.0),
      "r1_i2t": i2t,
      "r1_t2i": t2i,
      "relation_foil_acc": C.pairwise_caption_outcomes(img, cap, foil),
    },
  }


def _programs(cfg, kind: str):
  """init / step / eval functions of one run of the text-encoder architecture ``kind``."""
  graphdef, _ = nnx.split(nnx.eval_shape(lambda: _model(cfg, jax.random.key(0), kind)))
  data_key = jax.random.key(cfg.seed + 7)
  fields = ("images", "caption", "caption_foil", "units", "foils", "unit_mask")

  def init_fn(hp, key, data):
    # fine-tuning starts from the pre-trained parameters carried in the hyperparameters
    params = hp["init"] if "init" in hp else nnx.split(_model(cfg, key, kind))[1]
    return params, _optimizer(hp["lr"]).init(params)

  def step_fn(state, hp, key, step, data):
    del key  # the batches depend on the seed only: every arm and encoder of a seed sees them
    params, opt_state = state
    k = jax.random.fold_in(jax.random.fold_in(data_key, hp["seed"]), step)
    idx = jax.random.randint(k, (cfg.batch,), 0, data["train_images"].shape[0])
    batch = {f: data[f"train_{f}"][idx] for f in fields}
    w = {k: hp[f"w_{k}"] for k in _weights(cfg, "cs_ft")}

    def total(p):
      t = _batch_losses(nnx.merge(graphdef, p), hp["order"], batch)
      return sum(w[k] * t[k] for k in t), t

    (loss, terms), grads = jax.value_and_grad(total, has_aux=True)(params)
    upd, opt_state = _optimizer(hp["lr"]).update(grads, opt_state, params)
    return (optax.apply_updates(params, upd), opt_state), {"loss": loss, **terms}

  def eval_fn(state, hp, key, data):
    return _test_metrics(nnx.merge(graphdef, state[0]), hp["order"], data)

  return init_fn, step_fn, eval_fn


def _hparams(cfg, runs, lr, arm_of) -> dict:
  hp = {
    f"w_{k}": np.array([_weights(cfg, arm_of(r))[k] for r in runs], np.float32)
    for k in _weights(cfg, "cs_ft")
  }
  hp["order"] = np.array([ENCODERS[r[0]][1] for r in runs], np.float32)
  hp["seed"] = np.array([r[1] for r in runs], np.int32)
  hp["lr"] = np.full(len(runs), lr, np.float32)
  return hp


def _keys(cfg, runs):
  """Initialisation keys: one per (encoder, seed); the arms of a seed share it."""
  base = jax.random.key(cfg.seed)
  return jnp.stack([jax.random.fold_in(base, 1000 * cfg.encoders.index(r[0]) + r[1]) for r in runs])


def _save_params(path: pathlib.Path, params) -> None:
  """Writes the leaves of ``params`` as ``arr_<i>`` through core's digest-checked array file."""
  core.cache.write_arrays(path, {f"arr_{i}": x for i, x in enumerate(jax.tree.leaves(params))})


def _load_params(path: pathlib.Path, like):
  """The tree written by :func:`_save_params`, in the structure of ``like``.

  Raises:
    FileNotFoundError, core.CorruptFileError: no file, or one cut off or not matching its digest.
  """
  z = core.cache.read_arrays(path)
  return jax.tree.unflatten(jax.tree.structure(like), [z[f"arr_{i}"] for i in range(len(z))])


def _train_kind(cfg, cells: core.CellStore, data, kind: str) -> dict:
  """Stage 1: CLIP pre-training per (encoder, seed) of architecture ``kind``; stage 2: the
  fine-tuning arms per (fine-tuned encoder, seed, arm), each from its seed's pre-trained
  parameters (kept in ``cells/params_<kind>.npz``, so a resumed run does not pre-train again)."""
  init_fn, step_fn, eval_fn = _programs(cfg, kind)
  encs = [e for e in cfg.encoders if ENCODERS[e][0] == kind]
  pre_runs = [(e, s) for e in encs for s in range(cfg.seeds)]
  rel = np.asarray(data["ht_kind"]) == 1
  params_file = pathlib.Path(cells.directory) / f"params_{kind}.npz"
  state = {}

  def run(runs, hp, steps, ckpt, desc, loss):
    """Trains ``runs``: the result, and a record per run (its final evaluation, the mean
    ``loss`` of its last 20 steps)."""
    res = core.Sweep(init_fn, step_fn, eval_fn).run(
      hp,
      _keys(cfg, runs),
      num_steps=steps,
      chunk_size=_chunk(cfg, steps),
      data=data,
      checkpoint_dir=ckpt,
      desc=desc,
    )
    records = [
      {
        **dict(zip(("encoder", "seed", "arm"), r)),
        "evals": ev.final_evals(res, i, rel),
        "final_loss": float(np.asarray(res.history[loss][i, -20:]).mean()),
      }
      for i, r in enumerate(runs)
    ]
    return res, {"runs": records}

  def pretrain(ckpt):
    hp = _hparams(cfg, pre_runs, cfg.lr, lambda r: "clip_ft")
    res, out = run(pre_runs, hp, cfg.pretrain_steps, ckpt, f"CLIP pre-training ({kind})", "clip")
    state["params"] = res.state[0]
    params_file.parent.mkdir(parents=True, exist_ok=True)
    _save_params(params_file, res.state[0])
    return out

  pre = cells.get_or_compute(f"pretrain/{kind}", pretrain)
  ft_encs = [e for e in encs if e in cfg.finetune_encoders]
  ft_runs = [(e, s, a) for e in ft_encs for s in range(cfg.seeds) for a in _arms_of(cfg, e)]
  if not ft_runs:
    return {"pretrain": pre["runs"], "finetune": []}

  def finetune(ckpt):
    if "params" not in state:  # resumed after pre-training: its saved parameters
      like = nnx.split(nnx.eval_shape(lambda: _model(cfg, jax.random.key(0), kind)))[1]
      state["params"] = _load_params(params_file, like)
    hp = _hparams(cfg, ft_runs, cfg.lr_finetune, lambda r: r[2])
    src = np.array([pre_runs.index((e, s)) for e, s, _ in ft_runs])
    hp["init"] = jax.tree.map(lambda x: np.asarray(x)[src], state["params"])
    return run(ft_runs, hp, cfg.finetune_steps, ckpt, f"fine-tuning arms ({kind})", "loss")[1]

  ft = cells.get_or_compute(f"finetune/{kind}", finetune)
  return {"pretrain": pre["runs"], "finetune": ft["runs"]}


def _arms_of(cfg, encoder: str) -> tuple:
  """Fine-tuning arms of ``encoder``: all arms for the method's encoder, else the controls'."""
  return cfg.arms if encoder == "weak_order" else cfg.control_arms


def _chunk(cfg, steps: int) -> int:
  chunk = min(cfg.chunk_steps, steps)
  if steps % chunk:
    raise ValueError(
      f"chunk_steps={cfg.chunk_steps} must divide pretrain_steps and finetune_steps, got {steps}"
    )
  return chunk


def _train(cfg, cells: core.CellStore, data) -> dict:
  """Both stages for every text-encoder architecture in ``cfg.encoders``."""
  grid = {"pretrain": [], "finetune": []}
  for kind in dict.fromkeys(ENCODERS[e][0] for e in cfg.encoders):
    g = _train_kind(cfg, cells, data, kind)
    grid["pretrain"] += g["pretrain"]
    grid["finetune"] += g["finetune"]
  return grid


def train_and_evaluate(config, workdir) -> dict:
  """Runs the grid; writes results.json, table.md, generated examples and plots."""
  cfg = core.config_view(config, default_config.get_config())
  core.validate_seeds(cfg.seeds, name="seeds")
  for e in cfg.encoders:
    core.validate_choice(e, name="encoders", allowed=tuple(ENCODERS))
  for a in cfg.arms + cfg.control_arms:
    core.validate_choice(a, name="arms", allowed=ARMS)
  if "weak_order" not in cfg.encoders or cfg.arms[0] != "clip_ft":
    raise ValueError("encoders must include 'weak_order' and arms must start with 'clip_ft'")
  if "weak_order" not in cfg.finetune_encoders:
    raise ValueError(f"finetune_encoders must include 'weak_order', got {cfg.finetune_encoders}")
  if not set(cfg.finetune_encoders) <= set(cfg.encoders):
    raise ValueError(f"finetune_encoders {cfg.finetune_encoders} must be among {cfg.encoders}")
  _chunk(cfg, cfg.pretrain_steps)
  _chunk(cfg, cfg.finetune_steps)
  workdir = pathlib.Path(workdir)
  workdir.mkdir(parents=True, exist_ok=True)
  t0 = time.time()
  data, examples = _data(cfg)
  (workdir / "examples.json").write_text(json.dumps(examples, indent=1))
  cells = core.CellStore(workdir / "cells")
  grid = _train(cfg, cells, data)
  summary = ev.summarize(cfg, grid)
  items = ev.item_outcomes(cfg, grid, int((np.asarray(data["ht_kind"]) == 1).sum()))
  chance = ev.chance_levels(data, cfg.seed + 9)
  runs = {k: [{**r, "evals": ev.without_items(r["evals"])} for r in v] for k, v in grid.items()}
  metrics = {"summary": summary, "chance": chance, "items": items, "runs": runs}
  metrics["derived"] = ev.derived_metrics(summary, chance, items, n_boot=cfg.n_boot)
  core.write_results(
    workdir,
    metrics=metrics,
    config=config,  # the ConfigDict: its claims, verdict rule and report
    wall_time_s=time.time() - t0,
    table_file="table.md",
    notes=(
      "Synthetic proxy: procedural 24x24 scenes of coloured shapes with templated captions, "
      "rule-based units and foils, tiny dual encoders trained from scratch on CPU. Not COCO, "
      "not CLIP ViT-B/32. Test scenes are off the training co-occurrence prior. Evaluations "
      "after pre-training ('clip') and after fine-tuning (the arms). Per-item outcomes "
      "(metrics.items) are packed bits, one hex string per seed."
    ),
  )
  return metrics
