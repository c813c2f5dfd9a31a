"""view_scaling: one entry per view count, the memory and time caps, the
experiment's sweep."""

import math

import numpy as np
import pytest
from flax import nnx

from jaxpapers import flashssm3d as fs


class _Sum(nnx.Module):
  """A stand-in multi-view model: [B, S, H, W, 3] -> [B]."""

  def __init__(self):
    self.w = nnx.Param(np.ones((), np.float32))

  def __call__(self, x):
    return self.w[...] * x.sum(axis=(1, 2, 3, 4))


def test_view_scaling_measures_every_size():
  res = fs.view_scaling(
    {"a": _Sum(), "b": _Sum()},
    [1, 2, 4],
    image_size=4,
    repeats=2,
    log=lambda _: None,
  )
  assert set(res) == {"a", "b"}
  for r in res.values():
    keys = (
      "time_s",
      "cpu_s",
      "memory_mib",
      "compile_s",
      "time_s_repeats",
      "cpu_s_repeats",
    )
    assert all(len(r[k]) == 3 for k in keys)
    assert all(t > 0 for t in r["time_s"]) and all(
      len(ts) == 2 for ts in r["time_s_repeats"]
    )
    assert all(c >= 0 for c in r["cpu_s"]) and all(
      len(cs) == 2 for cs in r["cpu_s_repeats"]
    )
    # the input [1, S, 4, 4, 3] float32 is an argument of the program: memory
    # grows with S
    assert r["memory_mib"][2] > r["memory_mib"][0] >= 1 * 4 * 4 * 3 * 4 / 2**20


def test_view_scaling_stops_at_the_caps():
  lines = []
  res = fs.view_scaling(
    {"a": _Sum()}, [1, 2], image_size=4, memory_cap_gb=0.0, log=lines.append
  )
  r = res["a"]
  assert all(math.isnan(t) for t in r["time_s"]) and r["time_s_repeats"] == [
    [],
    [],
  ]
  assert all(math.isnan(c) for c in r["cpu_s"]) and r["cpu_s_repeats"] == [
    [],
    [],
  ]
  # compiled once, then stopped
  assert r["memory_mib"][0] > 0 and math.isnan(r["memory_mib"][1])
  assert "cap" in lines[0]
  res = fs.view_scaling(
    {"a": _Sum()}, [1, 2], image_size=4, time_cap_s=0.0, log=lines.append
  )
  assert res["a"]["time_s"][0] > 0 and math.isnan(res["a"]["time_s"][1])


@pytest.mark.parametrize(
  "kw,match",
  [
    (dict(views=[]), "views"),
    (dict(views=[0]), "views"),
    (dict(repeats=0), "repeats"),
  ],
)
def test_view_scaling_rejects_bad_arguments(kw, match):
  args = dict(views=[1], repeats=1) | kw
  with pytest.raises(ValueError, match=match):
    fs.view_scaling({"a": _Sum()}, args.pop("views"), image_size=4, **args)
  with pytest.raises(ValueError, match="models"):
    fs.view_scaling({}, [1], image_size=4)


def test_views_within_a_budget():
  """The views a time budget allows, measured and from the fitted power law."""
  views = np.array([8, 16, 32, 64, 128, 256])
  measured, fit = fs.views_within(10.0, views, 1e-2 * views, 1.0, np.log(1e-2))
  assert measured == 256 and np.isclose(fit, 1000.0)  # 1e-2 S = 10 at S = 1000
  # quadratic-ish; a NaN (not measured) size is skipped
  times = [0.5, 4.0, np.nan, 20.0]
  measured, fit = fs.views_within(10.0, [1, 2, 3, 4], times, 2.0, np.log(0.5))
  assert measured == 2 and np.isclose(fit, np.sqrt(20.0))  # 0.5 S^2 = 10
  assert np.isnan(fs.views_within(10.0, [1], [1.0], -1.0, 0.0)[1])
  assert fs.views_within(1e-3, [1, 2], [1.0, 2.0], 1.0, 0.0)[0] == 0


def test_scaling_summary_fits_time_and_memory_exponents():
  """Times ~ 3e-3 S^1 and memory ~ S^2 over S >= 8 (the 4-view point off the law
  is left out)."""
  views = [4, 8, 16, 32, 64]
  rng = np.random.default_rng(0)
  times = [1.0] + [3e-3 * v * np.exp(rng.normal(scale=0.01)) for v in views[1:]]
  mems = [1.0] + [0.5 * v**2 for v in views[1:]]
  sweep = {
    "m": dict(
      time_s=times,
      memory_mib=mems,
      compile_s=[0.1] * 5,
      time_s_repeats=[[]] * 5,
    )
  }
  r = fs.scaling_summary(views, sweep, fit_min_views=8)["m"]
  x, y = np.log(views[1:]), np.log(times[1:])
  slope, icpt = np.polyfit(x, y, 1)  # float64 least squares
  assert r["time_fit_points"] == 4 and np.isclose(r["time_exponent"], slope)
  assert (
    abs(r["time_exponent"] - 1.0) < 0.05 and 0 < r["time_exponent_ci95"] < 0.2
  )
  assert np.isclose(r["memory_exponent"], 2.0)
  assert r["views_in_10s_measured"] == 64
  assert np.isclose(
    r["views_in_10s_fit"], np.exp((np.log(10.0) - icpt) / slope)
  )
  assert r["time_s"] is times and r["compile_s"] == [0.1] * 5
  with pytest.raises(ValueError, match="one time and memory per view count"):
    fs.scaling_summary(views[:3], sweep, fit_min_views=8)


def test_scaling_models_compute_what_their_configs_build():
  """The associative-scan student is the sequential one with another scan: same
  parameters, same outputs (float64 NumPy comparison); the teacher is the
  attention model of those sizes."""
  sizes = dict(width=8, depth=1, patch=4, image_size=8, state=4, heads=2)
  models = fs.scaling_models(**sizes, associative=True)
  assert list(models) == [
    "student_ssm",
    "student_ssm_associative",
    "teacher_attention",
  ]
  assert list(fs.scaling_models(**sizes)) == [
    "student_ssm",
    "teacher_attention",
  ]
  tcfg = fs.TeacherConfig(
    width=8, depth=1, patch=4, image_size=8, heads=2, camera_stages=1
  )
  want = fs.count_params(fs.AATeacher(tcfg, rngs=nnx.Rngs(0)))
  assert fs.count_params(models["teacher_attention"]) == want
  x = np.random.default_rng(0).uniform(size=(1, 3, 8, 8, 3)).astype(np.float32)
  seq, assoc = models["student_ssm"](x), models["student_ssm_associative"](x)
  for a, b in zip(seq, assoc):
    np.testing.assert_allclose(
      np.float64(a), np.float64(b), rtol=1e-4, atol=1e-5
    )
  assert np.asarray(seq.depth).shape == (1, 3, 8, 8, 1)


def test_scaling_study_fits_the_sweep_of_the_scaling_models():
  """Two view counts: each exponent is the two-point log-log slope (float64
  NumPy)."""
  sizes = dict(width=8, depth=1, patch=4, image_size=8, state=4, heads=2)
  res = fs.scaling_study(
    (1, 2), **sizes, fit_min_views=1, repeats=1, log=lambda _: None
  )
  models = fs.scaling_models(**sizes)
  assert res["views"] == [1, 2] and res["tokens_per_view"] == (8 // 4) ** 2
  assert res["params"] == {k: fs.count_params(m) for k, m in models.items()}
  for name in models:
    r = res[name]
    slope = lambda v: np.log(np.float64(v[1]) / np.float64(v[0])) / np.log(2.0)
    assert r["time_exponent"] == pytest.approx(slope(r["time_s"]), rel=1e-9)
    assert r["memory_exponent"] == pytest.approx(
      slope(r["memory_mib"]), rel=1e-9
    )
    assert r["time_fit_points"] == 2 and r["views_in_10s_measured"] == 2
