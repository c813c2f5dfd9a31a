"""View-scaling study: forward time and peak memory vs number of views, SSM
student vs AA teacher.

The measurement is ``jaxpapers.flashssm3d.view_scaling`` (one process, a fixed
number of tokens per view, batch 1, jitted forward; peak memory is XLA's
compiled buffer estimate, so the attention model is skipped once it would exceed
``memory_cap_gb``; a model stops once a forward takes longer than
``time_cap_s``) on the SSM student with ``lax.scan`` (``student_ssm``; and
``lax.associative_scan`` where ``cfg["associative"]``) and the attention
teacher, its exponents fitted by ``jaxpapers.flashssm3d.scaling_summary`` (the
two: ``scaling_study``). This module judges :data:`SCALING_CLAIMS`; a finished
sweep is a ``core.CellStore`` cell keyed by its settings
(:func:`cached_scaling`). Times are wall clock on shared CPU cores.

  python -m experiments.flashssm3d.scaling --views=8,16,32,64,128,256,512 --no_associative \
      --workdir=runs/flashssm3d_scaling

writes ``scaling.json``, ``scaling.png`` and a judged ``results.json``
(:func:`write_scaling_results`); ``benchmarks/flashssm3d_scaling.py`` times the
same sweep.
"""

from __future__ import annotations

import hashlib
import json
import pathlib
import time

import numpy as np
from etils import epath

from jaxpapers import core
from jaxpapers import flashssm3d as fs


def cached_scaling(cfg, workdir, *, log=print) -> dict:
  """:func:`jaxpapers.flashssm3d.scaling_study` of the sweep settings ``cfg`` (a
  ConfigDict or dict with views, width, depth, ...) with ``"config"`` added,
  stored in ``<workdir>/cells/``.

  The cell is named by a hash of the settings, so a rerun (or the experiment
  after ``python -m experiments.flashssm3d.scaling --workdir=<workdir>``) with
  the same settings reads it back instead of measuring again; other settings get
  a cell of their own.
  """
  want = json.loads(json.dumps(dict(cfg)))
  digest = hashlib.sha256(
    json.dumps(want, sort_keys=True).encode()
  ).hexdigest()[:16]

  def compute(_):  # every setting but "enabled" is an argument of the study
    study = {k: v for k, v in dict(cfg).items() if k != "enabled"}
    return {**fs.scaling_study(**study, log=log), "config": want}

  return core.CellStore(epath.Path(workdir) / "cells").get_or_compute(
    f"scaling/{digest}", compute
  )


# The claims the benchmark decides, with their rules, fixed before it was first
# run with them. Paths are into the benchmark's metrics ("<model>/<key>", see
# :func:`scaling_metrics`).
SCALING_CLAIMS = (
  dict(
    id="linear_in_views",
    statement=(
      "the SSM student's forward time grows linearly with the number of views "
      "(at a fixed number of tokens per view)"
    ),
    paper_text="linear computational complexity (abstract)",
    metric="student_ssm/time_exponent",
    direction="lower",
    held=1.15,
    partly=1.5,
    noise="student_ssm/time_exponent_ci95",
    fmt=".2f",
    baselines={
      "associative-scan SSM exponent": "student_ssm_associative/time_exponent",
      "attention teacher exponent": "teacher_attention/time_exponent",
    },
    note=(
      "log-log least-squares slope of the median forward time over the views "
      ">= fit_min_views (CPU, batch 1, jitted, warm-up excluded), "
      "with the 95% t-interval of the slope: held if the whole interval is <= "
      "1.15, partly if <= 1.5 (clearly below the attention teacher's "
      "quadratic growth), not reproduced above 1.5"
    ),
  ),
  dict(
    id="ssm_scales_better_than_attention",
    statement="the SSM's time exponent is below the attention teacher's",
    paper_text="linear vs quadratic complexity (abstract)",
    metric="derived/ssm_minus_attention_exponent",
    direction="lower",
    held=0.0,
    noise="derived/ssm_minus_attention_exponent/ci95",
    fmt="+.2f",
    note=(
      "difference of the fitted exponents (SSM minus attention) with the "
      "half-widths of the two slopes' 95% intervals added in quadrature; "
      "held if the whole interval is below 0"
    ),
  ),
  dict(
    id="views_in_10s",
    statement="500+ views reconstructed in under 10 s",
    paper_text="500+ views in < 10 s (accelerator, the paper's model size)",
    note=(
      "an accelerator claim at the paper's model size; "
      "this CPU benchmark at width 64 reports views_in_10s_measured / _fit "
      "per model for reference only"
    ),
  ),
)


def scaling_metrics(res: dict) -> dict:
  """Flat ``{"<model>/<key>": value}`` metrics of a :func:`cached_scaling`
  result (scalars only)."""
  out = {}
  for name, r in res.items():
    if isinstance(r, dict) and "time_exponent" in r:
      for k, v in r.items():
        if not isinstance(v, list):
          out[f"{name}/{k}"] = v
  if "student_ssm" in res and "teacher_attention" in res:
    a, b = res["student_ssm"], res["teacher_attention"]
    out["derived/ssm_minus_attention_exponent"] = (
      a["time_exponent"] - b["time_exponent"]
    )
    out["derived/ssm_minus_attention_exponent/ci95"] = float(
      np.hypot(
        a.get("time_exponent_ci95", np.nan), b.get("time_exponent_ci95", np.nan)
      )
    )
  return out


VIEWS = (4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)


def write_scaling_results(cfg, out: pathlib.Path, t0: float) -> dict:
  """Measure (or read back) the sweep of ``cfg`` into ``out`` and judge
  :data:`SCALING_CLAIMS`.

  Writes ``scaling.json``, ``scaling.png`` and ``results.json``
  (``core.write_results``) into ``out``; ``t0`` is the ``time.perf_counter()``
  of the start, for the wall time. Returns the :func:`cached_scaling` result.
  """
  # the report declares the sweep's table
  from experiments.flashssm3d.configs import default

  res = cached_scaling(cfg, out)
  (out / "scaling.json").write_text(json.dumps(res, indent=1))
  record = core.write_results(
    out,
    metrics=scaling_metrics(res),
    config=dict(cfg, claims=SCALING_CLAIMS),
    notes=(
      "Forward time on shared CPU cores (other jobs running: noisy), "
      f"batch 1, {res['tokens_per_view']} patch tokens per view; "
      "memory is XLA's compiled buffer estimate."
    ),
    wall_time_s=time.perf_counter() - t0,
    extra={"scaling": res},
    report=default.REPORT,
  )
  if record is not None:
    print(json.loads(pathlib.Path(record).read_text())["table_markdown"])
  return res


def main(argv=None) -> dict:
  """``python -m experiments.flashssm3d.scaling [flags]``: the sweep, judged,
  into --workdir."""
  import argparse

  from experiments.flashssm3d.configs import default

  p = argparse.ArgumentParser(
    prog="python -m experiments.flashssm3d.scaling", description=__doc__
  )
  p.add_argument("--max_views", type=int, default=512)
  p.add_argument(
    "--views", default="", help=("comma-separated view counts (default: VIEWS)")
  )
  p.add_argument("--width", type=int, default=64)
  p.add_argument("--depth", type=int, default=2)
  p.add_argument("--repeats", type=int, default=3)
  p.add_argument("--memory_cap_gb", type=float, default=3.0)
  p.add_argument("--no_associative", action="store_true")
  p.add_argument(
    "--time_cap_s", type=float, default=None, help=("default: the config's")
  )
  p.add_argument("--workdir", default="runs/flashssm3d_scaling")
  a = p.parse_args(argv)
  t0 = time.perf_counter()
  views = tuple(int(x) for x in a.views.split(",")) if a.views else VIEWS
  cfg = dict(
    default.get_config().scaling,
    width=a.width,
    depth=a.depth,
    repeats=a.repeats,
  )
  cfg.update(
    views=tuple(v for v in views if v <= a.max_views),
    memory_cap_gb=a.memory_cap_gb,
  )
  cfg.update(associative=not a.no_associative)
  if a.time_cap_s is not None:
    cfg.update(time_cap_s=a.time_cap_s)
  return write_scaling_results(cfg, pathlib.Path(a.workdir), t0)


if __name__ == "__main__":
  main()
