"""FlashSSM-3D reproduction on procedural scenes (a synthetic proxy; see README.md).

Pipeline: render a training pool and a disjoint test set; train the alternating-attention teacher
on ground truth (T1); precompute its outputs on the student's 25% subset; distil students with
(a) regression, (b) + Procrustes, (c) + Procrustes + reprojection, and a GT-trained student at the
same budget; evaluate all against GT and the teacher; run the view-scaling study.
"""

from __future__ import annotations

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
  "regression": dict(procrustes=False, reprojection=False, targets="teacher"),
  "procrustes": dict(procrustes=True, reprojection=False, targets="teacher"),
  "reprojection": dict(procrustes=True, reprojection=True, targets="teacher"),
  "gt": dict(procrustes=False, reprojection=False, targets="gt"),
}


def _np_batch(b: fs.SceneBatch) -> dict:
  return {
    "images": np.asarray(b.images),
    "depth": np.asarray(b.depth),
    "points": np.asarray(b.points),
    "valid": np.asarray(b.valid),
    "extrinsics": np.asarray(b.extrinsics),
    "intrinsics": np.asarray(b.intrinsics),
    "pose_enc": np.asarray(b.pose_enc),
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


def _flops(compiled) -> float:
  try:
    ca = compiled.cost_analysis()
    if isinstance(ca, (list, tuple)):
      ca = ca[0]
    return float(ca.get("flops", float("nan")))
  except Exception:  # pragma: no cover - backend without cost analysis
    return float("nan")


def compile_step(step_fn, state, batch):
  """AOT-compile a train step once; returns ``(compiled, flops per step)``."""
  compiled = jax.jit(step_fn, donate_argnums=0).lower(state, batch).compile()
  return compiled, _flops(compiled)


_to_cameras = jax.jit(fs.pose_encoding_to_cameras, static_argnums=1)
_unproject = jax.jit(fs.unproject_depth)


def _batch_fn(data_targets, n_avail, batch_size, seed):
  images, targets = data_targets

  def fn(step):
    idx = np.random.default_rng((seed, step)).choice(
      n_avail, batch_size, replace=n_avail < batch_size
    )
    return jnp.asarray(images[idx]), jax.tree.map(lambda a: jnp.asarray(a[idx]), targets)

  return fn


class Forward:
  """A model's jitted forward pass, compiled once for a fixed batch size (the last batch is padded)."""

  def __init__(self, model, batch_size=8):
    graphdef, self.state = nnx.split(model)
    self.fn = jax.jit(lambda s, x: nnx.merge(graphdef, s)(x))
    self.batch_size = batch_size

  def flops(self, images) -> float:
    """FLOPs of one forward over ``batch_size`` scenes (from the lowered computation)."""
    x = jnp.asarray(images[:1]).repeat(self.batch_size, 0)
    return _flops(self.fn.lower(self.state, x))

  def __call__(self, images) -> dict:
    n, bs = len(images), self.batch_size
    outs = []
    for i in range(0, n, bs):
      x = images[i : i + bs]
      m = len(x)
      if m < bs:
        x = np.concatenate([x, np.repeat(x[-1:], bs - m, 0)])
      out = self.fn(self.state, jnp.asarray(x))._asdict()
      out = {
        k: np.asarray(v)[:, :m] if k == "pose_stages" else np.asarray(v)[:m] for k, v in out.items()
      }
      outs.append(out)
    return {
      k: np.concatenate([o[k] for o in outs], axis=1 if k == "pose_stages" else 0) for k in outs[0]
    }


def evaluate(pred: dict, ref: dict, image_hw) -> dict:
  """All metrics of ``pred`` against a reference (GT dict or teacher predictions)."""
  ext_p, K_p = map(np.asarray, _to_cameras(jnp.asarray(pred["pose_enc"]), tuple(image_hw)))
  if "extrinsics" in ref:
    ext_r, depth_r, pts_r, valid = ref["extrinsics"], ref["depth"], ref["points"], ref["valid"]
  else:
    ext_r = np.asarray(_to_cameras(jnp.asarray(ref["pose_enc"]), tuple(image_hw))[0])
    depth_r, pts_r = ref["depth"][..., 0], ref["points"]
    valid = np.ones(depth_r.shape, bool)
  pts_dc = np.asarray(
    _unproject(jnp.asarray(pred["depth"][..., 0]), jnp.asarray(ext_p), jnp.asarray(K_p))
  )
  rots, trans, ates, dms, pms, dcs = [], [], [], [], [], []
  for b in range(len(ext_p)):
    r, t = fs.relative_pose_errors(ext_p[b], ext_r[b])
    rots.append(r)
    trans.append(t)
    ates.append(fs.ate(ext_p[b], ext_r[b]))
    dms.append(fs.depth_metrics(pred["depth"][b], depth_r[b], valid[b]))
    pms.append(fs.accuracy_completeness(pred["points"][b], pts_r[b], valid[b], max_points=4096))
    dcs.append(fs.accuracy_completeness(pts_dc[b], pts_r[b], valid[b], max_points=4096))
  rot, tr = np.concatenate(rots), np.concatenate(trans)
  out = {
    "AUC@30": fs.pose_auc(rot, tr, 30),
    **{k: v for k, v in fs.rra_rta(rot, tr).items() if "@5" not in k},
    "rot_err_median_deg": float(np.median(rot)),
    "trans_err_median_deg": float(np.median(tr)),
    "ATE": float(np.mean(ates)),
    "depth_AbsRel": float(np.mean([d["abs_rel"] for d in dms])),
    "depth_delta1.25": float(np.mean([d["delta_1.25"] for d in dms])),
    "points_overall": float(np.mean([p["overall"] for p in pms])),
    "points_overall_depthcam": float(np.mean([p["overall"] for p in dcs])),
  }
  return out


def _mean_pose_baseline(train: dict, test: dict, image_hw) -> dict:
  mean_pose = train["pose_enc"].mean(0)
  q = mean_pose[:, 3:7] / np.linalg.norm(mean_pose[:, 3:7], axis=-1, keepdims=True)
  mean_pose = np.concatenate([mean_pose[:, :3], q, mean_pose[:, 7:]], -1)
  n = len(test["images"])
  shape = test["depth"].shape
  pred = {
    "pose_enc": np.broadcast_to(mean_pose, (n,) + mean_pose.shape),
    "depth": np.broadcast_to(train["depth"].mean(0)[..., None], shape + (1,)),
    "points": np.broadcast_to(train["points"].mean(0), shape + (3,)),
  }
  return evaluate(pred, test, image_hw)


def train_and_evaluate(config, workdir) -> dict:
  t_start = time.perf_counter()
  workdir = pathlib.Path(workdir)
  workdir.mkdir(parents=True, exist_ok=True)
  for v in config.variants:
    core.validate_choice(v, name="variants", allowed=tuple(_VARIANTS))
  dc = config.data
  hw = (dc.image_size, dc.image_size)

  # ---- data: training pool (teacher), 25% subset (student), disjoint test seeds
  pool = render_set(10_000 + 1000 * config.seed, dc.pool_scenes, dc, chunk=dc.render_chunk)
  test = render_set(900_000 + 1000 * config.seed, dc.test_scenes, dc, chunk=dc.render_chunk)
  n_student = max(1, int(round(dc.student_fraction * dc.pool_scenes)))

  # ---- teacher (T1) trained on GT
  tc = config.teacher
  tcfg = fs.TeacherConfig(
    width=tc.width,
    depth=tc.depth,
    heads=tc.heads,
    patch=tc.patch,
    registers=tc.registers,
    image_size=dc.image_size,
    mlp_ratio=tc.mlp_ratio,
    camera_stages=tc.camera_stages,
  )
  teacher = fs.AATeacher(tcfg, rngs=nnx.Rngs(config.seed))
  tstate = core.TrainState.create(teacher, _optimizer(tc, tc.steps))
  gt_w = _weights(config.loss, False, False)
  tstep = make_step(gt_w)
  t_batch = _batch_fn(
    (pool["images"], gt_targets(pool)), dc.pool_scenes, tc.batch_size, config.seed
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
  teacher_time = time.perf_counter() - t0
  teacher = tstate.model()
  teacher_flops = teacher_step_flops * tc.steps

  # ---- teacher outputs on the student's subset (counted in the student budget)
  sub = {k: v[:n_student] for k, v in pool.items()}
  tfwd = Forward(teacher, batch_size=dc.eval_batch)
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

  # ---- students
  sc = config.student
  scfg = fs.FlashSSM3DConfig(
    width=sc.width,
    depth=sc.depth,
    state=sc.state,
    expand=sc.expand,
    patch=sc.patch,
    registers=sc.registers,
    image_size=dc.image_size,
    mlp_ratio=sc.mlp_ratio,
    camera_stages=sc.camera_stages,
    method=sc.method,
  )
  results = {
    "data": {
      "pool_scenes": dc.pool_scenes,
      "student_scenes": n_student,
      "test_scenes": dc.test_scenes,
      "views": dc.num_views,
      "image_size": dc.image_size,
      "split": dc.split,
    },
    "teacher": {
      "params": fs.count_params(teacher),
      "steps": tc.steps,
      "train_time_s": teacher_time,
      "train_flops": teacher_flops,
      "final_loss": thist[-1].get("train/total") if thist else None,
    },
  }
  teacher_test = tfwd(test["images"])
  evals = {"teacher_T1": {"vs_gt": evaluate(teacher_test, test, hw)}}
  evals["mean_pose_baseline"] = {"vs_gt": _mean_pose_baseline(pool, test, hw)}
  student_info = {}
  histories = {"teacher": thist}
  for name in config.variants:
    var = _VARIANTS[name]
    student = fs.FlashSSM3D(scfg, rngs=nnx.Rngs(config.seed + 1))
    w = _weights(config.loss, var["procrustes"], var["reprojection"])
    sstep = make_step(w)
    targets = t_targets if var["targets"] == "teacher" else gt_targets(sub)
    s_batch = _batch_fn((sub["images"], targets), n_student, sc.batch_size, config.seed + 7)
    # FLOPs per step from the lowered (uncompiled) step: the step count, and hence the
    # learning-rate schedule compiled into the real step, depends on it.
    probe = core.TrainState.create(student, _optimizer(sc, sc.max_steps))
    sflops = _flops(jax.jit(sstep).lower(probe, s_batch(0)))
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
    sstate = core.TrainState.create(student, _optimizer(sc, steps))
    t0 = time.perf_counter()
    sstep_c, _ = compile_step(sstep, sstate, s_batch(0))
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
      "train_time_s": time.perf_counter() - t0,
      "flops_vs_teacher": used / teacher_flops,
      "scenes_vs_teacher": n_student / dc.pool_scenes,
    }
    sp = Forward(student, batch_size=dc.eval_batch)(test["images"])
    evals[f"student_{name}"] = {
      "vs_gt": evaluate(sp, test, hw),
      "vs_teacher": evaluate(sp, teacher_test, hw),
    }
  results["students"] = student_info
  results["eval"] = evals

  # ---- scaling study
  if config.scaling.enabled:
    # resumable: a finished sweep (e.g. from benchmarks/flashssm3d_scaling.py --out=<workdir>
    # with the same settings) is reused
    res = scaling.cached_scaling(config.scaling, workdir)
    results["scaling"] = res
    core.save_figure(scaling.plot_scaling(res), workdir, "scaling")
  core.save_figure(_loss_plot(histories), workdir, "training_loss")

  table = _table(results)
  metrics = _flat_metrics(results)
  core.write_results(
    workdir,
    metrics=metrics,
    config=config,
    table_markdown=table,
    notes="Synthetic procedural proxy (orbit scenes), CPU scale; not comparable with VGGT's "
    "CO3D/RealEstate10K numbers. Timings are on shared CPU cores (noisy).",
    wall_time_s=time.perf_counter() - t_start,
  )
  results["metrics"] = metrics
  results["table_markdown"] = table
  return results


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
  m = {}
  for model, ev in results["eval"].items():
    for ref, vals in ev.items():
      for k, v in vals.items():
        m[f"{model}/{ref}/{k}"] = v
  for name, info in results["students"].items():
    m[f"student_{name}/flops_vs_teacher"] = info["flops_vs_teacher"]
    m[f"student_{name}/steps"] = info["steps"]
  m["teacher/steps"] = results["teacher"]["steps"]
  if "scaling" in results:
    for name in ("student_ssm", "teacher_attention"):
      r = results["scaling"][name]
      for k in ("time_exponent", "memory_exponent", "views_in_10s_measured", "views_in_10s_fit"):
        m[f"scaling/{name}/{k}"] = r[k]
  return m


def _table(results) -> str:
  cols = [
    "AUC@30",
    "RRA@15",
    "RTA@15",
    "ATE",
    "depth_AbsRel",
    "depth_delta1.25",
    "points_overall",
    "points_overall_depthcam",
  ]
  evals = [
    [model, ref] + [vals[c] for c in cols]
    for model, ev in results["eval"].items()
    for ref, vals in ev.items()
  ]
  parts = [core.markdown_table(["model", "ref"] + cols, evals, fmt=".3f")]
  parts.append(
    core.markdown_table(
      ["student", "steps", "FLOPs / teacher training", "scenes / teacher's"],
      [
        [name, info["steps"], info["flops_vs_teacher"], f"{info['scenes_vs_teacher']:.2f}"]
        for name, info in results["students"].items()
      ],
      fmt=".3f",
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
