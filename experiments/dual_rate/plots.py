"""The dual-rate experiment's figures: quality against compute, and sample grids."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from jaxpapers import core

# (method, interval K or None for every K, matplotlib format) of each curve, in legend order.
FAMILIES = (
  ("baseline", None, "k-o"),
  ("dual-rate", 1, "C0-s"),
  ("dual-rate", 2, "C1-^"),
  ("dual-rate", 4, "C2-v"),
  ("dual-rate", 8, "C3-D"),
  ("no-features", None, "C7-x"),
  ("fresh-only", 4, "C8:v"),
  ("mmd-baseline", None, "C4--o"),
  ("mmd-dual-rate", None, "C5--s"),
  ("dual-rate/rollout", None, "C9:^"),
  ("dual-rate/ddim", None, "C6:<"),
  ("baseline/heun", None, "k--x"),
  ("dual-rate/heun", None, "C0--x"),
)


def sample_grid_keys(cfg) -> list[tuple[str, int, int]]:
  """The ``(method, steps, interval_K)`` rows whose sample grids the samples figure shows.

  The figure reads these grids of the first training seed's record only (a cell's other
  grids are kept by the run but read by nothing).
  """
  return [
    ("baseline", max(cfg.baseline_steps), 1),
    ("dual-rate", max(cfg.dual_steps), max(cfg.dual_intervals)),
    ("mmd-baseline", max(cfg.mmd_steps, default=0), 1),
    ("mmd-dual-rate", max(cfg.mmd_dual_steps, default=0), cfg.mmd_dual_interval),
  ]


def grid_image(samples, cols):
  """Tile [N, H, W, C] images in [-1, 1] into one [rows*(H+1), cols*(W+1), 3] RGB array in [0, 1]."""
  s = np.clip((np.asarray(samples) + 1.0) / 2.0, 0.0, 1.0)
  if s.shape[-1] == 1:
    s = np.repeat(s, 3, axis=-1)
  n, h, w, _ = s.shape
  rows = -(-n // cols)
  canvas = np.zeros((rows * (h + 1), cols * (w + 1), 3))
  for i in range(n):
    r, c = divmod(i, cols)
    canvas[r * (h + 1) : r * (h + 1) + h, c * (w + 1) : c * (w + 1) + w] = s[i]
  return canvas


def quality_vs_cost(workdir, rows, floor, *, dataset, n_eval, fd_reference):
  """FD-proxy against MFLOPs per sample of every row (labels: steps), with the real floor.

  Saved as ``<workdir>/quality_vs_cost.png``.
  """
  fig, ax = plt.subplots(figsize=(7, 4.5))
  for method, k, style in FAMILIES:
    rr = sorted(
      [r for r in rows if r["method"] == method and (k is None or r["interval_K"] == k)],
      key=lambda r: r["mflops_per_sample"],
    )
    if rr:
      lab = method if k is None else f"{method} K={k}"
      ax.errorbar(
        [r["mflops_per_sample"] for r in rr],
        [r["fd_mean"] for r in rr],
        yerr=[r["fd_std"] for r in rr],
        fmt=style,
        label=lab,
        capsize=2,
      )
      for r in rr:
        ax.annotate(
          str(r["steps"]),
          (r["mflops_per_sample"], r["fd_mean"]),
          fontsize=7,
          xytext=(2, 2),
          textcoords="offset points",
        )
  ax.axhline(floor["fd"], color="gray", ls=":", label=f"real-vs-real floor ({fd_reference})")
  ax.set_xscale("log")
  ax.set_yscale("log")
  ax.set_xlabel("MFLOPs per sample (XLA cost analysis x exact call counts)")
  ax.set_ylabel(f"FD-proxy (classifier features, N={n_eval}, {fd_reference} reference)")
  ax.set_title(f"Dual-Rate Diffusion on {dataset}: quality vs compute (labels = steps)")
  ax.legend(fontsize=7)
  core.save_figure(fig, workdir, "quality_vs_cost")


def samples(workdir, grids, real, cfg):
  """Real test images beside the grids of :func:`sample_grid_keys`; ``<workdir>/samples.png``.

  ``grids``: ``(method, steps, interval_K) -> [n, H, W, C]`` samples in [-1, 1].
  """
  show = [s for s in sample_grid_keys(cfg) if s in grids]
  fig, axes = plt.subplots(1, len(show) + 1, figsize=(3.2 * (len(show) + 1), 3.4), squeeze=False)
  axes = axes[0]
  axes[0].imshow(grid_image(real[: cfg.grid_samples], 8))
  axes[0].set_title("real (test)", fontsize=8)
  for a, key in zip(axes[1:], show):
    a.imshow(grid_image(grids[key], 8))
    a.set_title(f"{key[0]} N={key[1]} K={key[2]}", fontsize=8)
  for a in axes:
    a.axis("off")
  core.save_figure(fig, workdir, "samples")
