"""core.results.palette_png / save_figure: palette PNGs that look the same, or
the original."""

import io

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
from PIL import Image

from jaxpapers import core
from jaxpapers.core import results as results_lib


def _plot():
  fig, ax = plt.subplots(figsize=(4, 3))
  x = np.linspace(0, 1, 50)
  for i in range(8):
    ax.plot(x, np.sin(3 * x + i), label=f"series {i}")
  ax.fill_between(x, -0.2, 0.2, alpha=0.2)
  ax.legend(fontsize=6)
  return fig


def _rgb(data):
  return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"), np.int16)


def test_a_plot_becomes_a_smaller_palette_png_within_the_error_bound():
  buf = io.BytesIO()
  fig = _plot()
  fig.savefig(buf, format="png", dpi=80)
  plt.close(fig)
  data = buf.getvalue()
  small = results_lib.palette_png(data)
  assert small is not None and len(small) < len(data)
  assert Image.open(io.BytesIO(small)).mode == "P"
  assert np.abs(_rgb(small) - _rgb(data)).max() <= results_lib.PNG_MAX_ERR
  assert results_lib.palette_png(small) is None  # already a palette image


def test_images_a_palette_cannot_hold_are_left_as_they_are():
  rng = np.random.default_rng(0)
  noise = Image.fromarray(rng.integers(0, 256, (64, 64, 3), dtype=np.uint8))
  buf = io.BytesIO()
  noise.save(buf, "PNG")
  # 4096 colours far apart
  assert results_lib.palette_png(buf.getvalue()) is None
  clear = Image.new("RGBA", (8, 8), (255, 0, 0, 0))
  buf = io.BytesIO()
  clear.save(buf, "PNG")
  assert results_lib.palette_png(buf.getvalue()) is None  # transparency kept


def test_save_figure_writes_the_palette_png(tmp_path):
  path = core.save_figure(_plot(), tmp_path, "curves", dpi=80)
  assert path.name == "curves.png" and Image.open(path).mode == "P"
