"""SSCL on the shapes world: tiny CLIP, training-free baselines, SSCL and its ablations.

``train_and_evaluate(config, workdir)``:

1. renders training and test images of the shapes world (``jaxpapers.sscl``); for every test
   object, one deterministic context view (the object's box pasted onto another test image's
   background, in a window 2-3x the box);
2. grid 1 (``core.Sweep``): a tiny CLIP per seed, trained with the global CLIP loss only
   (``jaxpapers.cs_clip.clip_loss``), so that its dense maps are poor, as for real CLIP;
3. grid 2: from each seed's CLIP, the fine-tuning arms (same batches and views across arms of
   one seed: paired comparison), training the last image block, ``ln_post`` and the projection:

   * ``keep_only``: the keep term alone (a same-budget fine-tuning control);
   * ``clipself``: CLIPSelf-style control: RoI features of the anchor *in its own image* pulled
     to the frozen CLIP embedding of its tight crop (no view diversity);
   * ``cisc_only``: CISC on context views (teacher + 0.5 InfoNCE) + keep;
   * ``sgsr_only``: SGSR pseudo-label CE + keep;
   * ``sscl``: CISC + SGSR + keep (λ_c = λ_s = 1, λ_keep = 0.1);

4. evaluates every model with the same protocol (MaskCLIP readout, s = 40, bilinear upsampling,
   no post-processing): foreground mIoU over the evaluation classes (``classes``: the 4 shapes
   or the 6 colours), region classification with GT boxes in context and in the context view,
   and feature drift between the two; the CLIP models also with the training-free readouts
   (refinement, its placebo with another image's affinity, ProxyCLIP-style, SCLIP-style) and a
   ridge linear probe of their frozen dense features on both class sets (does the encoder
   carry the class at all?). The "VFM" (``vfm``) is the handcrafted colour / edge proxy or
   the grouping-only instance proxy (which patches belong together, no class);
5. reports trivial predictors beside them and decides the claims of ``configs/default.py``.
"""

from __future__ import annotations

import dataclasses
import pathlib
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

import jaxpapers.sscl as S
from jaxpapers import core
from jaxpapers.cs_clip import clip_loss

ARMS = ("keep_only", "clipself", "cisc_only", "sgsr_only", "sscl")
# per-arm weights: (sgsr, cisc_teacher, cisc_infonce, keep, diverse views)
_ARM_WEIGHTS = {
  "keep_only": (0.0, 0.0, 0.0, 1.0, 1.0),
  "clipself": (0.0, 1.0, 0.0, 0.1, 0.0),
  "cisc_only": (0.0, 1.0, 0.5, 0.1, 1.0),
  "sgsr_only": (1.0, 0.0, 0.0, 0.1, 1.0),
  "sscl": (1.0, 1.0, 0.5, 0.1, 1.0),
}
_W_NAMES = ("sgsr", "teacher", "infonce", "keep", "diverse")
TRAINING_FREE = ("raw", "refine", "refine_placebo", "proxy", "sclip")


@dataclasses.dataclass(frozen=True)
class Config:
  """The typed view of a config file (``configs/*.py``), which sets every field."""

  n_train: int
  n_test: int
  size: int
  patch: int
  width: int
  depth: int
  text_depth: int
  heads: int
  embed_dim: int
  pretrain_steps: int
  pretrain_chunk: int
  pretrain_batch: int
  lr: float
  finetune_steps: int
  finetune_chunk: int
  finetune_batch: int
  n_views: int
  view_scales: tuple[float, ...]
  lr_finetune: float
  seeds: int
  arms: tuple[str, ...]  # a subset of ARMS
  # SGSR / evaluation (ProxyCLIP values where known; the rest reconstructed)
  gamma: float
  threshold: float
  alpha: float
  refine_steps: int
  logit_scale: float
  tau_p: float
  confidence: float
  tau_c: float
  seed: int
  classes: str  # the segmentation / region classes: "shape" or "colour"
  vfm: str  # the frozen "VFM" proxy: "handcrafted" or "instance"
  probe_images: int  # training images whose patches fit the linear probes


def _sscl_cfg(cfg: Config) -> S.SSCLConfig:
  return S.SSCLConfig(
    gamma=cfg.gamma,
    threshold=cfg.threshold,
    alpha=cfg.alpha,
    steps=cfg.refine_steps,
    logit_scale=cfg.logit_scale,
    tau_p=cfg.tau_p,
    confidence=cfg.confidence,
    tau_c=cfg.tau_c,
  )


# ------------------------------------------------------------------ data --


def _data(cfg: Config) -> dict:
  tr = S.render_shapes_world(cfg.seed + 1, cfg.n_train, size=cfg.size)
  te = S.render_shapes_world(cfg.seed + 2, cfg.n_test, size=cfg.size)
  K = S.MAX_OBJECTS
  # one context view per test object: its box on another test image's background
  imgs = jnp.asarray(te.images, jnp.float32) / 255.0
  bgs = jnp.roll(jnp.asarray(te.backgrounds, jnp.float32) / 255.0, 1, axis=0)
  keys = jax.random.split(jax.random.key(cfg.seed + 3), cfg.n_test * K).reshape(cfg.n_test, K)

  def views_of(img, bg, boxes, ks):
    def one(box, k):
      v, b = S.make_context_views(k, img, box, n_views=1, scales=(2.0, 3.0), backgrounds=bg[None])
      return v[0], b[0]

    return jax.vmap(one)(boxes, ks)

  safe = np.where(te.valid[..., None], te.boxes, np.array([0, 0, 8, 8], np.float32))
  views, vboxes = jax.jit(jax.vmap(views_of))(imgs, bgs, jnp.asarray(safe), keys)
  fg_target, obj_labels = S.label_maps(te, cfg.classes)
  probe = {}
  n_probe = min(cfg.probe_images, cfg.n_train)
  for kind in S.CLASS_SETS:  # patch labels of both class sets for the linear probes
    probe[f"probe_train_{kind}"] = np.asarray(
      S.patch_labels(S.label_maps(tr, kind)[0][:n_probe], cfg.patch)
    )
    probe[f"probe_test_{kind}"] = np.asarray(S.patch_labels(S.label_maps(te, kind)[0], cfg.patch))
  return {
    **probe,
    "train_instance": tr.instance_map.astype(np.int32),
    "test_instance": te.instance_map.astype(np.int32),
    "train_images": tr.images,
    "train_bg": tr.backgrounds,
    "train_boxes": np.where(tr.valid[..., None], tr.boxes, 0).astype(np.float32),
    "train_valid": tr.valid,
    "train_captions": tr.captions,
    "test_images": te.images,
    "test_target": fg_target,
    "test_boxes": safe.astype(np.float32),
    "test_valid": te.valid,
    "test_labels": np.maximum(obj_labels, 0).astype(np.int32),
    "test_views": np.round(np.asarray(views) * 255).astype(np.uint8),  # [n, K, S, S, 3]
    "test_view_boxes": np.asarray(vboxes, np.float32),
    "prompts": S.class_prompts(cfg.classes),
  }


# ------------------------------------------------------------------ model --


def _model(cfg: Config, key) -> S.TinyCLIP:
  return S.TinyCLIP(
    len(S.VOCAB),
    size=cfg.size,
    patch=cfg.patch,
    width=cfg.width,
    depth=cfg.depth,
    text_depth=cfg.text_depth,
    heads=cfg.heads,
    embed_dim=cfg.embed_dim,
    max_len=S.MAX_LEN,
    rngs=nnx.Rngs(key),
  )


def _trainable_mask(params, depth: int):
  """True for the image tower's last block, ``ln_post`` and ``proj`` (the rest is frozen)."""

  def trainable(path, _):
    keys = [getattr(p, "key", getattr(p, "idx", None)) for p in path]
    if not keys or keys[0] != "image":
      return False
    if keys[1] in ("ln_post", "proj"):
      return True
    return keys[1] == "blocks" and keys[2] == depth - 1

  return jax.tree_util.tree_map_with_path(trainable, params)


def _optimizer(lr, mask=None):
  """Clipped Adam; with ``mask`` (a bool tree like the params), only True leaves move.

  The frozen leaves get ``set_to_zero``: ``optax.masked`` alone would pass their raw gradients
  through as updates, and ``apply_updates`` would then step them up the gradient.
  """
  opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(lr))
  if mask is None:
    return opt
  labels = jax.tree.map(lambda m: "train" if m else "frozen", mask)
  return optax.multi_transform({"train": opt, "frozen": optax.set_to_zero()}, labels)


def num_classes(cfg: Config) -> int:
  return len(S.SHAPES if cfg.classes == "shape" else S.COLOURS)


def _vfm(cfg: Config, images, instance):
  """``[B, N, D']`` frozen "VFM" features of the chosen proxy."""
  if cfg.vfm == "instance":
    return S.instance_vfm(instance, cfg.patch, S.MAX_OBJECTS)
  return S.handcrafted_vfm(images, cfg.patch)


def _unit(x):
  return x / jnp.maximum(jnp.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def _programs(cfg: Config):
  graphdef, abstract = nnx.split(nnx.eval_shape(lambda: _model(cfg, jax.random.key(0))))
  mask = _trainable_mask(abstract, cfg.depth)
  scfg = _sscl_cfg(cfg)
  K, Sz, C = S.MAX_OBJECTS, cfg.size, num_classes(cfg)
  img_size = (Sz, Sz)

  def f32(x):
    return x.astype(jnp.float32) / 255.0

  # ---- grid 1: CLIP pre-training (global loss only)
  def pre_init(hp, key, data):
    params = nnx.split(_model(cfg, key))[1]
    return params, _optimizer(cfg.lr).init(params)

  def pre_step(state, hp, key, step, data):
    params, opt = state
    k = jax.random.fold_in(key, step)
    idx = jax.random.randint(k, (cfg.pretrain_batch,), 0, data["train_images"].shape[0])

    def loss_fn(p):
      m = nnx.merge(graphdef, p)
      img = m.image(data["train_images"][idx])
      txt = m.text(data["train_captions"][idx])
      return clip_loss(img, txt, m.logit_scale(), validate=False)

    loss, g = jax.value_and_grad(loss_fn)(params)
    upd, opt = _optimizer(cfg.lr).update(g, opt, params)
    return (optax.apply_updates(params, upd), opt), {"loss": loss}

  # ---- evaluation (any params)
  def evaluate(params, data, training_free: bool):
    m = nnx.merge(graphdef, params)
    T = m.text(data["prompts"])  # [C, E]
    imgs = data["test_images"]
    dense = m.image.dense(imgs, "maskclip")
    tgt = data["test_target"]

    def miou(feats):
      return S.segmentation_miou(
        S.segment(feats, T, img_size, logit_scale=cfg.logit_scale), tgt, C
      )[0]

    out = {"miou": miou(dense)}
    valid = data["test_valid"]
    z_in = S.region_embeddings(dense, data["test_boxes"], img_size)  # [n, K, E]
    nv = data["test_views"].reshape(-1, Sz, Sz, 3)
    dv = m.image.dense(nv, "maskclip")  # [n K, N, E]
    vb = data["test_view_boxes"].reshape(-1, 1, 4)
    z_ctx = S.region_embeddings(dv, vb, img_size).reshape(z_in.shape)
    Tn = T / jnp.linalg.norm(T, axis=-1, keepdims=True)

    def acc(z):
      hit = jnp.argmax(z @ Tn.T, -1) == data["test_labels"]
      return jnp.sum(hit & valid) / jnp.sum(valid)

    out["region_acc"] = acc(z_in)
    out["region_acc_ctx"] = acc(z_ctx)
    out["drift"] = S.feature_drift(z_in, z_ctx, valid)
    if training_free:
      vfm = _vfm(cfg, imgs, data["test_instance"])
      A = S.vfm_affinity(vfm, gamma=cfg.gamma, threshold=cfg.threshold, validate=False)
      L = S.patch_text_logits(dense, T, logit_scale=cfg.logit_scale)

      def refined_miou(A):
        R = S.refine_logits(L, A, alpha=cfg.alpha, steps=cfg.refine_steps, validate=False)
        return S.segmentation_miou(jnp.argmax(S.upsample_logits(R, img_size), -1), tgt, C)[0]

      out["miou_refine"] = refined_miou(A)
      # placebo: the same refinement with the affinity of the next test image (no structure of
      # this image)
      out["miou_refine_placebo"] = refined_miou(jnp.roll(A, 1, axis=0))
      out["miou_proxy"] = miou(m.image.dense(imgs, "proxy", A))
      out["miou_sclip"] = miou(m.image.dense(imgs, "sclip"))
      # linear probes of the frozen dense features (both class sets): do they carry the class?
      n_probe = data["probe_train_shape"].shape[0]
      ftr = m.image.dense(data["train_images"][:n_probe], "maskclip")
      for kind in S.CLASS_SETS:
        out[f"probe_acc_{kind}"] = S.linear_probe_accuracy(
          ftr.reshape(-1, ftr.shape[-1]),
          data[f"probe_train_{kind}"].reshape(-1),
          dense.reshape(-1, dense.shape[-1]),
          data[f"probe_test_{kind}"].reshape(-1),
          len(S.SHAPES if kind == "shape" else S.COLOURS),
        )
    return out

  def pre_eval(state, hp, key, data):
    return evaluate(state[0], data, True)

  # ---- grid 2: fine-tuning arms
  def ft_init(hp, key, data):
    params = hp["init"]
    return params, _optimizer(cfg.lr_finetune, mask).init(params)

  def ft_step(state, hp, key, step, data):
    params, opt = state
    teacher = nnx.merge(graphdef, hp["init"])
    w = {n: hp[f"w_{n}"] for n in _W_NAMES}
    B, Vn = cfg.finetune_batch, cfg.n_views
    k = jax.random.fold_in(key, step)
    k_idx, k_obj, k_view = jax.random.split(k, 3)
    idx = jax.random.randint(k_idx, (B,), 0, data["train_images"].shape[0])
    imgs = data["train_images"][idx]
    valid = data["train_valid"][idx]  # [B, K]
    obj = jnp.argmax(jnp.where(valid, jax.random.uniform(k_obj, (B, K)), -1.0), -1)
    boxes = data["train_boxes"][idx, obj]  # [B, 4] one anchor per image
    bgs = f32(jnp.roll(data["train_bg"][idx], 1, axis=0))
    fimgs = f32(imgs)
    vkeys = jax.random.split(k_view, B)
    views, vboxes = jax.vmap(
      lambda kk, im, bx, bg: S.make_context_views(
        kk,
        im,
        bx,
        n_views=Vn,
        scales=tuple(cfg.view_scales),
        backgrounds=jnp.broadcast_to(bg, (Vn, Sz, Sz, 3)),
      )
    )(vkeys, fimgs, boxes, bgs)  # [B, V, S, S, 3], [B, V, 4]
    # without view diversity (CLIPSelf control): the anchor in its own image, V times
    div = w["diverse"]
    views = div * views + (1 - div) * fimgs[:, None]
    vboxes = div * vboxes + (1 - div) * boxes[:, None]
    # frozen teacher: dense targets, global embeddings, tight-crop embeddings
    T = jax.lax.stop_gradient(teacher.text(data["prompts"]))
    t_cls, t_dense = teacher.image.encode(fimgs, "maskclip")
    crops, _ = jax.vmap(
      lambda kk, im, bx: S.make_context_views(kk, im, bx, n_views=1, scales=(1.0, 1.0))
    )(vkeys, fimgs, boxes)
    t_crop = teacher.image(crops[:, 0])
    vfm = _vfm(cfg, imgs, data["train_instance"][idx])
    targets = S.sgsr_targets(t_dense, vfm, T, scfg)
    teach = jax.lax.stop_gradient((t_cls, t_crop))

    def loss_fn(p):
      m = nnx.merge(graphdef, p)
      s_cls, s_dense = m.image.encode(fimgs, "maskclip")
      logits = S.patch_text_logits(s_dense, T, logit_scale=cfg.logit_scale)
      dv = m.image.dense(views.reshape(B * Vn, Sz, Sz, 3), "maskclip")
      z = S.region_embeddings(dv, vboxes.reshape(B * Vn, 1, 4), img_size).reshape(B, Vn, -1)
      _, terms = S.sscl_loss(logits, targets, z, teach[1], s_cls, teach[0], scfg)
      total = (
        w["sgsr"] * terms["sgsr"]
        + w["teacher"] * terms["cisc_teacher"]
        + w["infonce"] * terms["cisc_infonce"]
        + w["keep"] * terms["keep"]
      )
      # diagnostics (not optimised): how far the dense readout moved from the frozen teacher's,
      # and how far its patches are from their image mean (0 when the readout is constant)
      sd = jax.lax.stop_gradient(_unit(s_dense))
      diag = {
        "dense_drift": jnp.mean(1.0 - jnp.sum(sd * _unit(t_dense), -1)),
        "dense_spread": jnp.mean(1.0 - jnp.sum(sd * _unit(jnp.mean(sd, 1, keepdims=True)), -1)),
      }
      return total, {**terms, **diag}

    (loss, terms), g = jax.value_and_grad(loss_fn, has_aux=True)(params)
    upd, opt = _optimizer(cfg.lr_finetune, mask).update(g, opt, params)
    return (optax.apply_updates(params, upd), opt), {"loss": loss, **terms}

  def ft_eval(state, hp, key, data):
    return evaluate(state[0], data, False)

  return (pre_init, pre_step, pre_eval), (ft_init, ft_step, ft_eval)


# ------------------------------------------------------------------ grids --


def _last(res, r) -> dict:
  return {k: float(np.asarray(v[r])[-1]) for k, v in res.evals.items()}


def _train(cfg: Config, cells: core.CellStore, data) -> dict:
  pre_fns, ft_fns = _programs(cfg)
  seeds = list(range(cfg.seeds))
  base = jax.random.key(cfg.seed)
  state = {}

  def pretrain(ckpt):
    keys = jnp.stack([jax.random.fold_in(base, s) for s in seeds])
    hp = {"lr": np.full(len(seeds), cfg.lr, np.float32)}
    res = core.Sweep(*pre_fns).run(
      hp,
      keys,
      num_steps=cfg.pretrain_steps,
      chunk_size=cfg.pretrain_chunk,
      data=data,
      checkpoint_dir=ckpt,
      desc="CLIP pre-training",
    )
    state["params"] = jax.tree.map(np.asarray, res.state[0])
    return {
      "runs": [
        {
          "seed": s,
          "evals": _last(res, r),
          "final_loss": float(np.asarray(res.history["loss"][r, -50:]).mean()),
        }
        for r, s in enumerate(seeds)
      ]
    }

  pre = cells.get_or_compute("pretrain", pretrain)
  runs = [(s, a) for s in seeds for a in cfg.arms]

  def finetune(ckpt):
    if "params" not in state:  # resumed after pre-training: rerun it (deterministic)
      pretrain(None)
    src = np.array([s for s, _ in runs])
    hp = {"init": jax.tree.map(lambda x: np.asarray(x)[src], state["params"])}
    for j, n in enumerate(_W_NAMES):
      hp[f"w_{n}"] = np.array([_ARM_WEIGHTS[a][j] for _, a in runs], np.float32)
    # the arms of one seed share their key: same batches, anchors and views (paired)
    keys = jnp.stack([jax.random.fold_in(base, 100 + s) for s, _ in runs])
    res = core.Sweep(*ft_fns).run(
      hp,
      keys,
      num_steps=cfg.finetune_steps,
      chunk_size=cfg.finetune_chunk,
      data=data,
      checkpoint_dir=ckpt,
      desc="SSCL fine-tuning arms",
    )
    n_chunks = -(-cfg.finetune_steps // cfg.finetune_chunk)
    return {
      "runs": [
        {
          "seed": s,
          "arm": a,
          "evals": _last(res, r),
          "final_terms": {k: float(np.asarray(v[r, -20:]).mean()) for k, v in res.history.items()},
          # per fine-tuning chunk, the mean of every loss term and diagnostic over its steps
          "terms_by_chunk": {
            k: [float(c.mean()) for c in np.array_split(np.asarray(v[r]), n_chunks)]
            for k, v in res.history.items()
          },
        }
        for r, (s, a) in enumerate(runs)
      ]
    }

  ft = cells.get_or_compute("finetune", finetune)
  return {"pretrain": pre["runs"], "finetune": ft["runs"]}


METRICS = ("miou", "region_acc", "region_acc_ctx", "drift")


def summarize(cfg: Config, grid: dict) -> dict:
  """Per model (training-free readouts of the CLIP models, then each arm): per-seed values."""
  pre = sorted(grid["pretrain"], key=lambda r: r["seed"])
  table = {
    "raw": {m: [r["evals"][m] for r in pre] for m in METRICS},
    "refine": {"miou": [r["evals"]["miou_refine"] for r in pre]},
    "refine_placebo": {"miou": [r["evals"]["miou_refine_placebo"] for r in pre]},
    "proxy": {"miou": [r["evals"]["miou_proxy"] for r in pre]},
    "sclip": {"miou": [r["evals"]["miou_sclip"] for r in pre]},
  }
  for a in cfg.arms:
    rs = sorted([r for r in grid["finetune"] if r["arm"] == a], key=lambda r: r["seed"])
    table[a] = {m: [r["evals"][m] for r in rs] for m in METRICS}
  return table


def probes(grid: dict) -> dict:
  """Per class set: the pretrained CLIP's linear-probe accuracies, per seed."""
  pre = sorted(grid["pretrain"], key=lambda r: r["seed"])
  return {k: [r["evals"][f"probe_acc_{k}"] for r in pre] for k in S.CLASS_SETS}


def trivial_baselines(data: dict, seed: int, num_classes: int = 4) -> dict:
  """Input-independent predictors on the same test set and metrics (host-side numpy)."""
  C = num_classes
  tgt = data["test_target"]
  valid = data["test_valid"]
  labels = data["test_labels"]
  keep = tgt >= 0
  out = {}

  def miou(pred):  # numpy: the same definition as S.segmentation_miou, host-side
    ious = []
    for c in range(C):
      p, g = (pred == c) & keep, (tgt == c) & keep
      if (p | g).any():
        ious.append((p & g).sum() / (p | g).sum())
    return float(np.mean(ious))

  counts = np.bincount(tgt[keep], minlength=C)
  out["majority_miou"] = miou(np.full_like(tgt, counts.argmax()))
  rng = np.random.default_rng(seed)
  out["uniform_random_miou"] = miou(rng.integers(0, C, tgt.shape))
  obj_counts = np.bincount(labels[valid], minlength=C)
  out["majority_region_acc"] = float(obj_counts.max() / obj_counts.sum())
  out["chance_region_acc"] = 1.0 / C
  out["constant_feature_drift"] = 0.0  # a constant feature map never drifts
  return out


def derived_metrics(summary: dict, trivial: dict, probe: dict | None = None) -> dict:
  """The numbers the claims are judged on (pure, JSON in / out); differences are paired.

  ``probe`` maps a class set to the pretrained CLIP's per-seed linear-probe accuracies; the
  claims' precondition reads the lowest seed's (``probe_acc_<set>_min``). The fine-tuning
  claims' precondition reads ``keep_only_minus_raw_region_acc_min``: the lowest seed's
  keep-only region accuracy minus the pretrained CLIP's (raw readout), paired by seed.
  """
  out = {}
  for kind, accs in (probe or {}).items():
    out[f"probe_acc_{kind}"] = float(np.mean(accs))
    out[f"probe_acc_{kind}_min"] = float(np.min(accs))

  def diff(a, b, metric, name, worst=False):
    if a in summary and b in summary and metric in summary[a] and metric in summary[b]:
      d = np.asarray(summary[a][metric]) - np.asarray(summary[b][metric])
      out[name] = float(d.mean())
      out[name + "_ci"] = core.ci95_halfwidth(d)
      if worst:  # the lowest seed's difference
        out[name + "_min"] = float(d.min())

  for name, m in summary.items():
    for k, v in m.items():
      out[f"{name}_{k}"] = float(np.mean(v))
  diff("refine", "raw", "miou", "refine_minus_raw_miou")
  diff("refine_placebo", "raw", "miou", "refine_placebo_minus_raw_miou")
  diff("sclip", "raw", "miou", "sclip_minus_raw_miou")
  diff("proxy", "raw", "miou", "proxy_minus_raw_miou")
  diff("keep_only", "refine", "miou", "keep_only_minus_refine_miou")
  # does fine-tuning with the keep term alone preserve the pretrained CLIP's readout?
  diff("keep_only", "raw", "region_acc", "keep_only_minus_raw_region_acc", worst=True)
  diff("keep_only", "raw", "miou", "keep_only_minus_raw_miou")
  diff("sscl", "sclip", "miou", "sscl_minus_sclip_miou")
  diff("sscl", "refine", "miou", "sscl_minus_refine_miou")
  diff("sscl", "raw", "miou", "sscl_minus_raw_miou")
  diff("cisc_only", "keep_only", "drift", "cisc_minus_keep_drift")
  diff("cisc_only", "keep_only", "region_acc_ctx", "cisc_minus_keep_region_acc_ctx")
  diff("sgsr_only", "keep_only", "miou", "sgsr_minus_keep_miou")
  if all(a in summary for a in ("sscl", "cisc_only", "sgsr_only")):
    singles = np.maximum(summary["cisc_only"]["miou"], summary["sgsr_only"]["miou"])
    d = np.asarray(summary["sscl"]["miou"]) - singles
    out["sscl_minus_best_single_miou"] = float(d.mean())
    out["sscl_minus_best_single_miou_ci"] = core.ci95_halfwidth(d)
  out.update({f"trivial_{k}": v for k, v in trivial.items()})
  return out


def report_view(record: dict) -> dict:
  """What ``configs/default.py``'s report reads besides the metrics.

  Returns:
    ``{"num_classes": the segmentation classes of the run's class set, "chance": {"shape",
    "colour"}: a linear probe's chance accuracy on each}``.
  """
  classes = record["config"]["classes"]
  return {
    "num_classes": len(S.SHAPES if classes == "shape" else S.COLOURS),
    "chance": {"shape": 1 / len(S.SHAPES), "colour": 1 / len(S.COLOURS)},
  }


def train_and_evaluate(config, workdir) -> dict:
  """Runs both grids; writes results.json, table.md and plots under ``workdir``."""
  cfg = core.config_to_dataclass(config, Config)
  core.validate_seeds(cfg.seeds, name="seeds")
  cfg = dataclasses.replace(cfg, arms=tuple(cfg.arms), view_scales=tuple(cfg.view_scales))
  for a in cfg.arms:
    core.validate_choice(a, name="arms", allowed=ARMS)
  core.validate_choice(cfg.classes, name="classes", allowed=S.CLASS_SETS)
  core.validate_choice(cfg.vfm, name="vfm", allowed=("handcrafted", "instance"))
  workdir = pathlib.Path(workdir)
  workdir.mkdir(parents=True, exist_ok=True)
  t0 = time.time()
  data = _data(cfg)
  cells = core.CellStore(workdir / "cells")
  grid = _train(cfg, cells, data)
  summary = summarize(cfg, grid)
  trivial = trivial_baselines(data, cfg.seed + 9, num_classes(cfg))
  probe = probes(grid)
  metrics = {"summary": summary, "trivial": trivial, "probe": probe, "runs": grid}
  metrics["derived"] = derived_metrics(summary, trivial, probe)
  core.write_results(
    workdir,
    metrics=metrics,
    config=config,  # the ConfigDict: its claims, verdict rule and report
    wall_time_s=time.time() - t0,
    notes=(
      "Synthetic proxy: procedural 32x32 shapes-world images, a ~0.2M-parameter CLIP-style "
      f"model trained from scratch with the global CLIP loss, the '{cfg.vfm}' 'VFM' proxy "
      "in place of DINO. Not COCO, not CLIP ViT-B/16, no video. Evaluation: foreground mIoU "
      f"over the {cfg.classes} classes (background pixels ignored), MaskCLIP readout, logit "
      "scale 40, "
      "bilinear upsampling, no sliding window, no PAMR, no background threshold."
    ),
  )
  (workdir / "table.md").write_text(core.read_results(workdir)["table_markdown"] + "\n")
  return metrics
