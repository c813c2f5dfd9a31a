"""End-to-end smoke run of the experiment, and the notebook on that same run.

The smoke run happens once per module (``smoke_run``); the notebook test hands
its workdir to the notebook (``FLASHSSM3D_REUSE_WORKDIR``) so that the notebook
shows that run instead of training the same smoke models a second time. The
notebook's own training path runs wherever the variable is unset (Colab, and the
Python 3.13 notebook check).
"""

import json

import numpy as np
import pytest

from experiments.flashssm3d import evaluate, input_pipeline, train
from experiments.flashssm3d.configs import smoke
from jaxpapers import flashssm3d as fs


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
  cfg = smoke.get_config()
  workdir = tmp_path_factory.mktemp("flashssm3d_smoke")
  return cfg, workdir, train.train_and_evaluate(cfg, workdir)


def test_smoke_experiment_end_to_end(smoke_run):
  cfg, workdir, res = smoke_run
  out = json.loads((workdir / "results.json").read_text())
  m = out["metrics"]
  for name in cfg.variants:
    assert 0.0 <= m[f"student_{name}/vs_gt/AUC@30"] <= 1.0
    assert np.isfinite(m[f"student_{name}/vs_gt/depth_AbsRel"])
    assert np.isfinite(m[f"student_{name}/vs_teacher/points_overall"])
    assert np.isfinite(m[f"derived/student_{name}/distill_score"])
  assert np.isfinite(m["teacher_T1/vs_gt/points_overall"])
  # every trivial predictor is scored against ground truth and against the
  # teacher
  for triv, key in (
    ("trivial_mean_pose", "AUC@30"),
    ("trivial_constant_depth", "depth_delta1.25"),
    ("trivial_mean_output", "points_overall"),
  ):
    for ref in ("vs_gt", "vs_teacher"):
      assert np.isfinite(m[f"{triv}/{ref}/{key}"])
      assert f"| {triv} | {ref} |" in out["table_markdown"]
  assert "| model | ref |" in out["table_markdown"]
  assert (workdir / "training_loss.png").exists()
  assert not cfg.extrapolation_factors and not any("/views" in k for k in m)
  assert set(out["extra"]["per_seed"]) == {str(cfg.seed)}
  # the FLOP budget counts scan bodies once per step: above XLA's own count
  # (bodies once)
  info = res["students"]["reprojection"]
  assert info["step_flops"] > 1.05 * info["step_flops_xla_scan_once"]
  # the teacher's camera-only phase, then every term: both phases trained and
  # logged
  teacher = res["teacher"]
  assert (teacher["camera_steps"], teacher["steps"]) == (2, 4) and teacher[
    "train_flops"
  ] > 0
  curve = out["extra"]["loss_curves"]["teacher"]["step"]
  assert curve == [2, 4]  # log_every=2: one record from each phase
  assert (
    workdir / f"seed{cfg.seed}" / "teacher_cameras" / "checkpoints"
  ).exists()
  # a rerun on the same workdir reads the finished seed back instead of training
  # again
  again = train.train_and_evaluate(cfg, workdir)
  assert (
    again["metrics"]["teacher_T1/vs_gt/AUC@30"] == m["teacher_T1/vs_gt/AUC@30"]
  )


@pytest.mark.slow
def test_smoke_view_extrapolation(tmp_path):
  """Every model on test scenes with twice the training views (left out of the
  smoke run)."""
  cfg = smoke.get_config()
  cfg.extrapolation_factors = (2,)
  out = train.train_and_evaluate(cfg, tmp_path)
  m = out["metrics"]
  S2 = 2 * cfg.data.num_views
  for model in ("teacher_T1", "student_reprojection"):
    assert 0.0 <= m[f"{model}/views{S2}/AUC@30"] <= 1.0
    assert np.isfinite(m[f"derived/{model}/extrap_retained_{S2}"])
  assert (tmp_path / "extrapolation.png").exists()


def test_scan_order_derived_follows_the_stated_rule():
  """Alternating vs each single order: mean gain in margins; the claim takes the
  smaller one."""
  row = lambda auc, d, p: {
    "AUC@30": auc,
    "depth_delta1.25": d,
    "points_overall": p,
  }
  evals = {
    "trivial_mean_output": {"vs_gt": row(0.1, 0.4, 0.2)},
    "student_alternating": {"vs_gt": row(0.4, 0.7, 0.1)},
    "student_frame_major": {"vs_gt": row(0.3, 0.7, 0.1)},
    "student_position_major": {"vs_gt": row(0.4, 0.8, 0.2)},
  }
  d = evaluate.scan_order_derived(evals)
  # vs frame-major: (0.1/0.05 + 0 + 0) / 3 = 2/3; vs position-major: (0 - 2 + 5)
  # / 3 = 1
  np.testing.assert_allclose(d["derived/alternating_vs_frame_major"], 2.0 / 3.0)
  np.testing.assert_allclose(d["derived/alternating_vs_position_major"], 1.0)
  np.testing.assert_allclose(d["derived/alternating_vs_best_single"], 2.0 / 3.0)
  # over trivial: AUC 0.3/0.05-1 = 5, delta 0.3/0.05-1 = 5, points 0.5/0.1-1 = 4
  np.testing.assert_allclose(
    d["derived/student_alternating/over_trivial_vs_gt"], 4.0
  )
  from experiments.flashssm3d.configs import scan_order

  c = scan_order.get_config()
  assert (
    c.experiment == "scan_order"
    and c.seeds >= 3
    and c.get("issue_verdicts", True)
  )
  assert set(c.scan_orders) == set(train.SCAN_ORDERS)
  assert {cl["metric"] for cl in c.claims} <= set(d) | {
    "derived/alternating_vs_best_single"
  }
  assert train.student_config(c).global_orders == (
    "frame_major",
    "position_major",
  )


@pytest.mark.slow
def test_scan_order_ablation_smoke(tmp_path):
  """The scan-order ablation end to end on the smoke shapes: three students,
  same init."""
  from experiments.flashssm3d.configs import scan_order

  c = scan_order.get_config()
  s = smoke.get_config()
  c.data.update(dict(s.data))
  c.data.update(dict(pool_scenes=4, student_fraction=1.0))
  c.student.update(dict(s.student))
  c.student.update(dict(depth=2, max_steps=2, min_steps=2))
  c.seeds, c.checkpoint_every, c.issue_verdicts = 1, 2, False
  out = train.train_and_evaluate(c, tmp_path)
  m = out["metrics"]
  for name in c.scan_orders:
    assert 0.0 <= m[f"student_{name}/vs_gt/AUC@30"] <= 1.0
  assert np.isfinite(m["derived/alternating_vs_best_single"])
  # different orders give different students from the same initial parameters
  assert (
    m["student_frame_major/vs_gt/depth_AbsRel"]
    != m["student_position_major/vs_gt/depth_AbsRel"]
  )
  assert (tmp_path / "results.json").exists()


def test_smoke_distillation_trains_every_loss_term(smoke_run):
  """The student step differentiates every term (Procrustes and reprojection
  active, finite)."""
  cfg, workdir, _ = smoke_run
  assert (
    "reprojection" in cfg.variants
    and cfg.loss.procrustes > 0
    and cfg.loss.reprojection > 0
  )
  lines = (
    (workdir / f"seed{cfg.seed}" / "student_reprojection" / "history.jsonl")
    .read_text()
    .splitlines()
  )
  recs = [json.loads(r) for r in lines if r.strip()]
  assert recs and all(np.isfinite(r["train/total"]) for r in recs)
  assert all(
    r["train/procrustes"] > 0 and r["train/reprojection"] >= 0 for r in recs
  )
  assert all(
    np.isfinite(r["train/procrustes"]) and np.isfinite(r["train/reprojection"])
    for r in recs
  )


def test_derived_slacks_follow_the_stated_rule():
  """Slack = gain / margin - 1 over the best trivial predictor; a hand-computed
  case."""
  row = lambda auc, d, p: {
    "AUC@30": auc,
    "depth_delta1.25": d,
    "points_overall": p,
  }
  evals = {
    "teacher_T1": {"vs_gt": row(0.8, 0.9, 0.1)},
    "trivial_mean_pose": {
      "vs_gt": {"AUC@30": 0.5},
      "vs_teacher": {"AUC@30": 0.6},
    },
    "trivial_mean_output": {
      "vs_gt": row(0.5, 0.6, 0.2),
      "vs_teacher": row(0.6, 0.7, 0.2),
    },
    "student_x": {
      "vs_gt": row(0.75, 0.9, 0.1),
      "vs_teacher": row(0.9, 0.95, 0.05),
    },
  }
  d = evaluate.derived_metrics(evals)
  # vs GT: AUC (0.75-0.5)/0.05-1 = 4, delta (0.9-0.6)/0.05-1 = 5, points
  # ((0.2-0.1)/0.2)/0.1-1 = 4
  np.testing.assert_allclose(d["derived/student_x/over_trivial_vs_gt"], 4.0)
  # vs teacher: AUC (0.9-0.6)/0.05-1 = 5, delta 4, points 6.5
  np.testing.assert_allclose(
    d["derived/student_x/over_trivial_vs_teacher"], 4.0
  )
  # gap to the teacher on GT: AUC (0.75-0.8)/0.05+1 = 0 (exactly one margin
  # behind)
  np.testing.assert_allclose(
    d["derived/student_x/vs_teacher_gap"], 0.0, atol=1e-12
  )
  np.testing.assert_allclose(
    d["derived/student_x/distill_score"], 0.0, atol=1e-12
  )
  # teacher: AUC 0.3/0.05-1 = 5, delta 5, points 0.5/0.1-1 = 4
  np.testing.assert_allclose(d["derived/teacher_T1/over_trivial_vs_gt"], 4.0)
  # paired comparisons and extrapolation retention
  evals["student_reprojection"] = {"vs_gt": row(0.7, 0.8, 0.1)}
  evals["student_gt"] = {"vs_gt": row(0.6, 0.9, 0.2)}
  evals["student_attention_gt"] = {"vs_gt": row(0.5, 0.95, 0.1)}
  evals["student_regression"] = {"vs_gt": row(0.72, 0.8, 0.1)}
  ext = {"student_gt": {"8": row(0.3, 0.81, 0.3)}}
  d = evaluate.derived_metrics(evals, ext)
  # distill vs gt: mean of AUC +0.1/0.05 = 2, delta -0.1/0.05 = -2, points
  # 0.5/0.1 = 5 -> 5/3
  np.testing.assert_allclose(d["derived/distill_vs_gt"], 5.0 / 3.0)
  # ssm (gt) vs attention: AUC 2+1, delta -1+1 = 0, points -1/0.1+1 = -9 -> min
  # -9
  np.testing.assert_allclose(d["derived/ssm_vs_attention_gt"], -9.0)
  np.testing.assert_allclose(
    d["derived/geometry_minus_regression_AUC"], -0.02, atol=1e-12
  )
  # retention: min(0.3/0.6, 0.81/0.9) = 0.5
  np.testing.assert_allclose(d["derived/student_gt/extrap_retained_8"], 0.5)


def test_aggregate_over_seeds():
  out = evaluate.aggregate([{"a": 1.0}, {"a": 3.0}, {"a": 2.0}])
  assert out["a"] == 2.0 and np.isclose(out["a/std"], 1.0)
  # t_{0.975, 2} = 4.303: the 95% t-interval half-width of a mean over 3 seeds
  np.testing.assert_allclose(
    out["a/ci95"], 4.302652729911275 / np.sqrt(3), rtol=1e-3
  )
  assert evaluate.aggregate([{"a": 1.0}]) == {"a": 1.0}


@pytest.mark.notebook
def test_notebook_runs(smoke_run, monkeypatch):
  from tests.notebook_util import run_notebook

  monkeypatch.setenv("FLASHSSM3D_REUSE_WORKDIR", str(smoke_run[1]))
  run_notebook("colab/flashssm3d.ipynb", timeout=300)


def test_disk_data_and_the_accelerator_config(tmp_path):
  import jax

  from experiments.flashssm3d.configs import full
  from tests.flashssm3d.test_io import _write_scene

  for split in ("train", "test"):
    for i in range(2):
      _write_scene(tmp_path / split / f"s{i}", seed=i)
  cfg = smoke.get_config()
  cfg.data.update(
    dict(source="disk", data_dir=str(tmp_path), num_views=2, image_size=8)
  )
  pool, test, names = train.load_data(cfg)
  assert names == ["s0", "s1"] and pool["images"].shape == (2, 2, 8, 8, 3)
  assert pool["pose_enc"].shape == (2, 2, 9) and test["valid"].any()
  # the GPU/TPU setting: chunked scan, remat, bf16 backbone, batch sharded over
  # every device
  fcfg = full.get_config()
  scfg = train.student_config(fcfg)
  assert (scfg.method, scfg.remat, scfg.dtype) == ("chunked", True, "bfloat16")
  sh = train.batch_sharding(fcfg)
  n = jax.device_count()
  data = (np.zeros((16, 3), np.float32), {"t": np.zeros((16, 2), np.float32)})
  images, targets = fs.sample_batches(*data, batch_size=8, seed=0, sharding=sh)(
    0
  )
  assert (
    len(images.sharding.device_set) == n
    and len(targets["t"].sharding.device_set) == n
  )
  if n > 1:
    fcfg.student.batch_size = n + 1
    with pytest.raises(ValueError, match="divisible"):
      train.batch_sharding(fcfg)


@pytest.mark.slow
def test_cached_teacher_predictions_drive_the_distillation(tmp_path):
  """Disk scenes + a cached teacher (.npz, scenes stored in reverse order): no
  teacher is trained, the students' budget comes from ``teacher.train_flops``
  and the cached test predictions are scored as the teacher (here the ground
  truth itself, so its errors vanish)."""
  from tests.flashssm3d.test_io import _write_scene

  for split in ("train", "test"):
    for i in range(2):
      _write_scene(
        tmp_path / "data" / split / f"s{i}", seed=i + 10 * (split == "test")
      )
  cfg = smoke.get_config()
  cfg.data.update(
    dict(
      source="disk",
      data_dir=str(tmp_path / "data"),
      num_views=2,
      image_size=8,
      eval_batch=2,
    )
  )
  cfg.data.student_fraction = 1.0
  cfg.variants = ("regression",)
  pool, test, names = train.load_data(cfg)

  def save(path, d, order, scene_names=None):
    fs.save_teacher_predictions(
      path,
      pose_enc=d["pose_enc"][order],
      depth=d["depth"][order],
      depth_conf=np.ones_like(d["depth"][order]),
      points=d["points"][order],
      point_conf=np.ones_like(d["depth"][order]),
      valid=d["valid"][order],
      scene_names=scene_names,
    )

  save(tmp_path / "teacher_train.npz", pool, [1, 0], [names[1], names[0]])
  save(tmp_path / "teacher_test.npz", test, [0, 1])
  cfg.teacher.update(
    dict(
      cached_predictions=str(tmp_path / "teacher_train.npz"),
      cached_test_predictions=str(tmp_path / "teacher_test.npz"),
      train_flops=1e9,
    )
  )
  r = train.run_seed(cfg, 0, tmp_path / "run")
  assert r["teacher"] == {
    "cached_predictions": str(tmp_path / "teacher_train.npz"),
    "train_flops": 1e9,
  }
  # nothing trained for the teacher
  assert not (tmp_path / "run" / "teacher").exists()
  info = r["students"]["regression"]
  # the students' FLOPs are measured against the cached teacher's stated
  # training FLOPs
  assert info["steps"] == cfg.student.max_steps
  np.testing.assert_allclose(
    info["flops_vs_teacher"], info["step_flops"] * info["steps"] / 1e9
  )
  t = r["eval"]["teacher_T1"]["vs_gt"]
  assert (
    t["AUC@30"] == 1.0
    and t["depth_AbsRel"] < 1e-6
    and t["points_overall"] < 1e-5
  )
  assert "vs_teacher" in r["eval"]["student_regression"]
  # a cached file without the student's scenes is refused by name
  save(tmp_path / "other.npz", pool, [0, 1], ["a", "b"])
  cfg.teacher.cached_predictions = str(tmp_path / "other.npz")
  with pytest.raises(ValueError, match="no predictions for scenes"):
    train.run_seed(cfg, 0, tmp_path / "run2")


def test_more_seeds_on_top_of_an_earlier_run(smoke_run, tmp_path):
  """``seeds_from``: seeds without a cell in the workdir come from an earlier
  results.json's per-seed metrics (derived quantities recomputed); seeds with a
  cell are not read from it."""
  import shutil

  cfg, workdir, _ = smoke_run
  earlier = json.loads((workdir / "results.json").read_text())
  flat0 = earlier["extra"]["per_seed"]["0"]
  imported, prov = evaluate.seeds_from_results(workdir / "results.json", [0, 1])
  assert set(imported) == {0} and prov["seeds"] == [0]
  # the derived slacks recomputed from the seed's metrics equal those of the run
  # itself
  assert imported[0] == pytest.approx(flat0, nan_ok=True)
  # an earlier run holding seeds 0 and 1: seed 1 = seed 0's metrics + 1, its
  # stored derived values a sentinel; seed 0's cell is in the workdir, so only
  # seed 1 is taken from the file
  earlier["extra"]["per_seed"] = {
    "0": {k: -5.0 for k in flat0},
    "1": {
      k: 1e6 if k.startswith("derived/") else v + 1.0 for k, v in flat0.items()
    },
  }
  src = tmp_path / "earlier.json"
  src.write_text(json.dumps(earlier))
  wd = tmp_path / "wd"
  shutil.copytree(workdir, wd)
  cfg = cfg.copy_and_resolve_references()
  cfg.seeds, cfg.seeds_from = 2, str(src)
  m = train.train_and_evaluate(cfg, wd)["metrics"]
  key = "student_reprojection/vs_gt/depth_AbsRel"
  # mean of seed 0 (its cell) and seed 1 (file)
  assert m[key] == pytest.approx(flat0[key] + 0.5)
  assert m[key + "/std"] == pytest.approx(np.sqrt(0.5))
  out = json.loads((wd / "results.json").read_text())
  assert out["extra"]["seeds_computed"] == [0] and out["extra"]["seeds_from"][
    "seeds"
  ] == [1]
  d1 = out["extra"]["per_seed"]["1"]
  derived = [k for k in flat0 if k.startswith("derived/")]
  # recomputed, not the file's
  assert derived and all(abs(d1[k]) < 1e6 for k in derived)
  (tmp_path / "bad.json").write_text("{}")
  with pytest.raises(ValueError, match="per_seed"):
    evaluate.seeds_from_results(tmp_path / "bad.json", [0])


def test_pixel_norm_is_fitted_on_the_pool_and_reaches_every_model():
  """'pool' standardises by the pool's per-channel statistics; 'none' keeps raw
  pixels."""
  from experiments.flashssm3d.configs import default, scan_order

  cfg = default.get_config()
  assert cfg.data.pixel_norm == "pool"
  # as its committed run
  assert scan_order.get_config().data.pixel_norm == "none"
  images = (
    np.random.default_rng(0)
    .uniform(0.55, 0.8, (4, 2, 16, 16, 3))
    .astype(np.float32)
  )
  norm = train.pixel_norm(cfg, images)
  flat = images.reshape(-1, 3).astype(np.float64)
  np.testing.assert_allclose(norm["pixel_mean"], flat.mean(0), rtol=1e-6)
  np.testing.assert_allclose(norm["pixel_std"], flat.std(0), rtol=1e-6)
  scfg = train.student_config(cfg, **norm)
  assert (
    scfg.pixel_mean == norm["pixel_mean"]
    and scfg.pixel_std == norm["pixel_std"]
  )
  attention = train._model_for(train._VARIANTS["attention_gt"], cfg, scfg, 0)
  assert attention.cfg.pixel_mean == norm["pixel_mean"]
  cfg.data.pixel_norm = "none"
  assert train.pixel_norm(cfg, images) == {}
  assert train.student_config(cfg).pixel_std == (1.0, 1.0, 1.0)
  cfg.data.pixel_norm = "imagenet"
  with pytest.raises(ValueError, match="data.pixel_norm"):
    train.pixel_norm(cfg, images)


def test_cameras_config_changes_the_teacher_and_the_data_not_the_claims(
  monkeypatch,
):
  """configs/cameras.py: a camera-only first phase of the teacher, the fog
  density reaching the renderer, and default.py's claims with preconditions that
  ask for one margin over the mean pose."""
  from experiments.flashssm3d.configs import cameras, default

  cfg, base = cameras.get_config(), default.get_config()
  assert 0 < cfg.teacher.camera_steps < cfg.teacher.steps
  assert base.teacher.get("camera_steps", 0) == 0 and cfg.loss == base.loss
  # the fog density of the config reaches every render; without the field, the
  # split's own
  seen = []
  monkeypatch.setattr(
    input_pipeline.fs,
    "render_scene_arrays",
    lambda *a, **kw: seen.append(kw["fog"]) or 1 / 0,
  )
  for c, want in ((cfg, 0.1), (base, None)):
    with pytest.raises(ZeroDivisionError):
      input_pipeline.render_set(0, 4, c.data, chunk=4)
    assert seen.pop() == want
  # same claims and rules as default.py; only the preconditions differ, and each
  # claim that has one there has this config's
  for mine, theirs in zip(cameras.CLAIMS, default.CLAIMS, strict=True):
    assert {k: v for k, v in mine.items() if k != "requires"} == {
      k: v for k, v in theirs.items() if k != "requires"
    }
    assert ("requires" in mine) == ("requires" in theirs)
    if "requires" in mine:
      assert mine["requires"] is cameras.TEACHER_SEES_CAMERAS
  metrics = {r["metric"] for r in cameras.TEACHER_SEES_CAMERAS}
  assert metrics == {
    f"teacher_T1/vs_gt/{m}" for m in ("RRA@15", "RTA@15", "AUC@30")
  } | {"trivial_mean_pose/vs_gt/ATE"}
