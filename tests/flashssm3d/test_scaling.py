"""view_scaling: one entry per view count, the memory and time caps, the experiment's sweep."""

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
    {"a": _Sum(), "b": _Sum()}, [1, 2, 4], image_size=4, repeats=2, log=lambda _: None
  )
  assert set(res) == {"a", "b"}
  for r in res.values():
    keys = ("time_s", "cpu_s", "memory_mib", "compile_s", "time_s_repeats", "cpu_s_repeats")
    assert all(len(r[k]) == 3 for k in keys)
    assert all(t > 0 for t in r["time_s"]) and all(len(ts) == 2 for ts in r["time_s_repeats"])
    assert all(c >= 0 for c in r["cpu_s"]) and all(len(cs) == 2 for cs in r["cpu_s_repeats"])
    # the input [1, S, 4, 4, 3] float32 is an argument of the program: memory grows with S
    assert r["memory_mib"][2] > r["memory_mib"][0] >= 1 * 4 * 4 * 3 * 4 / 2**20


def test_view_scaling_stops_at_the_caps():
  lines = []
  res = fs.view_scaling({"a": _Sum()}, [1, 2], image_size=4, memory_cap_gb=0.0, log=lines.append)
  r = res["a"]
  assert all(math.isnan(t) for t in r["time_s"]) and r["time_s_repeats"] == [[], []]
  assert all(math.isnan(c) for c in r["cpu_s"]) and r["cpu_s_repeats"] == [[], []]
  assert r["memory_mib"][0] > 0 and math.isnan(r["memory_mib"][1])  # compiled once, then stopped
  assert "cap" in lines[0]
  res = fs.view_scaling({"a": _Sum()}, [1, 2], image_size=4, time_cap_s=0.0, log=lines.append)
  assert res["a"]["time_s"][0] > 0 and math.isnan(res["a"]["time_s"][1])


@pytest.mark.parametrize(
  "kw,match",
  [(dict(views=[]), "views"), (dict(views=[0]), "views"), (dict(repeats=0), "repeats")],
)
def test_view_scaling_rejects_bad_arguments(kw, match):
  args = dict(views=[1], repeats=1) | kw
  with pytest.raises(ValueError, match=match):
    fs.view_scaling({"a": _Sum()}, args.pop("views"), image_size=4, **args)
  with pytest.raises(ValueError, match="models"):
    fs.view_scaling({}, [1], image_size=4)
