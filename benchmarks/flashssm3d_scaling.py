"""FlashSSM-3D view-scaling benchmark (E4): SSM student vs attention teacher in one process.

    python benchmarks/flashssm3d_scaling.py --out=runs/flashssm3d_scaling

Forward time (median of 3 timed calls after a warm-up call) and XLA's buffer estimate per number
of views at 64 tokens per view, batch 1, for the SSM student with the sequential ``lax.scan``,
the SSM student with ``lax.associative_scan`` and the alternating-attention teacher; fitted
log-log exponents with their standard errors and 95% intervals; how many views each model
processes within 10 s on this machine. Writes ``scaling.json``, ``scaling.png`` and a
``results.json`` (``jaxpapers.core.write_results``) that judges the claims declared in
``experiments.flashssm3d.scaling.SCALING_CLAIMS`` (rules fixed before the run). Rerunning with
the same settings and ``--out`` reads the stored measurement back.
"""

import argparse
import json
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from experiments.flashssm3d import scaling  # noqa: E402
from experiments.flashssm3d.configs import default  # noqa: E402
from jaxpapers import core  # noqa: E402

VIEWS = (4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)


def main():
  p = argparse.ArgumentParser()
  p.add_argument("--max_views", type=int, default=512)
  p.add_argument(
    "--views", default="", help="comma-separated view counts (default: the sizes in VIEWS)"
  )
  p.add_argument("--width", type=int, default=64)
  p.add_argument("--depth", type=int, default=2)
  p.add_argument("--repeats", type=int, default=3)
  p.add_argument("--memory_cap_gb", type=float, default=3.0)
  p.add_argument("--no_associative", action="store_true")
  p.add_argument("--out", default="runs/flashssm3d_scaling")
  p.add_argument(
    "--time_cap_s",
    type=float,
    default=None,
    help="stop a model once one forward pass takes longer than this (default: the config's)",
  )
  a = p.parse_args()
  t0 = time.perf_counter()
  cfg = dict(default.get_config().scaling)
  cfg.update(
    views=tuple(
      v
      for v in (tuple(int(x) for x in a.views.split(",")) if a.views else VIEWS)
      if v <= a.max_views
    ),
    width=a.width,
    depth=a.depth,
    repeats=a.repeats,
    memory_cap_gb=a.memory_cap_gb,
    associative=not a.no_associative,
  )
  if a.time_cap_s is not None:
    cfg.update(time_cap_s=a.time_cap_s)
  out = pathlib.Path(a.out)
  res = scaling.cached_scaling(cfg, out)
  (out / "scaling.json").write_text(json.dumps(res, indent=1))
  core.save_figure(scaling.plot_scaling(res), out, "scaling")
  rows = []
  for name in ("student_ssm", "student_ssm_associative", "teacher_attention"):
    if name not in res:
      continue
    r = res[name]
    line = (
      f"{name}: time exponent {r['time_exponent']:.2f} ± {r['time_exponent_ci95']:.2f} "
      f"(95% CI, {r['time_fit_points']} sizes), memory exponent {r['memory_exponent']:.2f}, "
      f"views in 10 s: measured {r['views_in_10s_measured']}, fit {r['views_in_10s_fit']:.0f}"
    )
    print(line)
    rows.append(
      [
        name,
        res["params"][name] if name in res["params"] else "–",
        f"{r['time_exponent']:.2f} ± {r['time_exponent_ci95']:.2f}",
        r["time_fit_points"],
        f"{r['memory_exponent']:.2f}",
        r["views_in_10s_measured"],
        f"{r['views_in_10s_fit']:.0f}",
      ]
    )
  table = core.markdown_table(
    [
      "model",
      "params",
      f"time exponent (views >= {cfg['fit_min_views']}, 95% CI)",
      "sizes in the fit",
      "memory exponent",
      "views in 10 s (measured)",
      "views in 10 s (fit)",
    ],
    rows,
  )
  core.write_results(
    out,
    metrics=scaling.scaling_metrics(res),
    config=dict(cfg, claims=scaling.SCALING_CLAIMS),
    table_markdown=table,
    notes="Forward time on shared CPU cores (other jobs running: noisy), batch 1, "
    f"{res['tokens_per_view']} patch tokens per view; memory is XLA's compiled buffer estimate.",
    wall_time_s=time.perf_counter() - t0,
    extra={"scaling": res},
  )


if __name__ == "__main__":
  main()
