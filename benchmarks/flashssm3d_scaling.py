"""FlashSSM-3D view-scaling benchmark (E4): SSM student vs attention teacher in one process.

    python -m benchmarks.flashssm3d_scaling [--quick] --workdir=runs/flashssm3d_scaling

Forward time (median of 3 timed calls after a warm-up call) and XLA's buffer estimate per number
of views at 64 tokens per view, batch 1, for the SSM student with the sequential ``lax.scan``,
the SSM student with ``lax.associative_scan`` and the alternating-attention teacher; fitted
log-log exponents with their standard errors and 95% intervals; how many views each model
processes within 10 s on this machine. Writes ``scaling.json``, ``scaling.png`` and a
``results.json`` (``jaxpapers.core.write_results``) into ``--workdir``, judging the claims
declared in ``experiments.flashssm3d.scaling.SCALING_CLAIMS`` (rules fixed before the run), and
the benchmark record to ``--out``. Rerunning with the same settings and ``--workdir`` reads the
stored measurement back.

``--quick``: views 4 and 16, one timed call each, no associative scan, exponents fitted from
4 views (below the spec's range, where fixed costs flatten them); nothing is written to the
workdir (only the record). Spec targets (§7): the SSM's time exponent <= 1.2 and the
attention's >= 1.8 over 32-512 views; at 128 views the SSM takes <= 0.25x the attention's time.
"""

from __future__ import annotations

import json
import pathlib
import time

from experiments.flashssm3d import scaling
from experiments.flashssm3d.configs import default
from jaxpapers import core
from jaxpapers.core import benchmark as bench

NAME = "flashssm3d_scaling"
VIEWS = (4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)


def parse_args(argv=None):
  p = bench.parser(NAME, __doc__)
  p.add_argument("--max_views", type=int, default=512)
  p.add_argument(
    "--views", default="", help="comma-separated view counts (default: the sizes in VIEWS)"
  )
  p.add_argument("--width", type=int, default=64)
  p.add_argument("--depth", type=int, default=2)
  p.add_argument("--repeats", type=int, default=3)
  p.add_argument("--memory_cap_gb", type=float, default=3.0)
  p.add_argument("--no_associative", action="store_true")
  p.add_argument(
    "--workdir", default="runs/flashssm3d_scaling", help="scaling.json, results.json, the plot"
  )
  p.add_argument(
    "--time_cap_s",
    type=float,
    default=None,
    help="stop a model once one forward pass takes longer than this (default: the config's)",
  )
  return p.parse_args(argv)


def _summary(res, cfg):
  out = []
  lo, hi = cfg["fit_min_views"], max(cfg["views"])
  for name, rule, what in (
    ("student_ssm", "<= 1.2", "SSM student (lax.scan)"),
    ("teacher_attention", ">= 1.8", "attention teacher"),
  ):
    r = res.get(name)
    if r and r["time_fit_points"] >= 2:
      out.append(
        bench.summary(
          f"{what}: forward-time exponent in views, {lo}-{hi} views",
          r["time_exponent"],
          rule,
          unit="",
          note=f"± {r['time_exponent_ci95']:.2f} (95% CI, {r['time_fit_points']} sizes); spec §7 "
          "(over 32-512 views)",
        )
      )
  views = list(cfg["views"])
  if 128 in views and "student_ssm" in res and "teacher_attention" in res:
    i = views.index(128)
    ssm, att = res["student_ssm"]["time_s"][i], res["teacher_attention"]["time_s"][i]
    out.append(
      bench.summary(
        "SSM student / attention teacher forward time at 128 views",
        ssm / att,
        "<= 0.25",
        note="spec §7",
      )
    )
  return out


def main(argv=None):
  a = parse_args(argv)
  host = bench.host_info()
  t0 = time.perf_counter()
  cfg = dict(default.get_config().scaling)
  if a.quick:
    cfg.update(views=(4, 16), repeats=1, associative=False, fit_min_views=4)
  else:
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
  if a.quick:  # measured afresh, nothing cached or written in the workdir
    res = scaling.run_scaling(cfg)
  else:
    res = _run_into_workdir(cfg, pathlib.Path(a.workdir), t0)
  rows = [
    {"case": name, "params": res["params"].get(name), "views": list(cfg["views"]), **res[name]}
    for name in ("student_ssm", "student_ssm_associative", "teacher_attention")
    if name in res
  ]
  bench.write(NAME, a, rows=rows, summary=_summary(res, cfg), host=host, argv=argv)


def _run_into_workdir(cfg, out, t0):
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
  return res


if __name__ == "__main__":
  main()
