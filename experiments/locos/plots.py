"""The LOCOS experiment's figure: score against the number of heads ablated."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from experiments.locos.evaluate import DETECTORS


def curves_figure(panels, title):
  """One panel per curve set (name -> curve of evaluate._curves or ablation_curve): the
  score against k heads ablated for every detector and random heads, with 95 % intervals."""
  fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 3.8), squeeze=False)
  for ax, (name, curve) in zip(axes[0], panels.items()):
    ks = curve["ks"]
    ax.axhline(curve["baseline"]["mean"], color="k", ls=":", lw=1, label="no ablation")
    for det in list(DETECTORS) + ["random"]:
      if det not in curve:
        continue
      m = np.asarray(curve[det]["mean"], float)  # NaN: a cell not run
      err = np.stack(
        [m - np.asarray(curve[det]["lo"], float), np.asarray(curve[det]["hi"], float) - m]
      )
      ax.errorbar(
        ks,
        m,
        yerr=np.maximum(err, 0),
        marker="o",
        capsize=3,
        label=det,
        ls="--" if det == "random" else "-",
      )
    ax.set_xlabel("heads ablated (k)")
    ax.set_ylabel("score")
    ax.set_title(name)
    ax.set_ylim(-0.05, 1.05)
  axes[0][0].legend(fontsize=7)
  fig.suptitle(title)
  fig.tight_layout()
  return fig
