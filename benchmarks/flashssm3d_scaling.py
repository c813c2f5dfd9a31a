"""FlashSSM-3D view-scaling benchmark: SSM student vs attention teacher, side by side in one run.

    python benchmarks/flashssm3d_scaling.py --max_views=512 --out=runs/flashssm3d_scaling

Prints time and peak-buffer estimates per number of views, the fitted log-log exponents, and how
many views each model processes within 10 s on this machine; writes a PNG and a JSON. Rerunning
with the same settings and --out reads the stored measurement back.
"""

import argparse
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from experiments.flashssm3d import scaling  # noqa: E402
from experiments.flashssm3d.configs import default  # noqa: E402


def main():
  p = argparse.ArgumentParser()
  p.add_argument("--max_views", type=int, default=512)
  p.add_argument("--width", type=int, default=64)
  p.add_argument("--depth", type=int, default=2)
  p.add_argument("--out", default="runs/flashssm3d_scaling")
  p.add_argument(
    "--time_cap_s",
    type=float,
    default=None,
    help="stop a model once one forward pass takes longer than this (default: the config's)",
  )
  a = p.parse_args()
  cfg = dict(default.get_config().scaling)
  if a.max_views != 512 or a.width != cfg["width"] or a.depth != cfg["depth"]:
    cfg.update(
      views=tuple(v for v in (8, 16, 32, 64, 128, 256, 512, 1024, 2048) if v <= a.max_views),
      width=a.width,
      depth=a.depth,
    )
  if a.time_cap_s is not None:
    cfg.update(time_cap_s=a.time_cap_s)
  out = pathlib.Path(a.out)
  res = scaling.cached_scaling(cfg, out)  # also reused by the experiment run on this workdir
  (out / "scaling.json").write_text(json.dumps(res))
  scaling.plot_scaling(res).savefig(out / "scaling.png", dpi=120)
  for name in ("student_ssm", "teacher_attention"):
    r = res[name]
    print(
      f"{name}: time exponent {r['time_exponent']:.2f}, memory exponent {r['memory_exponent']:.2f}, "
      f"views in 10 s: measured {r['views_in_10s_measured']}, fit {r['views_in_10s_fit']:.0f}"
    )


if __name__ == "__main__":
  main()
