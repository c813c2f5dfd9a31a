"""Window means of per-frame scores (float64 NumPy, eager), for running
baselines at a window.

LogSTOP with window w averages each atom over the w frames [t, min(t + w, T))
and steps its temporal operators by w. Scored at t = 0 this equals LogSTOP with
window 1 on the block means of `block_means`, so a per-frame baseline
(`exact_probability`, `mean_score`) run on block means sees the same window.
`sliding_means` gives the window mean at every frame (a per-frame heuristic at
window w), and `centred_means` the centred moving average of the authors' QMTP
benchmark script (its ``smoothing_radius``).

These run on concrete arrays only (not under `jax.jit`): they prepare inputs for
the scorers.
"""

from __future__ import annotations

from collections.abc import Mapping

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpapers.core import validation as V

__all__ = ["block_means", "sliding_means", "centred_means"]


def _as_trace(scores: ArrayLike, name: str) -> np.ndarray:
  v = np.asarray(scores, np.float64)
  if v.ndim < 1:
    raise ValueError(
      f"{name} must have a time axis (shape [..., T]), got shape {v.shape}"
    )
  return v


def _interval_means(
  v: np.ndarray, lo: np.ndarray, hi: np.ndarray
) -> np.ndarray:
  """Means of ``v[..., lo[t]:hi[t]]`` for every t, from one cumulative sum."""
  c = np.concatenate([np.zeros(v.shape[:-1] + (1,)), np.cumsum(v, -1)], -1)
  return (c[..., hi] - c[..., lo]) / (hi - lo)


def block_means(
  props: Mapping[str, ArrayLike], window: int
) -> dict[str, jax.Array]:
  """Each atom's means over the blocks of frames [jw, min((j + 1)w, T)) (w =
  `window`).

  The last block is truncated at the end of the trace (it averages the frames
  left).

  Args:
    props: proposition name -> per-frame scores of shape [..., T] (T >= 1).
    window: the block length w >= 1.

  Returns:
    proposition name -> float32 array of shape [..., ceil(T / w)] (computed in float64).

  Raises:
    TypeError: `props` is not a mapping or `window` not an int. ValueError:
      `window` < 1, or an entry of `props` has no time axis.
  """
  if not isinstance(props, Mapping):
    raise TypeError(
      "props must be a mapping name -> scores [..., T], "
      f"got {type(props).__name__}"
    )
  w = V.check_int(window, "window", min_value=1)
  out = {}
  for name, v in props.items():
    v = _as_trace(v, f"props[{name!r}]")
    T = v.shape[-1]
    nb = -(-T // w)
    pad = np.zeros(v.shape[:-1] + (nb * w - T,))
    sums = np.concatenate([v, pad], -1).reshape(v.shape[:-1] + (nb, w)).sum(-1)
    counts = np.minimum(w, T - w * np.arange(nb))
    out[name] = jnp.asarray(sums / counts, jnp.float32)
  return out


def sliding_means(scores: ArrayLike, window: int) -> np.ndarray:
  """The mean of the frames [t, min(t + w, T)) at every frame t (w = `window`).

  Args:
    scores: per-frame scores of shape [..., T].
    window: the window w >= 1; windows are truncated at the end of the trace.

  Returns:
    float64 array of shape [..., T].

  Raises:
    TypeError: `window` is not an int. ValueError: `window` < 1 or `scores` is a
      scalar.
  """
  w = V.check_int(window, "window", min_value=1)
  v = _as_trace(scores, "scores")
  T = v.shape[-1]
  hi = np.minimum(np.arange(T) + w, T)
  return _interval_means(v, np.arange(T), hi)


def centred_means(scores: ArrayLike, radius: int) -> np.ndarray:
  """Centred moving average: the mean of the frames [t - r, t + r] at every
  frame t (r = `radius`).

  Windows are truncated at both ends of the trace; radius 0 returns the scores
  unchanged.

  Args:
    scores: per-frame scores of shape [..., T].
    radius: the radius r >= 0.

  Returns:
    float64 array of shape [..., T].

  Raises:
    TypeError: `radius` is not an int. ValueError: `radius` < 0 or `scores` is a
      scalar.
  """
  r = V.check_int(radius, "radius", min_value=0)
  v = _as_trace(scores, "scores")
  if r == 0:
    return v
  T = v.shape[-1]
  t = np.arange(T)
  return _interval_means(v, np.maximum(t - r, 0), np.minimum(t + r, T - 1) + 1)
