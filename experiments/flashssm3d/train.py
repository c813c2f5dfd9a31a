"""FlashSSM-3D reproduction on procedural scenes (a synthetic proxy; see README.md).

Pipeline: render a training pool and a disjoint test set; train the alternating-attention teacher
on ground truth (T1); precompute its outputs on the student's 25% subset; distil students with
(a) regression, (b) + Procrustes, (c) + Procrustes + reprojection, and a GT-trained student at the
same budget; evaluate all against GT and the teacher. ``config.experiment = "scan_order"``
(configs/scan_order.py) runs the scan-order ablation instead (:func:`scan_order_and_evaluate`);
the view-scaling study is scaling.py (``python -m experiments.flashssm3d.scaling``).
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

from experiments.flashssm3d import scaling
from jaxpapers import core
from jaxpapers import flashssm3d as fs

_VARIANTS = {
  "regression": dict(procrustes=False, reprojection=False, targets="teacher", arch="ssm"),
  "procrustes": dict(procrustes=True, reprojection=False, targets="teacher", arch="ssm"),
  "reprojection": dict(procrustes=True, reprojection=True, targets="teacher", arch="ssm"),
  # the same SSM student trained on ground truth at the same FLOP budget (E2's control)
  "gt": dict(procrustes=False, reprojection=False, targets="gt", arch="ssm"),
  # an alternating-attention model of about the student's size trained on ground truth at the
  # same FLOP budget (E1: SSM vs attention from ground truth)
  "attention_gt": dict(procrustes=False, reprojection=False, targets="gt", arch="attention"),
}


# one compiled program instead of dozens of eager ops per rendered chunk
_pose_encoding = jax.jit(fs.cameras_to_pose_encoding, static_argnums=2)


def _np_batch(b: fs.SceneBatch) -> dict:
  pose_enc = np.asarray(_pose_encoding(b.extrinsics, b.intrinsics, tuple(b.images.shape[2:4])))
  if not np.isfinite(pose_enc).all():  # under jit a non-rotation gives NaN instead of raising
    raise ValueError("rendered cameras gave a non-finite pose encoding (not rotations?)")
  return {
    "images": np.asarray(b.images),
    "depth": np.asarray(b.depth),
    "points": np.asarray(b.points),
    "valid": np.asarray(b.valid),
    "extrinsics": np.asarray(b.extrinsics),
    "intrinsics": np.asarray(b.intrinsics),
    "pose_enc": pose_enc,
  }


def render_set(seed, n, cfg, chunk=16) -> dict:
  """Render ``n`` scenes in equal chunks (one compilation; the last chunk is rendered whole)."""
  parts = []
  for start in range(0, n, chunk):
    b = fs.render_scenes(
      seed + start, chunk, cfg.num_views, image_size=cfg.image_size, split=cfg.split
    )
    parts.append(_np_batch(b))
  return {k: np.concatenate([p[k] for p in parts])[:n] for k in parts[0]}


def load_data(config):
  """``(pool, test, pool_names)``: the training pool and the test scenes as dicts of arrays.

  ``data.source='procedural'`` renders them (disjoint seeds); ``'disk'`` reads the scene folders
  ``<data.data_dir>/train`` and ``<data.data_dir>/test`` (format:
  :func:`jaxpapers.flashssm3d.load_multiview_scenes`), whose names then match cached teacher
  predictions. The student's subset is the first ``student_fraction`` of the pool.
  """
  dc = config.data
  source = dc.get("source", "procedural")
  core.validate_choice(source, name="data.source", allowed=("procedural", "disk"))
  if source == "disk":
    root = pathlib.Path(dc.data_dir)
    kw = dict(num_views=dc.num_views, image_size=dc.image_size)
    pool, names = fs.load_multiview_scenes(root / "train", **kw)
    test, _ = fs.load_multiview_scenes(root / "test", **kw)
    return _np_batch(pool), _np_batch(test), names
  pool = render_set(10_000 + 1000 * config.seed, dc.pool_scenes, dc, chunk=dc.render_chunk)
  test = render_set(900_000 + 1000 * config.seed, dc.test_scenes, dc, chunk=dc.render_chunk)
  return pool, test, None


PIXEL_NORMS = ("none", "pool")


def pixel_norm(config, images) -> dict:
  """The models' input normalisation from ``config.data.pixel_norm`` (keyword arguments).

  ``'pool'``: the per-channel mean and standard deviation of ``images`` (the training pool),
  :func:`jaxpapers.flashssm3d.pixel_statistics`; ``'none'`` (the default when the field is
  absent): raw pixels in [0, 1], as the experiment ran before the field existed.

  Returns:
    ``{}`` or ``{"pixel_mean": (r, g, b), "pixel_std": (r, g, b)}`` for the model configs.
  """
  kind = config.data.get("pixel_norm", "none")
  core.validate_choice(kind, name="data.pixel_norm", allowed=PIXEL_NORMS)
  if kind == "none":
    return {}
  mean, std = fs.pixel_statistics(images)
  return {"pixel_mean": mean, "pixel_std": std}


def student_config(config, **norm) -> fs.FlashSSM3DConfig:
  """The student's :class:`FlashSSM3DConfig` from ``config.student`` (and the image size).

  ``norm``: the input normalisation of :func:`pixel_norm` (``pixel_mean``, ``pixel_std``).
  """
  sc = config.student
  return fs.FlashSSM3DConfig(
    width=sc.width,
    depth=sc.depth,
    state=sc.state,
    expand=sc.expand,
    patch=sc.patch,
    registers=sc.registers,
    image_size=config.data.image_size,
    mlp_ratio=sc.mlp_ratio,
    camera_stages=sc.camera_stages,
    method=sc.method,
    chunk_size=sc.get("chunk_size", 64),
    global_orders=tuple(sc.get("global_orders", ("frame_major", "position_major"))),
    remat=sc.get("remat", False),
    dtype=sc.get("dtype", "float32"),
    **norm,
  )


def gt_targets(d: dict) -> fs.DistillTargets:
  ones = np.ones(d["valid"].shape, np.float32)
  return fs.DistillTargets(
    pose_enc=d["pose_enc"],
    depth=d["depth"][..., None],
    depth_conf=ones,
    points=d["points"],
    point_conf=ones,
    valid=d["valid"],
  )


def _weights(loss_cfg, procrustes, reprojection):
  return fs.LossWeights(
    camera=loss_cfg.camera,
    depth=loss_cfg.depth,
    points=loss_cfg.points,
    grad=loss_cfg.grad,
    procrustes=loss_cfg.procrustes if procrustes else 0.0,
    reprojection=loss_cfg.reprojection if reprojection else 0.0,
    num_points=loss_cfg.num_points,
    reproj_delta=loss_cfg.reproj_delta,
  )


def make_step(weights):
  def loss_fn(model, images, targets):
    pred = model(images)
    return fs.distillation_loss(pred, targets, weights, pose_stages=pred.pose_stages)

  def step(state, batch):
    images, targets = batch
    (loss, aux), grads, rest = state.value_and_grad(loss_fn, images, targets, has_aux=True)
    return state.apply_gradients(grads, rest=rest), aux

  return step


def _optimizer(c, steps):
  sched = optax.warmup_cosine_decay_schedule(
    0.0, c.learning_rate, min(c.warmup, max(steps - 1, 1)), max(steps, 2), c.learning_rate * 0.05
  )
  return optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(sched, weight_decay=1e-4))


def compile_step(step_fn, state, batch, *, count=True):
  """AOT-compile a train step once; returns ``(compiled, FLOPs per step or None)``.

  FLOPs come from :func:`jaxpapers.flashssm3d.count_flops`, which counts every ``lax.scan``
  body once per step of the scan (XLA's own ``cost_analysis`` counts it once in total);
  ``count=False`` skips the count (a caller that already has it).
  """
  traced = jax.jit(step_fn, donate_argnums=0).trace(state, batch)
  return traced.lower().compile(), (fs.count_flops(traced) if count else None)


_to_cameras = jax.jit(fs.pose_encoding_to_cameras, static_argnums=1)
_unproject = jax.jit(fs.unproject_depth)


def batch_sharding(config):
  """``NamedSharding`` splitting the batch axis over all devices, or None (``shard_batch`` off).

  The parameters and optimizer state stay replicated; XLA partitions every batched op (the
  models have no cross-example interaction), so this is data parallelism over a
  ``jax.make_mesh`` mesh with the gradient all-reduce inserted by the compiler.
  """
  if not config.get("shard_batch", False):
    return None
  n = jax.device_count()
  for name, bs in (
    ("teacher.batch_size", config.teacher.batch_size),
    ("student.batch_size", config.student.batch_size),
    ("data.eval_batch", config.data.eval_batch),
  ):
    if bs % n:
      raise ValueError(f"{name}={bs} must be divisible by the {n} devices to shard the batch")
  # Auto axes: XLA propagates the batch sharding through every op (explicit axes would need a
  # sharding annotation on each reshape of the patch embedding)
  mesh = jax.make_mesh((n,), ("data",), axis_types=(jax.sharding.AxisType.Auto,))
  return jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("data"))


def _put(a, sharding):
  return jnp.asarray(a) if sharding is None else jax.device_put(np.asarray(a), sharding)


def _batch_fn(data_targets, n_avail, batch_size, seed, sharding=None):
  images, targets = data_targets

  def fn(step):
    idx = np.random.default_rng((seed, step)).choice(
      n_avail, batch_size, replace=n_avail < batch_size
    )
    return _put(images[idx], sharding), jax.tree.map(lambda a: _put(a[idx], sharding), targets)

  return fn


class Forward:
  """A model's jitted forward pass, compiled once for a fixed batch size (the last batch is padded)."""

  def __init__(self, model, batch_size=8, sharding=None):
    graphdef, self.state = nnx.split(model)
    self.sharding = sharding
    self.fn = jax.jit(lambda s, x: nnx.merge(graphdef, s)(x))
    self.batch_size = batch_size

  def flops(self, images) -> float:
    """FLOPs of one forward over ``batch_size`` scenes (from the lowered computation)."""
    x = _put(np.repeat(images[:1], self.batch_size, 0), self.sharding)
    return fs.count_flops(self.fn, self.state, x)

  def __call__(self, images) -> dict:
    n, bs = len(images), self.batch_size
    outs = []
    for i in range(0, n, bs):
      x = images[i : i + bs]
      m = len(x)
      if m < bs:
        x = np.concatenate([x, np.repeat(x[-1:], bs - m, 0)])
      out = self.fn(self.state, _put(x, self.sharding))._asdict()
      out = {
        k: np.asarray(v)[:, :m] if k == "pose_stages" else np.asarray(v)[:m] for k, v in out.items()
      }
      outs.append(out)
    return {
      k: np.concatenate([o[k] for o in outs], axis=1 if k == "pose_stages" else 0) for k in outs[0]
    }


def evaluate(pred: dict, ref: dict, image_hw) -> dict:
  """All metrics of ``pred`` against a reference (GT dict or teacher predictions).

  ``pred`` holds any of ``pose_enc [N, S, 9]``, ``depth [N, S, H, W, 1]``,
  ``points [N, S, H, W, 3]``; a metric whose inputs are missing is left out (a trivial predictor
  that only predicts poses gets camera metrics only). Reference dicts with ``extrinsics`` are
  ground truth (with its valid mask); otherwise the teacher's outputs (every pixel valid).
  """
  if "extrinsics" in ref:
    ext_r, depth_r, pts_r, valid = ref["extrinsics"], ref["depth"], ref["points"], ref["valid"]
  else:
    ext_r = np.asarray(_to_cameras(jnp.asarray(ref["pose_enc"]), tuple(image_hw))[0])
    depth_r, pts_r = ref["depth"][..., 0], ref["points"]
    valid = np.ones(depth_r.shape, bool)
  n = len(ext_r)
  out = {}
  if "pose_enc" in pred:
    ext_p, K_p = map(np.asarray, _to_cameras(jnp.asarray(pred["pose_enc"]), tuple(image_hw)))
    errs = [fs.relative_pose_errors(ext_p[b], ext_r[b]) for b in range(n)]
    rot = np.concatenate([e[0] for e in errs])
    tr = np.concatenate([e[1] for e in errs])
    out["AUC@30"] = fs.pose_auc(rot, tr, 30)
    out.update({k: v for k, v in fs.rra_rta(rot, tr).items() if "@5" not in k})
    out["rot_err_median_deg"] = float(np.median(rot))
    out["trans_err_median_deg"] = float(np.median(tr))
    out["ATE"] = float(np.mean([fs.ate(ext_p[b], ext_r[b]) for b in range(n)]))
  if "depth" in pred:
    dms = [fs.depth_metrics(pred["depth"][b], depth_r[b], valid[b]) for b in range(n)]
    out["depth_AbsRel"] = float(np.mean([d["abs_rel"] for d in dms]))
    out["depth_delta1.25"] = float(np.mean([d["delta_1.25"] for d in dms]))
  if "points" in pred:
    out["points_overall"] = _overall(pred["points"], pts_r, valid)
  if "depth" in pred and "pose_enc" in pred:
    pts_dc = np.asarray(
      _unproject(jnp.asarray(pred["depth"][..., 0]), jnp.asarray(ext_p), jnp.asarray(K_p))
    )
    out["points_overall_depthcam"] = _overall(pts_dc, pts_r, valid)
  return out


def _overall(points, pts_r, valid) -> float:
  return float(
    np.mean(
      [
        fs.accuracy_completeness(points[b], pts_r[b], valid[b], max_points=4096)["overall"]
        for b in range(len(pts_r))
      ]
    )
  )


def _mean_pose(pose_enc: np.ndarray) -> np.ndarray:
  """Per-view-index mean pose encoding ``[S, 9]`` of ``[N, S, 9]`` (quaternion re-normalised)."""
  m = np.asarray(pose_enc, np.float64).mean(0)
  q = m[:, 3:7] / np.maximum(np.linalg.norm(m[:, 3:7], axis=-1, keepdims=True), 1e-12)
  return np.concatenate([m[:, :3], q, m[:, 7:]], -1).astype(np.float32)


def trivial_predictors(fit: dict, num_test: int, image_hw) -> dict:
  """Input-independent predictors fitted on ``fit`` (the targets a student is trained on).

  ``fit`` holds ``pose_enc [N, S, 9]``, ``depth [N, S, H, W]``, ``points [N, S, H, W, 3]`` and
  ``valid [N, S, H, W]`` (ground truth, or the teacher's outputs with every pixel valid). None of
  the predictors looks at the test images:

  * ``trivial_mean_pose``: the mean pose encoding per view index (cameras only);
  * ``trivial_constant_depth``: one constant depth per view index (the mean valid depth of that
    view index), and the points it unprojects to through the mean-pose cameras (depth and
    point-head metrics; depth metrics are median-scale aligned, so any constant scores the same);
  * ``trivial_mean_output``: the dataset-mean output: mean pose, per-pixel mean depth and points.

  Returns:
    ``{name: pred dict}`` with ``[num_test, ...]`` arrays, for :func:`evaluate`.
  """
  pose = _mean_pose(fit["pose_enc"])  # [S, 9]
  valid = np.asarray(fit["valid"], np.float64)
  depth = np.asarray(fit["depth"], np.float64)
  points = np.asarray(fit["points"], np.float64)
  cnt = valid.sum(0)
  overall = (depth * valid).sum() / max(valid.sum(), 1.0)
  mean_depth = np.where(cnt > 0, (depth * valid).sum(0) / np.maximum(cnt, 1.0), overall)
  mean_points = (points * valid[..., None]).sum(0) / np.maximum(cnt, 1.0)[..., None]
  per_view = (depth * valid).sum((0, 2, 3)) / np.maximum(valid.sum((0, 2, 3)), 1.0)  # [S]
  const = np.broadcast_to(per_view[:, None, None], mean_depth.shape).astype(np.float32)
  ext, K = _to_cameras(jnp.asarray(pose), tuple(image_hw))
  const_points = np.asarray(_unproject(jnp.asarray(const), ext, K))
  tile = lambda a: np.broadcast_to(np.asarray(a, np.float32), (num_test,) + np.shape(a))
  return {
    "trivial_mean_pose": {"pose_enc": tile(pose)},
    "trivial_constant_depth": {"depth": tile(const[..., None]), "points": tile(const_points)},
    "trivial_mean_output": {
      "pose_enc": tile(pose),
      "depth": tile(mean_depth[..., None]),
      "points": tile(mean_points),
    },
  }


# Metrics that decide the distillation claim, which way is better, and the margin m each must be
# beaten by (absolute for the [0, 1] scores, relative for the point error). Fixed before any run.
CLAIM_METRICS = (
  ("AUC@30", "higher", 0.05),
  ("depth_delta1.25", "higher", 0.05),
  ("points_overall", "lower", 0.10),
)


def _gain(x, ref, direction):
  """How much better ``x`` is than ``ref`` (absolute for 'higher', relative for 'lower').

  The relative gain is clipped to [-10, 10] (a reference error of ~0 would otherwise give an
  unbounded number; the pass / partly thresholds at 0 and -1 margins are far inside the clip).
  """
  if direction == "higher":
    return x - ref
  return float(np.clip((ref - x) / max(abs(ref), 1e-12), -10.0, 10.0))


def _slack_over_trivial(model_eval: dict, evals: dict, ref: str) -> float:
  """min over CLAIM_METRICS of (gain over the best trivial predictor) / m - 1 (>= 0: beaten by m)."""
  out = []
  for k, direction, m in CLAIM_METRICS:
    triv = [e[ref][k] for n, e in evals.items() if n.startswith("trivial_") and k in e.get(ref, {})]
    if not triv or k not in model_eval[ref]:
      return float("nan")
    best = max(triv) if direction == "higher" else min(triv)
    out.append(_gain(model_eval[ref][k], best, direction) / m - 1.0)
  return float(min(out))


def _mean_gain(a: dict, b: dict) -> float:
  """Mean over :data:`CLAIM_METRICS` of the gain of ``a`` over ``b`` in units of the margins."""
  return float(np.mean([_gain(a[k], b[k], d) / m for k, d, m in CLAIM_METRICS]))


def derived_metrics(evals: dict, extrapolation: dict | None = None, num_views: int = 0) -> dict:
  """Per-seed quantities that decide the claims (slacks in units of the stated margins).

  For each model with ``vs_gt`` (and ``vs_teacher``) rows: ``.../over_trivial_vs_gt`` (and
  ``_vs_teacher``) = min over :data:`CLAIM_METRICS` of (gain over the best trivial predictor
  against that reference) / m − 1, so >= 0 means every metric beats every trivial predictor by at
  least its margin. For distilled students: ``.../vs_teacher_gap`` = min over the metrics of (gain
  of the student over the teacher, both against GT) / m + 1 (>= 0: within one margin of the
  teacher or better), and ``.../distill_score`` = the min of the three (the claim's metric).

  Paired comparisons (same seed, same test scenes, against GT): ``distill_vs_gt`` = mean gain of
  the Procrustes + reprojection student over the GT-trained student, in margins;
  ``ssm_vs_attention_gt`` = min gain of the GT-trained SSM over the GT-trained attention model / m
  + 1; ``geometry_minus_regression_AUC`` = AUC@30 difference of the two distilled students.
  With ``extrapolation``: ``.../extrap_retained_<S'>`` = min over AUC@30 and δ<1.25 of the value
  at ``S'`` views divided by the value at the training ``num_views``.
  """
  d = {}
  for name, ev in evals.items():
    if name.startswith("trivial_"):
      continue
    d[f"derived/{name}/over_trivial_vs_gt"] = _slack_over_trivial(ev, evals, "vs_gt")
    if "vs_teacher" in ev:
      d[f"derived/{name}/over_trivial_vs_teacher"] = _slack_over_trivial(ev, evals, "vs_teacher")
    if name.startswith("student_") and "teacher_T1" in evals and "vs_teacher" in ev:
      t = evals["teacher_T1"]["vs_gt"]
      gap = min(_gain(ev["vs_gt"][k], t[k], dr) / m + 1.0 for k, dr, m in CLAIM_METRICS)
      d[f"derived/{name}/vs_teacher_gap"] = float(gap)
      parts = [gap, d[f"derived/{name}/over_trivial_vs_gt"]]
      parts.append(d[f"derived/{name}/over_trivial_vs_teacher"])
      d[f"derived/{name}/distill_score"] = float(min(parts))
  g = lambda n: evals.get(f"student_{n}", {}).get("vs_gt")
  if g("reprojection") and g("gt"):
    d["derived/distill_vs_gt"] = _mean_gain(g("reprojection"), g("gt"))
  if g("gt") and g("attention_gt"):
    d["derived/ssm_vs_attention_gt"] = float(
      min(_gain(g("gt")[k], g("attention_gt")[k], dr) / m + 1.0 for k, dr, m in CLAIM_METRICS)
    )
  if g("reprojection") and g("regression"):
    d["derived/geometry_minus_regression_AUC"] = (
      g("reprojection")["AUC@30"] - g("regression")["AUC@30"]
    )
  for name, per_s in (extrapolation or {}).items():
    base = evals[name]["vs_gt"]
    for s_views, ev in per_s.items():
      d[f"derived/{name}/extrap_retained_{s_views}"] = float(
        min(ev[k] / max(base[k], 1e-12) for k in ("AUC@30", "depth_delta1.25"))
      )
  return d


def _model_for(var, config, scfg, seed):
  """The model a variant trains: the SSM student, or the attention model of ``config.attention``.

  The attention model takes the student's input normalisation (``scfg.pixel_mean`` / ``_std``).
  """
  if var["arch"] == "ssm":
    return fs.FlashSSM3D(scfg, rngs=nnx.Rngs(seed + 1))
  ac, sc = config.attention, config.student
  acfg = fs.TeacherConfig(
    width=ac.width,
    depth=ac.depth,
    heads=ac.heads,
    patch=sc.patch,
    registers=sc.registers,
    image_size=config.data.image_size,
    mlp_ratio=sc.mlp_ratio,
    camera_stages=sc.camera_stages,
    pixel_mean=scfg.pixel_mean,
    pixel_std=scfg.pixel_std,
  )
  return fs.AATeacher(acfg, rngs=nnx.Rngs(seed + 1))


def run_seed(config, seed: int, workdir) -> dict:
  """One seed of the whole pipeline (data, teacher, students, evaluation); JSON-able dict.

  Returns ``{"data", "teacher", "students", "eval", "extrapolation", "histories"}``: ``eval`` maps
  model name -> ``{"vs_gt": metrics[, "vs_teacher": metrics]}`` (trivial predictors included),
  ``extrapolation`` maps model name -> ``{str(S'): metrics vs GT}`` on test scenes with more
  views than the models were trained on (procedural data only).
  """
  config = config.copy_and_resolve_references()
  config.seed = int(seed)
  workdir = pathlib.Path(workdir)
  workdir.mkdir(parents=True, exist_ok=True)
  dc = config.data
  hw = (dc.image_size, dc.image_size)
  sharding = batch_sharding(config)

  # ---- data: training pool (teacher), 25% subset (student), disjoint test scenes
  pool, test, pool_names = load_data(config)
  norm = pixel_norm(config, pool["images"])  # fitted on the teacher's training pool
  n_pool = len(pool["images"])
  n_student = max(1, int(round(dc.student_fraction * n_pool)))
  sub = {k: v[:n_student] for k, v in pool.items()}

  # ---- teacher: T1 trained here on GT, or predictions cached on disk (e.g. from VGGT)
  tc = config.teacher
  cached = tc.get("cached_predictions", "")
  teacher_test = None
  tfwd = None
  if cached:
    teacher_flops = float(tc.get("train_flops", 0.0))
    if not teacher_flops > 0:
      raise ValueError(
        "teacher.train_flops (the cached teacher's training FLOPs) must be > 0: it sets the "
        "student's FLOP budget"
      )
    names = pool_names[:n_student] if pool_names is not None else None
    t_targets = fs.load_teacher_predictions(cached, scene_names=names, image_hw=hw)
    if len(t_targets.pose_enc) < n_student:
      raise ValueError(
        f"{cached} has {len(t_targets.pose_enc)} scenes, the student needs {n_student}"
      )
    t_targets = fs.DistillTargets(*(np.asarray(a)[:n_student] for a in t_targets))
    tp = t_targets._asdict()
    teacher_infer_flops = float(tc.get("infer_flops_per_scene", 0.0)) * n_student
    if tc.get("cached_test_predictions", ""):
      tt = fs.load_teacher_predictions(tc.cached_test_predictions, image_hw=hw)
      teacher_test = {k: np.asarray(v) for k, v in tt._asdict().items()}
    teacher_info = {"cached_predictions": str(cached), "train_flops": teacher_flops}
    thist = []
  else:
    tcfg = fs.TeacherConfig(
      width=tc.width,
      depth=tc.depth,
      heads=tc.heads,
      patch=tc.patch,
      registers=tc.registers,
      image_size=dc.image_size,
      mlp_ratio=tc.mlp_ratio,
      camera_stages=tc.camera_stages,
      **norm,
    )
    teacher = fs.AATeacher(tcfg, rngs=nnx.Rngs(config.seed))
    tstate = core.TrainState.create(teacher, _optimizer(tc, tc.steps))
    tstep = make_step(_weights(config.loss, False, False))
    t_batch = _batch_fn(
      (pool["images"], gt_targets(pool)), n_pool, tc.batch_size, config.seed, sharding
    )
    t0 = time.perf_counter()
    tstep_c, teacher_step_flops = compile_step(tstep, tstate, t_batch(0))
    tstate, thist = core.train_loop(
      tstate,
      tstep_c,
      t_batch,
      num_steps=tc.steps,
      workdir=workdir / "teacher",
      checkpoint_every=config.checkpoint_every,
      log_every=config.log_every,
      desc="teacher",
    )
    teacher = tstate.model()
    teacher_flops = teacher_step_flops * tc.steps
    teacher_info = {
      "params": fs.count_params(teacher),
      "steps": tc.steps,
      "train_time_s": time.perf_counter() - t0,
      "train_flops": teacher_flops,
      "final_loss": thist[-1].get("train/total") if thist else None,
    }
    # teacher outputs on the student's subset (their FLOPs count in the student's budget)
    tfwd = Forward(teacher, batch_size=dc.eval_batch, sharding=sharding)
    tp = tfwd(sub["images"])
    t_targets = fs.DistillTargets(
      pose_enc=tp["pose_enc"],
      depth=tp["depth"],
      depth_conf=tp["depth_conf"],
      points=tp["points"],
      point_conf=tp["point_conf"],
      valid=sub["valid"],
    )
    teacher_infer_flops = tfwd.flops(sub["images"]) / dc.eval_batch * n_student
    teacher_test = tfwd(test["images"])

  # ---- students
  sc = config.student
  scfg = student_config(config, **norm)
  results = {
    "data": {
      "source": dc.get("source", "procedural"),
      "pool_scenes": n_pool,
      "student_scenes": n_student,
      "test_scenes": len(test["images"]),
      "views": dc.num_views,
      "image_size": dc.image_size,
      "split": dc.split,
      "pixel_norm": {k: list(v) for k, v in norm.items()},
    },
    "teacher": teacher_info,
  }
  evals = {}
  if teacher_test is not None:
    evals["teacher_T1"] = {"vs_gt": evaluate(teacher_test, test, hw)}
  # Trivial, input-independent predictors, fitted on what the students are trained on: the GT of
  # the student's scenes (scored against GT) and the teacher's outputs on them (scored against
  # the teacher).
  teacher_fit = {
    "pose_enc": tp["pose_enc"],
    "depth": tp["depth"][..., 0],
    "points": tp["points"],
    "valid": np.ones(tp["depth"].shape[:-1], bool),
  }
  n_test = len(test["images"])
  triv_gt = trivial_predictors(sub, n_test, hw)
  triv_t = trivial_predictors(teacher_fit, n_test, hw)
  for name in triv_gt:
    evals[name] = {"vs_gt": evaluate(triv_gt[name], test, hw)}
    if teacher_test is not None:
      evals[name]["vs_teacher"] = evaluate(triv_t[name], teacher_test, hw)
  student_info = {}
  histories = {"teacher": thist}
  forwards = {} if tfwd is None else {"teacher_T1": tfwd}
  for name in config.variants:
    var = _VARIANTS[name]
    student = _model_for(var, config, scfg, config.seed)
    w = _weights(config.loss, var["procrustes"], var["reprojection"])
    sstep = make_step(w)
    targets = t_targets if var["targets"] == "teacher" else gt_targets(sub)
    s_batch = _batch_fn(
      (sub["images"], targets), n_student, sc.batch_size, config.seed + 7, sharding
    )
    # FLOPs per step from the traced (uncompiled) step: the step count, and hence the
    # learning-rate schedule compiled into the real step, depends on it. With a fixed step count
    # (min_steps == max_steps) the real step is traced once and counted and compiled from that.
    probe = core.TrainState.create(student, _optimizer(sc, sc.max_steps))
    traced = jax.jit(sstep, donate_argnums=0).trace(probe, s_batch(0))
    sflops, sflops_xla = fs.count_flops(traced, with_xla=True)
    budget = sc.flops_fraction * teacher_flops - (
      teacher_infer_flops if var["targets"] == "teacher" else 0.0
    )
    steps = int(
      np.clip(
        np.floor(budget / sflops) if np.isfinite(sflops) and sflops > 0 else sc.min_steps,
        sc.min_steps,
        sc.max_steps,
      )
    )
    t0 = time.perf_counter()
    if steps == sc.max_steps:  # the probe's schedule is the real one
      sstate, sstep_c = probe, traced.lower().compile()
    else:
      sstate = core.TrainState.create(student, _optimizer(sc, steps))
      sstep_c, _ = compile_step(sstep, sstate, s_batch(0), count=False)  # counted above
    sstate, shist = core.train_loop(
      sstate,
      sstep_c,
      s_batch,
      num_steps=steps,
      workdir=workdir / f"student_{name}",
      checkpoint_every=config.checkpoint_every,
      log_every=config.log_every,
      desc=f"student[{name}]",
    )
    histories[name] = shist
    student = sstate.model()
    used = sflops * steps + (teacher_infer_flops if var["targets"] == "teacher" else 0.0)
    student_info[name] = {
      "params": fs.count_params(student),
      "steps": steps,
      "step_flops": sflops,
      "step_flops_xla_scan_once": sflops_xla,
      "train_time_s": time.perf_counter() - t0,
      "flops_vs_teacher": used / teacher_flops,
      "scenes_vs_teacher": n_student / n_pool,
    }
    sfwd = Forward(student, batch_size=dc.eval_batch, sharding=sharding)
    sp = sfwd(test["images"])
    evals[f"student_{name}"] = {"vs_gt": evaluate(sp, test, hw)}
    if teacher_test is not None:
      evals[f"student_{name}"]["vs_teacher"] = evaluate(sp, teacher_test, hw)
    forwards[f"student_{name}"] = sfwd
  results["students"] = student_info
  results["eval"] = evals

  # ---- view extrapolation (E3): every model on test scenes with k times the training views
  extrap = {}
  if dc.get("source", "procedural") == "procedural":
    for k in config.get("extrapolation_factors", ()):
      ecfg = dc.copy_and_resolve_references()
      ecfg.num_views = int(k * dc.num_views)
      n_ext = config.get("extrapolation_scenes", dc.test_scenes)
      ext_test = render_set(
        900_000 + 1000 * config.seed, n_ext, ecfg, chunk=min(dc.render_chunk, n_ext)
      )
      for mname, fwd in forwards.items():
        extrap.setdefault(mname, {})[str(ecfg.num_views)] = evaluate(
          fwd(ext_test["images"]), ext_test, hw
        )
  results["extrapolation"] = extrap
  results["histories"] = histories
  return results


# Global scan orders of the scan-order ablation: the order of block i is orders[i % len(orders)]
SCAN_ORDERS = {
  "alternating": ("frame_major", "position_major"),
  "frame_major": ("frame_major",),
  "position_major": ("position_major",),
}


def run_scan_order_seed(config, seed: int, workdir) -> dict:
  """One seed of the scan-order ablation (E2's scan-order arm) **[reconstruction]**.

  The same SSM student (same initial parameters, same batches; the scan order has no
  parameters) is trained on ground truth with each global scan order of ``config.scan_orders``
  (keys of :data:`SCAN_ORDERS`) for ``student.max_steps`` steps and evaluated on the test scenes
  against ground truth, beside the input-independent predictors fitted on the training scenes.
  No teacher is trained: the order is a property of the architecture, so the ablation runs from
  ground truth, where the paired differences are not mixed with the teacher's errors.

  Returns:
    ``{"data", "students", "eval", "histories"}`` as in :func:`run_seed`.
  """
  import dataclasses

  config = config.copy_and_resolve_references()
  config.seed = int(seed)
  workdir = pathlib.Path(workdir)
  workdir.mkdir(parents=True, exist_ok=True)
  dc, sc = config.data, config.student
  hw = (dc.image_size, dc.image_size)
  pool, test, _ = load_data(config)
  n_train = max(1, int(round(dc.student_fraction * len(pool["images"]))))
  sub = {k: v[:n_train] for k, v in pool.items()}
  n_test = len(test["images"])
  evals = {
    name: {"vs_gt": evaluate(pred, test, hw)}
    for name, pred in trivial_predictors(sub, n_test, hw).items()
  }
  step = make_step(_weights(config.loss, False, False))
  batches = _batch_fn((sub["images"], gt_targets(sub)), n_train, sc.batch_size, config.seed + 7)
  info, histories = {}, {}
  for name in config.scan_orders:
    core.validate_choice(name, name="scan_orders", allowed=tuple(SCAN_ORDERS))
    scfg = dataclasses.replace(
      student_config(config, **pixel_norm(config, sub["images"])), global_orders=SCAN_ORDERS[name]
    )
    model = fs.FlashSSM3D(scfg, rngs=nnx.Rngs(config.seed + 1))
    state = core.TrainState.create(model, _optimizer(sc, sc.max_steps))
    t0 = time.perf_counter()
    compiled, flops = compile_step(step, state, batches(0))
    state, hist = core.train_loop(
      state,
      compiled,
      batches,
      num_steps=sc.max_steps,
      workdir=workdir / f"student_{name}",
      checkpoint_every=config.checkpoint_every,
      log_every=config.log_every,
      desc=f"student[{name}]",
    )
    histories[name] = hist
    info[name] = {
      "params": fs.count_params(model),
      "steps": sc.max_steps,
      "step_flops": flops,
      "train_time_s": time.perf_counter() - t0,
      "global_orders": list(SCAN_ORDERS[name]),
    }
    fwd = Forward(state.model(), batch_size=dc.eval_batch)
    evals[f"student_{name}"] = {"vs_gt": evaluate(fwd(test["images"]), test, hw)}
  data = {"train_scenes": n_train, "test_scenes": n_test, "views": dc.num_views, "split": dc.split}
  return {"data": data, "students": info, "eval": evals, "histories": histories}


def scan_order_derived(evals: dict) -> dict:
  """Per-seed quantities of the scan-order ablation (units of the margins of CLAIM_METRICS).

  ``derived/student_<order>/over_trivial_vs_gt`` as in :func:`derived_metrics`;
  ``derived/alternating_vs_<order>`` = mean gain of the alternating order over a single order
  (against ground truth, same seed and test scenes); ``derived/alternating_vs_best_single`` =
  the smaller of the two.
  """
  d = {}
  for name, ev in evals.items():
    if name.startswith("student_"):
      d[f"derived/{name}/over_trivial_vs_gt"] = _slack_over_trivial(ev, evals, "vs_gt")
  alt = evals.get("student_alternating", {}).get("vs_gt")
  vs = []
  for single in ("frame_major", "position_major"):
    other = evals.get(f"student_{single}", {}).get("vs_gt")
    if alt and other:
      d[f"derived/alternating_vs_{single}"] = _mean_gain(alt, other)
      vs.append(d[f"derived/alternating_vs_{single}"])
  if len(vs) == 2:
    d["derived/alternating_vs_best_single"] = float(min(vs))
  return d


def scan_order_and_evaluate(config, workdir) -> dict:
  """Every seed of :func:`run_scan_order_seed` (resumable per seed), aggregated and written."""
  t_start = time.perf_counter()
  workdir = pathlib.Path(workdir)
  workdir.mkdir(parents=True, exist_ok=True)
  store = core.CellStore(workdir / "seeds")
  runs = {
    seed: store.get_or_compute(
      f"seed{seed}", lambda _, s=seed: run_scan_order_seed(config, s, workdir / f"seed{s}")
    )
    for seed in _seed_list(config)
  }
  per_seed = {}
  for seed, r in runs.items():
    flat = {
      f"{model}/{ref}/{k}": v
      for model, ev in r["eval"].items()
      for ref, vals in ev.items()
      for k, v in vals.items()
    }
    flat.update(scan_order_derived(r["eval"]))
    per_seed[seed] = flat
  metrics = _aggregate(list(per_seed.values()))
  first = runs[min(runs)]
  models = [m for m in first["eval"] if m.startswith("trivial_")] + [
    f"student_{n}" for n in config.scan_orders
  ]
  rows = [[m] + [_pm(metrics, f"{m}/vs_gt/{c}") for c in _COLS] for m in models]
  parts = [core.markdown_table(["model (vs ground truth)"] + list(_COLS), rows)]
  drows = [
    [k[len("derived/") :], _pm(metrics, k, "+.2f")]
    for k in metrics
    if k.startswith("derived/") and not k.endswith(("/ci95", "/std"))
  ]
  parts.append(core.markdown_table(["derived (margins; per seed, then mean)", "value"], drows))
  table = "\n\n".join(parts)
  core.save_figure(_loss_plot(first["histories"]), workdir, "training_loss")
  core.write_results(
    workdir,
    metrics=metrics,
    config=config,
    table_markdown=table,
    notes="Scan-order ablation on the synthetic procedural proxy (split "
    + str(config.data.split)
    + "), students trained on ground truth, CPU scale. Means over "
    f"{len(runs)} seed(s) with 95% CI half-widths.",
    wall_time_s=time.perf_counter() - t_start,
    extra={
      "per_seed": {str(k): v for k, v in per_seed.items()},
      "students": first["students"],
      "data": first["data"],
    },
  )
  return {"metrics": metrics, "table_markdown": table, "runs": runs}


def _seed_list(config):
  return [int(config.seed) + i for i in range(int(config.get("seeds", 1)))]


def seeds_from_results(path, seeds, num_views: int) -> tuple[dict, dict]:
  """Per-seed metrics of ``seeds`` read from an earlier ``results.json`` of this experiment.

  A finished run keeps every seed's metrics in ``extra.per_seed`` (what :func:`_flat_metrics`
  returned for it, plus its derived quantities). Seeds found there are returned as
  ``{seed: flat metrics}`` with the derived quantities recomputed by :func:`derived_metrics` from
  the seed's own ``vs_gt`` / ``vs_teacher`` / ``views<S'>`` metrics (so they follow this code's
  rule, not the file's); seeds absent from the file are left out. Also returns the file's
  provenance (``path``, ``command``, ``git``, ``seeds`` taken).
  """
  data = json.loads(pathlib.Path(path).read_text())
  per_seed = data.get("extra", {}).get("per_seed")
  if not isinstance(per_seed, dict):
    raise ValueError(f"seeds_from={path!r}: no extra.per_seed in that results.json")
  out = {}
  for seed in seeds:
    if str(seed) not in per_seed:
      continue
    flat = {k: v for k, v in per_seed[str(seed)].items() if not k.startswith("derived/")}
    evals, extrap = {}, {}
    for k, v in flat.items():
      parts = k.split("/")
      if len(parts) != 3:
        continue
      model, ref, metric = parts
      if ref in ("vs_gt", "vs_teacher"):
        evals.setdefault(model, {}).setdefault(ref, {})[metric] = v
      elif ref.startswith("views"):
        extrap.setdefault(model, {}).setdefault(ref[len("views") :], {})[metric] = v
    flat.update(derived_metrics(evals, extrap, num_views))
    out[int(seed)] = flat
  prov = {
    "path": str(path),
    "command": data.get("command"),
    "git": data.get("git"),
    "seeds": sorted(out),
  }
  return out, prov


def train_and_evaluate(config, workdir) -> dict:
  """Every seed of :func:`run_seed` (resumable per seed), aggregated over seeds, and written.

  With ``config.experiment == "scan_order"`` the scan-order ablation
  (:func:`scan_order_and_evaluate`) instead.

  Metrics are the means over seeds; ``<metric>/ci95`` is the 95% t-interval half-width of the
  mean and ``<metric>/std`` the sample std (with >= 2 seeds). Derived metrics (slacks, paired
  differences, extrapolation retention) are computed per seed first, then aggregated.

  ``config.seeds_from`` (a path to an earlier ``results.json`` of this experiment, e.g. the
  committed one) supplies the per-seed metrics of seeds whose cell is not in this workdir (see
  :func:`seeds_from_results`): extending a finished run with more seeds does not recompute its
  seeds. Which seeds came from where is recorded in ``extra.seeds_from``; the tables, plots and
  the teacher / student info come from the seeds computed here.
  """
  if config.get("experiment", "distillation") == "scan_order":
    return scan_order_and_evaluate(config, workdir)
  t_start = time.perf_counter()
  core.validate_seeds(config.get("seeds", 1), name="seeds")
  workdir = pathlib.Path(workdir)
  workdir.mkdir(parents=True, exist_ok=True)
  for v in config.variants:
    core.validate_choice(v, name="variants", allowed=tuple(_VARIANTS))
  store = core.CellStore(workdir / "seeds")
  seeds = _seed_list(config)
  imported, provenance = {}, None
  if config.get("seeds_from", ""):
    missing = [s for s in seeds if f"seed{s}" not in store]
    imported, provenance = seeds_from_results(config.seeds_from, missing, config.data.num_views)
  runs = {}
  for seed in seeds:
    if seed not in imported:
      runs[seed] = store.get_or_compute(
        f"seed{seed}", lambda _, s=seed: run_seed(config, s, workdir / f"seed{s}")
      )
  if not runs:
    raise ValueError("at least one seed must be computed here (all were in config.seeds_from)")
  first = runs[min(runs)]
  per_seed = {}
  for seed in seeds:
    if seed in imported:
      per_seed[seed] = imported[seed]
      continue
    r = runs[seed]
    flat = _flat_metrics(r)
    flat.update(derived_metrics(r["eval"], r.get("extrapolation", {}), config.data.num_views))
    per_seed[seed] = flat
  metrics = _aggregate(list(per_seed.values()))
  results = {
    "data": first["data"],
    "teacher": first["teacher"],
    "students": first["students"],
    "seeds": seeds,
    "per_seed": {str(k): v for k, v in per_seed.items()},
  }
  if config.scaling.enabled:
    # resumable: a finished sweep (e.g. from python -m experiments.flashssm3d.scaling --workdir=<workdir>
    # with the same settings) is reused
    res = scaling.cached_scaling(config.scaling, workdir)
    results["scaling"] = res
    core.save_figure(scaling.plot_scaling(res), workdir, "scaling")
    for name in ("student_ssm", "teacher_attention"):
      r = res[name]
      for k in ("time_exponent", "memory_exponent", "views_in_10s_measured", "views_in_10s_fit"):
        metrics[f"scaling/{name}/{k}"] = r[k]
  core.save_figure(_loss_plot(first["histories"]), workdir, "training_loss")
  if first.get("extrapolation"):
    core.save_figure(_extrap_plot(metrics, first, config.data.num_views), workdir, "extrapolation")
  table = _table(results, metrics)
  core.write_results(
    workdir,
    metrics=metrics,
    config=config,
    table_markdown=table,
    notes="Synthetic procedural proxy (split "
    + str(config.data.split)
    + "), CPU scale; not comparable with VGGT's CO3D/RealEstate10K numbers. Means over "
    f"{len(seeds)} seed(s) with 95% CI half-widths"
    + (
      f" (seeds {sorted(imported)} read from an earlier run's per-seed metrics, see "
      "extra.seeds_from; the tables' model info and the plots' curves are from seed "
      f"{min(runs)})"
      if imported
      else ""
    )
    + ". Timings are on shared CPU cores (noisy).",
    wall_time_s=time.perf_counter() - t_start,
    extra={
      "per_seed": results["per_seed"],
      "teacher": results["teacher"],
      "students": results["students"],
      "seeds_computed": sorted(runs),
      "seeds_from": provenance if imported else None,
    },
  )
  results["metrics"] = metrics
  results["table_markdown"] = table
  return results


def _aggregate(flats: list[dict]) -> dict:
  """Mean over seeds of every metric, with ``/ci95`` and ``/std`` beside it (>= 2 seeds)."""
  out = {}
  for k in flats[0]:
    vals = np.array([f.get(k, np.nan) for f in flats], np.float64)
    out[k] = float(np.mean(vals))
    if len(vals) >= 2:
      out[f"{k}/ci95"] = float(core.ci95_halfwidth(vals))
      out[f"{k}/std"] = float(np.std(vals, ddof=1))
  return out


def _loss_plot(histories):
  import matplotlib

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  fig, ax = plt.subplots(figsize=(6, 4))
  for name, h in histories.items():
    st = [r["step"] for r in h if "train/total" in r]
    ax.plot(st, [r["train/total"] for r in h if "train/total" in r], label=name)
  ax.set(
    xlabel="step",
    ylabel="training loss",
    yscale="log",
    title="teacher (GT) and student (distillation) losses",
  )
  ax.legend(fontsize=8)
  return fig


def _flat_metrics(results) -> dict:
  """One seed's metrics as ``{model/ref/metric: value}`` plus step and FLOP counts."""
  m = {}
  for model, ev in results["eval"].items():
    for ref, vals in ev.items():
      for k, v in vals.items():
        m[f"{model}/{ref}/{k}"] = v
  for model, per_s in results.get("extrapolation", {}).items():
    for s_views, vals in per_s.items():
      for k, v in vals.items():
        m[f"{model}/views{s_views}/{k}"] = v
  for name, info in results["students"].items():
    m[f"student_{name}/flops_vs_teacher"] = info["flops_vs_teacher"]
    m[f"student_{name}/steps"] = info["steps"]
  if "steps" in results["teacher"]:
    m["teacher/steps"] = results["teacher"]["steps"]
  return m


_COLS = (
  "AUC@30",
  "RRA@15",
  "RTA@15",
  "ATE",
  "depth_AbsRel",
  "depth_delta1.25",
  "points_overall",
  "points_overall_depthcam",
)


def _pm(metrics, key, fmt=".3f"):
  """``mean ± ci95`` of a metric, ``–`` when absent."""
  if key not in metrics or not np.isfinite(metrics[key]):
    return "–"
  ci = metrics.get(f"{key}/ci95")
  out = format(metrics[key], fmt)
  return out if ci is None or not np.isfinite(ci) else f"{out} ± {format(ci, fmt).lstrip('+')}"


def _table(results, metrics) -> str:
  """Markdown tables of the aggregated metrics (means ± 95% CI over seeds)."""
  pairs = []
  for k in metrics:
    p = k.split("/")
    if len(p) == 3 and p[1] in ("vs_gt", "vs_teacher") and (p[0], p[1]) not in pairs:
      pairs.append((p[0], p[1]))
  order = sorted(pairs, key=lambda mr: (mr[1], not mr[0].startswith("trivial_"), mr[0]))
  rows = [[m, r] + [_pm(metrics, f"{m}/{r}/{c}") for c in _COLS] for m, r in order]
  parts = [core.markdown_table(["model", "ref"] + list(_COLS), rows)]
  slack_cols = ("over_trivial_vs_gt", "over_trivial_vs_teacher", "vs_teacher_gap", "distill_score")
  dmodels = []
  for k in metrics:
    p = k.split("/")
    if p[0] == "derived" and len(p) == 3 and p[2] in slack_cols and p[1] not in dmodels:
      dmodels.append(p[1])
  parts.append(
    "Slacks in units of the stated margins ("
    + ", ".join(f"{k} {m:g}{' relative' if d == 'lower' else ''}" for k, d, m in CLAIM_METRICS)
    + "); >= 0 passes.\n\n"
    + core.markdown_table(
      ["model"] + list(slack_cols),
      [[m] + [_pm(metrics, f"derived/{m}/{c}", "+.2f") for c in slack_cols] for m in dmodels],
    )
  )
  paired = [
    ("distill_vs_gt", "Procrustes+reprojection student vs GT-trained student (mean gain, margins)"),
    ("ssm_vs_attention_gt", "GT-trained SSM vs GT-trained attention, same FLOPs (min gain + 1)"),
    ("geometry_minus_regression_AUC", "AUC@30: Procrustes+reprojection minus regression"),
  ]
  rows = [
    [desc, _pm(metrics, f"derived/{k}", "+.3f")] for k, desc in paired if f"derived/{k}" in metrics
  ]
  if rows:
    parts.append(core.markdown_table(["paired comparison (per seed, then mean)", "value"], rows))
  ext = sorted({k.split("/")[1] for k in metrics if "/views" in k and k.endswith("/AUC@30")})
  if ext:
    emodels = sorted({k.split("/")[0] for k in metrics if "/views" in k and k.endswith("/AUC@30")})
    rows = []
    for m in emodels:
      for v in ext:
        rows.append(
          [m, v[len("views") :]]
          + [_pm(metrics, f"{m}/{v}/{c}") for c in ("AUC@30", "depth_delta1.25", "points_overall")]
          + [_pm(metrics, f"derived/{m}/extrap_retained_{v[len('views') :]}")]
        )
    parts.append(
      "View extrapolation (trained on "
      + str(results["data"]["views"])
      + " views; against ground truth):\n\n"
      + core.markdown_table(
        ["model", "views", "AUC@30", "depth_delta1.25", "points_overall", "retained (min ratio)"],
        rows,
      )
    )
  parts.append(
    core.markdown_table(
      ["model", "params", "steps", "FLOPs / teacher training", "scenes / teacher's"],
      [
        [
          "teacher_T1",
          results["teacher"].get("params", "–"),
          results["teacher"].get("steps", "–"),
          "1",
          "1",
        ]
      ]
      + [
        [
          f"student_{name}",
          info["params"],
          info["steps"],
          f"{info['flops_vs_teacher']:.3f}",
          f"{info['scenes_vs_teacher']:.2f}",
        ]
        for name, info in results["students"].items()
      ],
    )
  )
  if "scaling" in results:
    sc = results["scaling"]
    rows = []
    for name in ("student_ssm", "teacher_attention"):
      r = sc[name]
      times = ["–" if not np.isfinite(t) else f"{t * 1e3:.0f} ms" for t in r["time_s"]]
      mems = ["–" if not np.isfinite(t) else f"{t:.0f} MiB" for t in r["memory_mib"]]
      rows.append(
        [f"{name} time"]
        + times
        + [
          f"{r['time_exponent']:.2f}",
          f"{r['views_in_10s_measured']} / {r['views_in_10s_fit']:.0f}",
        ]
      )
      rows.append([f"{name} memory"] + mems + [f"{r['memory_exponent']:.2f}", ""])
    head = ["views"] + [str(v) for v in sc["views"]]
    parts.append(
      core.markdown_table(head + ["time exponent", "views in 10 s (measured / fit)"], rows)
    )
  return "\n\n".join(parts)


def _extrap_plot(metrics, first, num_views):
  import matplotlib

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
  for model, per_s in first["extrapolation"].items():
    views = [num_views] + sorted(int(v) for v in per_s)
    for ax, k in zip(axes, ("AUC@30", "depth_delta1.25")):
      keys = [f"{model}/vs_gt/{k}"] + [f"{model}/views{v}/{k}" for v in views[1:]]
      ys = [metrics[q] for q in keys]
      es = [metrics.get(f"{q}/ci95", 0.0) for q in keys]
      ax.errorbar(views, ys, yerr=es, marker="o", capsize=3, label=model)
      ax.set(xscale="log", xlabel="views at test time", ylabel=k + " (vs GT)")
  axes[0].legend(fontsize=7)
  fig.suptitle(f"view extrapolation (trained on {num_views} views; mean ± 95% CI over seeds)")
  fig.tight_layout()
  return fig
