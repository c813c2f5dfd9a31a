"""FlashSSM-3D reproduction on procedural scenes (a synthetic proxy; see
README.md).

Per seed (:func:`run_seed`): render a pool and a disjoint test set; train the
attention teacher on ground truth (or read its cached predictions); distil SSM
students on its outputs within a FLOP budget, train a GT student and an
attention model at the same budget; evaluate all against GT, the teacher and
input-independent predictors. ``configs/scan_order.py`` runs the scan-order
ablation (:func:`run_scan_order_seed`); scaling.py the view-scaling study;
evaluate.py the claim code; ``config.report`` the tables and figures. The step,
optimizer, FLOP budget and batches are the library's
(``jaxpapers.flashssm3d.train_step`` and its neighbours).
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import time

import jax
import ml_collections
import numpy as np
from flax import nnx

from experiments.flashssm3d import evaluate as ev
from experiments.flashssm3d import scaling
from experiments.flashssm3d.configs import default as default_config
from experiments.flashssm3d.input_pipeline import (
  batch_sharding,
  load_data,
  pixel_norm,
  render_set,
)
from jaxpapers import core
from jaxpapers import flashssm3d as fs

# Each variant's targets, architecture and geometry terms. "gt": the same SSM
# student trained on ground truth at the same FLOP budget (E2's control);
# "attention_gt": an alternating-attention model of about the student's size
# trained on ground truth at that budget (E1).
_VARIANTS = {
  name: dict(
    targets=targets, arch=arch, procrustes=procrustes, reprojection=reprojection
  )
  for name, targets, arch, procrustes, reprojection in (
    ("regression", "teacher", "ssm", False, False),
    ("procrustes", "teacher", "ssm", True, False),
    ("reprojection", "teacher", "ssm", True, True),
    ("gt", "gt", "ssm", False, False),
    ("attention_gt", "gt", "attention", False, False),
  )
}
# Global scan orders of the scan-order ablation: the order of block i is
# orders[i % len(orders)]
SCAN_ORDERS = {
  "alternating": ("frame_major", "position_major"),
  "frame_major": ("frame_major",),
  "position_major": ("position_major",),
}


def _dataclass(cls, *sections, **values):
  """``cls`` from the fields it declares in the config ``sections`` (earlier
  ones first), then ``values``; fields found nowhere keep their defaults."""
  names = [f.name for f in dataclasses.fields(cls)]
  picked = {k: sec[k] for sec in reversed(sections) for k in names if k in sec}
  return cls(**{**picked, **values})


def student_config(config, **norm) -> fs.FlashSSM3DConfig:
  """The student's config from ``config.student``, the image size and ``norm``
  (the input normalisation of :func:`pixel_norm`: ``pixel_mean``,
  ``pixel_std``)."""
  return _dataclass(
    fs.FlashSSM3DConfig,
    config.student,
    image_size=config.data.image_size,
    **norm,
  )


def _step(config, procrustes=False, reprojection=False, **zeroed):
  """The library's train step with ``config.loss``'s weights (geometry terms
  zeroed where off)."""
  lc = config.loss
  proc, rep = (
    (lc.procrustes if procrustes else 0.0),
    (lc.reprojection if reprojection else 0.0),
  )
  return fs.train_step(
    _dataclass(fs.LossWeights, lc, procrustes=proc, reprojection=rep, **zeroed)
  )


def _state(model, c, steps):
  """A train state with the library's optimizer at section ``c``'s learning rate
  and warm-up."""
  return core.TrainState.create(
    model, fs.train_optimizer(c.learning_rate, warmup=c.warmup, steps=steps)
  )


def _fit(config, state, compiled, batches, steps, workdir, name):
  """``core.train_loop`` with the config's checkpoint and log intervals."""
  return core.train_loop(
    state,
    compiled,
    batches,
    num_steps=steps,
    workdir=workdir / name,
    desc=name,
    checkpoint_every=config.checkpoint_every,
    log_every=config.log_every,
  )


def _cached_teacher(config, pool_names, n_student: int, hw) -> dict:
  """The teacher's outputs read from ``teacher.cached_predictions`` (e.g.
  VGGT's), no training."""
  tc, cached = config.teacher, config.teacher.cached_predictions
  if not tc.train_flops > 0:
    raise ValueError(
      "teacher.train_flops (the cached teacher's training FLOPs) must be > 0: "
      "it sets the student's FLOP budget"
    )
  names = pool_names[:n_student] if pool_names is not None else None
  targets = fs.load_teacher_predictions(cached, scene_names=names, image_hw=hw)
  if len(targets.pose_enc) < n_student:
    raise ValueError(
      f"{cached} has {len(targets.pose_enc)} scenes, "
      f"the student needs {n_student}"
    )
  test = None
  if tc.cached_test_predictions:
    tt = fs.load_teacher_predictions(tc.cached_test_predictions, image_hw=hw)
    test = {k: np.asarray(v) for k, v in tt._asdict().items()}
  return {
    "targets": fs.DistillTargets(*(np.asarray(a)[:n_student] for a in targets)),
    "test": test,
    "train_flops": float(tc.train_flops),
    "infer_flops": float(tc.infer_flops_per_scene) * n_student,
    "info": {
      "cached_predictions": str(cached),
      "train_flops": float(tc.train_flops),
    },
    "history": [],
    "forward": None,
  }


def _trained_teacher(config, pool, sub, test, norm, sharding, workdir) -> dict:
  """T1: the attention teacher trained on the pool's ground truth, and its
  outputs.

  With ``teacher.camera_steps`` the first steps train the camera term alone
  (same optimizer and learning-rate schedule), the rest every term until
  ``teacher.steps``.
  """
  tc, dc = config.teacher, config.data
  tcfg = _dataclass(fs.TeacherConfig, tc, image_size=dc.image_size, **norm)
  state = _state(fs.AATeacher(tcfg, rngs=nnx.Rngs(config.seed)), tc, tc.steps)
  gt = fs.ground_truth_targets(pool)
  batches = fs.sample_batches(
    pool["images"],
    gt,
    batch_size=tc.batch_size,
    seed=config.seed,
    sharding=sharding,
  )
  t0, cam_steps = time.perf_counter(), tc.camera_steps
  if not 0 <= cam_steps <= tc.steps:
    raise ValueError(
      f"teacher.camera_steps must be in [0, teacher.steps], got {cam_steps}"
    )
  phases = [("teacher", tc.steps, {})]
  if cam_steps:
    phases.insert(
      0, ("teacher_cameras", cam_steps, dict(depth=0.0, points=0.0, grad=0.0))
    )
  flops, hist, done = 0.0, [], 0
  for name, until, zeroed in phases:
    compiled, step_flops = fs.compile_step(
      _step(config, **zeroed), state, batches(0)
    )
    state, phase_hist = _fit(
      config, state, compiled, batches, until, workdir, name
    )
    flops, hist, done = (
      flops + step_flops * (until - done),
      hist + phase_hist,
      until,
    )
  teacher = state.model()
  info = {
    "params": fs.count_params(teacher),
    "steps": tc.steps,
    "camera_steps": cam_steps,
    "train_time_s": time.perf_counter() - t0,
    "train_flops": flops,
    "final_loss": hist[-1].get("train/total") if hist else None,
  }
  # teacher outputs on the student's subset (their FLOPs count in the student's
  # budget)
  fwd = fs.BatchedForward(teacher, batch_size=dc.eval_batch, sharding=sharding)
  tp = fwd(sub["images"])
  keys = ("pose_enc", "depth", "depth_conf", "points", "point_conf")
  return {
    "targets": fs.DistillTargets(
      **{k: tp[k] for k in keys}, valid=sub["valid"]
    ),
    "test": fwd(test["images"]),
    "train_flops": flops,
    "infer_flops": fwd.flops(sub["images"])
    / dc.eval_batch
    * len(sub["images"]),
    "info": info,
    "history": hist,
    "forward": fwd,
  }


def _model_for(var, config, scfg, seed):
  """The model a variant trains: the SSM student, or the attention model of
  ``config.attention`` with the student's input normalisation
  (``scfg.pixel_mean`` / ``_std``)."""
  if var["arch"] == "ssm":
    return fs.FlashSSM3D(scfg, rngs=nnx.Rngs(seed + 1))
  norm = dict(pixel_mean=scfg.pixel_mean, pixel_std=scfg.pixel_std)
  acfg = _dataclass(
    fs.TeacherConfig,
    config.attention,
    config.student,
    image_size=config.data.image_size,
    **norm,
  )
  return fs.AATeacher(acfg, rngs=nnx.Rngs(seed + 1))


def _train_student(
  config, name, scfg, sub, teacher, sharding, workdir, n_pool: int
):
  """One variant trained within its FLOP budget; ``(info, history, Forward)``.

  FLOPs per step come from the traced (uncompiled) step: the step count, and
  hence the learning-rate schedule compiled into the real step, depends on it.
  With the step count at ``max_steps`` the probe's schedule is the real one and
  it is compiled from that trace.
  """
  sc, var = config.student, _VARIANTS[name]
  n_student, distil = len(sub["images"]), var["targets"] == "teacher"
  student = _model_for(var, config, scfg, config.seed)
  sstep = _step(config, var["procrustes"], var["reprojection"])
  targets = teacher["targets"] if distil else fs.ground_truth_targets(sub)
  batches = fs.sample_batches(
    sub["images"],
    targets,
    batch_size=sc.batch_size,
    seed=config.seed + 7,
    sharding=sharding,
  )
  probe = _state(student, sc, sc.max_steps)
  traced = jax.jit(sstep, donate_argnums=0).trace(probe, batches(0))
  sflops, sflops_xla = fs.count_flops(traced, with_xla=True)
  infer = teacher["infer_flops"] if distil else 0.0
  budget = sc.flops_fraction * teacher["train_flops"] - infer
  steps = fs.steps_within_budget(
    sflops, budget, min_steps=sc.min_steps, max_steps=sc.max_steps
  )
  t0 = time.perf_counter()
  if steps == sc.max_steps:
    state, compiled = probe, traced.lower().compile()
  else:
    state = _state(student, sc, steps)
    # counted above
    compiled, _ = fs.compile_step(sstep, state, batches(0), count=False)
  state, hist = _fit(
    config, state, compiled, batches, steps, workdir, f"student_{name}"
  )
  student = state.model()
  info = {
    "params": fs.count_params(student),
    "steps": steps,
    "step_flops": sflops,
    "step_flops_xla_scan_once": sflops_xla,
    "train_time_s": time.perf_counter() - t0,
    "flops_vs_teacher": (sflops * steps + infer) / teacher["train_flops"],
    "scenes_vs_teacher": n_student / n_pool,
  }
  return (
    info,
    hist,
    fs.BatchedForward(
      student, batch_size=config.data.eval_batch, sharding=sharding
    ),
  )


def _extrapolation(config, forwards: dict, hw) -> dict:
  """E3: every model on test scenes with k times the training views (procedural
  data only)."""
  dc, out = config.data, {}
  if dc.source != "procedural":
    return out
  for k in config.extrapolation_factors:
    views, n_ext = int(k * dc.num_views), config.extrapolation_scenes
    seed = 900_000 + 1000 * config.seed
    ext_test = render_set(
      seed, n_ext, dc, chunk=min(dc.render_chunk, n_ext), num_views=views
    )
    for mname, fwd in forwards.items():
      out.setdefault(mname, {})[str(views)] = fs.evaluate_predictions(
        fwd(ext_test["images"]), ext_test, hw
      )
  return out


def _setup(config, seed: int, workdir):
  """``(config with seed, workdir, hw, test, sub, pool, pool_names, trivial
  predictions)``: the data of one seed, the student's first ``student_fraction``
  of the pool, and input-independent predictors fitted on its ground truth."""
  config = ml_collections.ConfigDict(config)
  config.seed = int(seed)
  workdir = pathlib.Path(workdir)
  workdir.mkdir(parents=True, exist_ok=True)
  hw = (config.data.image_size, config.data.image_size)
  pool, test, pool_names = load_data(config)
  n_sub = max(1, int(round(config.data.student_fraction * len(pool["images"]))))
  sub = {k: v[:n_sub] for k, v in pool.items()}
  triv = fs.trivial_predictors(sub, len(test["images"]), hw)
  return config, workdir, hw, test, sub, pool, pool_names, triv


def run_seed(config, seed: int, workdir) -> dict:
  """One seed of the whole pipeline (data, teacher, students, evaluation);
  JSON-able dict.

  Returns ``{"data", "teacher", "students", "eval", "extrapolation",
  "histories"}``: ``eval`` maps model name -> ``{"vs_gt": metrics[,
  "vs_teacher": metrics]}`` (trivial predictors fitted on the student's scenes'
  GT, scored against GT, and on the teacher's outputs on them, scored against
  the teacher), ``extrapolation`` maps model name ->
  ``{str(S'): metrics vs GT}`` on test scenes with more views than the models
  were trained on (procedural data only).
  """
  config, workdir, hw, test, sub, pool, pool_names, triv = _setup(
    config, seed, workdir
  )
  dc, sharding = config.data, batch_sharding(config)
  # fitted on the teacher's training pool
  norm = pixel_norm(config, pool["images"])
  n_pool, n_student, n_test = (
    len(pool["images"]),
    len(sub["images"]),
    len(test["images"]),
  )
  if config.teacher.cached_predictions:
    teacher = _cached_teacher(config, pool_names, n_student, hw)
  else:
    teacher = _trained_teacher(config, pool, sub, test, norm, sharding, workdir)
  tp, teacher_test = teacher["targets"], teacher["test"]
  valid = np.ones(np.shape(tp.depth)[:-1], bool)
  fit = dict(
    pose_enc=tp.pose_enc,
    depth=np.asarray(tp.depth)[..., 0],
    points=tp.points,
    valid=valid,
  )
  triv_t = fs.trivial_predictors(fit, n_test, hw)
  evals = {}
  if teacher_test is not None:
    evals["teacher_T1"] = {
      "vs_gt": fs.evaluate_predictions(teacher_test, test, hw)
    }
  # fitted on GT, on the teacher's outputs
  pairs = {k: (v, triv_t[k]) for k, v in triv.items()}
  evals.update(fs.evaluate_models(pairs, test, hw, teacher_test))
  scfg = student_config(config, **norm)
  students, histories = {}, {"teacher": teacher["history"]}
  forwards = (
    {} if teacher["forward"] is None else {"teacher_T1": teacher["forward"]}
  )
  for name in config.variants:
    info, hist, fwd = _train_student(
      config, name, scfg, sub, teacher, sharding, workdir, n_pool
    )
    students[name], histories[name], forwards[f"student_{name}"] = (
      info,
      hist,
      fwd,
    )
    preds = {f"student_{name}": fwd(test["images"])}
    evals.update(fs.evaluate_models(preds, test, hw, teacher_test))
  data = {
    "source": dc.source,
    "pool_scenes": n_pool,
    "student_scenes": n_student,
    "test_scenes": n_test,
    "views": dc.num_views,
    "image_size": dc.image_size,
    "split": dc.split,
    "pixel_norm": {k: list(v) for k, v in norm.items()},
  }
  extrapolation = _extrapolation(config, forwards, hw)
  return dict(
    data=data,
    teacher=teacher["info"],
    students=students,
    eval=evals,
    extrapolation=extrapolation,
    histories=histories,
  )


def run_scan_order_seed(config, seed: int, workdir) -> dict:
  """One seed of the scan-order ablation (E2's scan-order arm)
  **[reconstruction]**.

  The same SSM student (same initial parameters, same batches; the scan order
  has no parameters) is trained on ground truth with each global scan order of
  ``config.scan_orders`` (keys of :data:`SCAN_ORDERS`) for ``student.max_steps``
  steps and evaluated on the test scenes against ground truth, beside the
  input-independent predictors fitted on the training scenes. No teacher: the
  order is a property of the architecture, so the ablation runs from ground
  truth, where the paired differences are not mixed with the teacher's errors.

  Returns:
    ``{"data", "students", "eval", "histories"}`` as in :func:`run_seed`.
  """
  config, workdir, hw, test, sub, _, _, triv = _setup(config, seed, workdir)
  dc, sc = config.data, config.student
  evals = fs.evaluate_models(triv, test, hw)
  gt = fs.ground_truth_targets(sub)
  batches = fs.sample_batches(
    sub["images"], gt, batch_size=sc.batch_size, seed=config.seed + 7
  )
  info, histories = {}, {}
  norm = pixel_norm(config, sub["images"])
  for name in config.scan_orders:
    core.validate_choice(name, name="scan_orders", allowed=tuple(SCAN_ORDERS))
    scfg = dataclasses.replace(
      student_config(config, **norm), global_orders=SCAN_ORDERS[name]
    )
    model = fs.FlashSSM3D(scfg, rngs=nnx.Rngs(config.seed + 1))
    state = _state(model, sc, sc.max_steps)
    t0 = time.perf_counter()
    compiled, flops = fs.compile_step(_step(config), state, batches(0))
    state, histories[name] = _fit(
      config, state, compiled, batches, sc.max_steps, workdir, f"student_{name}"
    )
    info[name] = {
      "params": fs.count_params(model),
      "steps": sc.max_steps,
      "step_flops": flops,
      "train_time_s": time.perf_counter() - t0,
      "global_orders": list(SCAN_ORDERS[name]),
    }
    fwd = fs.BatchedForward(state.model(), batch_size=dc.eval_batch)
    evals.update(
      fs.evaluate_models({f"student_{name}": fwd(test["images"])}, test, hw)
    )
  n_train, n_test = len(sub["images"]), len(test["images"])
  data = {
    "train_scenes": n_train,
    "test_scenes": n_test,
    "views": dc.num_views,
    "split": dc.split,
  }
  return {"data": data, "students": info, "eval": evals, "histories": histories}


def _notes(config, runs, per_seed) -> str:
  """The results' notes: what ran, and where seeds read from
  ``config.seeds_from`` came from."""
  split = config.data.split
  if config.experiment == "scan_order":
    return (
      "Scan-order ablation on the synthetic procedural proxy (split "
      f"{split}), students trained on ground truth, CPU scale. "
      f"Means over {len(runs)} seed(s) with 95% CI half-widths."
    )
  imported = sorted(set(per_seed) - set(runs))
  source = (
    f" (seeds {imported} read from an earlier run's per-seed metrics, "
    "see extra.seeds_from; the tables' model info and the plots' curves are "
    f"from seed {min(runs)})"
  )
  return (
    f"Synthetic procedural proxy (split {split}), CPU scale; "
    "not comparable with VGGT's CO3D/RealEstate10K numbers. "
    f"Means over {len(per_seed)} seed(s) with 95% CI "
    f"half-widths{source if imported else ''}. Timings are on shared CPU "
    "cores (noisy)."
  )


def train_and_evaluate(config, workdir) -> dict:
  """Every seed of :func:`run_seed` (one resumable cell each), aggregated over
  seeds, written.

  ``config.experiment == "scan_order"``: :func:`run_scan_order_seed` instead.
  Metrics are means over seeds with ``/ci95`` and ``/std``
  (:func:`evaluate.aggregate`; derived metrics are computed per seed first).
  Seeds without a cell here are read from ``config.seeds_from`` (an earlier
  ``results.json``, :func:`evaluate.seeds_from_results`), recorded in
  ``extra.seeds_from``.

  Returns:
    ``{"metrics", "per_seed", "table_markdown"}`` and the first computed seed's
    ``"data"``, ``"students"`` (and ``"teacher"``).
  """
  t_start = time.perf_counter()
  run_config, config = (
    config,
    core.config_view(config, default_config.get_config()),
  )
  core.validate_seeds(config.seeds, name="seeds")
  core.validate_choice(
    config.experiment, name="experiment", allowed=("distillation", "scan_order")
  )
  workdir = pathlib.Path(workdir)
  workdir.mkdir(parents=True, exist_ok=True)
  if config.experiment == "scan_order":
    run_fn, derive = (
      run_scan_order_seed,
      lambda r: ev.scan_order_derived(r["eval"]),
    )
    extra_keys = ("students", "data")
  else:
    for v in config.variants:
      core.validate_choice(v, name="variants", allowed=tuple(_VARIANTS))
    run_fn, derive = (
      run_seed,
      lambda r: ev.derived_metrics(r["eval"], r.get("extrapolation", {})),
    )
    extra_keys = ("teacher", "students", "seeds_computed", "seeds_from")
  seeds = [config.seed + i for i in range(config.seeds)]
  store = core.CellStore(workdir / "seeds")
  imported, provenance = {}, None
  if config.seeds_from:
    missing = [s for s in seeds if f"seed{s}" not in store]
    imported, provenance = ev.seeds_from_results(config.seeds_from, missing)
  todo = [s for s in seeds if s not in imported]
  if not todo:
    raise ValueError(
      "at least one seed must be computed here (all were in config.seeds_from)"
    )
  cells = {f"seed{s}": (config, s, workdir / f"seed{s}") for s in todo}
  runs = dict(zip(todo, core.fill_cells(store, cells, run_fn, desc="seeds")))
  per_seed = {
    **imported,
    **{s: {**ev.flat_metrics(r), **derive(r)} for s, r in runs.items()},
  }
  per_seed = {s: per_seed[s] for s in seeds}
  first = {**runs[min(runs)], "seeds_computed": sorted(runs)}
  first["seeds_from"] = provenance if imported else None
  metrics = ev.aggregate(list(per_seed.values()))
  extra = {"per_seed": {str(k): v for k, v in per_seed.items()}}
  extra.update({k: first[k] for k in extra_keys})
  extra["loss_curves"] = ev.loss_curves(first["histories"])
  # resumable: a finished sweep with the same settings is reused
  if config.scaling.enabled:
    extra["scaling"] = scaling.cached_scaling(config.scaling, workdir)
    for name in ("student_ssm", "teacher_attention"):
      r = extra["scaling"][name]
      for k in (
        "time_exponent",
        "memory_exponent",
        "views_in_10s_measured",
        "views_in_10s_fit",
      ):
        metrics[f"scaling/{name}/{k}"] = r[k]
  path = core.write_results(
    workdir,
    metrics=metrics,
    config=run_config,
    notes=_notes(config, runs, per_seed),
    wall_time_s=time.perf_counter() - t_start,
    extra=extra,
  )
  table = (
    json.loads(pathlib.Path(path).read_text())["table_markdown"]
    if path
    else None
  )
  out = {k: first[k] for k in ("data", "teacher", "students") if k in first}
  return {
    **out,
    "metrics": metrics,
    "per_seed": extra["per_seed"],
    "table_markdown": table,
  }
