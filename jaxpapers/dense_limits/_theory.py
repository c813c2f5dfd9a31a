"""The paper's two bounds, made checkable on a run: where the weight bound
binds, and weak regularity.

:func:`lipschitz_summary` says at which weight bounds B a strongly dense MLP
cannot fit a target of a given Lipschitz constant at any width;
:func:`regularity_checks` runs the Frieze-Kannan decomposition of a random ±B
matrix and the cut-norm estimators against exact enumeration, and
:func:`regularity_summary` turns them into the numbers the claims read.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import cast

import jax
import jax.numpy as jnp
import numpy as np

from jaxpapers.core import validation as V
from jaxpapers.dense_limits._cut import (
  cut_norm_exact,
  cut_norm_lb,
  cut_norm_sdp,
)
from jaxpapers.dense_limits._regularity import fk_decompose


def lipschitz_summary(
  target_sd: float, d_in: int, depth: int, bounds: Sequence[float]
) -> dict:
  """Where the weight bound must bind on the bump target (pure).

  The bump target is a sum of disjoint cones ``relu(r - ||x - c||_2)``:
  1-Lipschitz in the ℓ2 norm, with slope exactly 1 inside every cone
  (``bump_target``). It is divided by its train-set standard deviation, so the
  normalised target's Lipschitz constant is ``1 / sd``, attained. A strongly
  dense MLP with ``|w|, |b| <= B``, an unnormalised first layer (``d_in``
  inputs) and ``depth`` hidden layers of mean aggregation is at most
  ``sqrt(d_in) · B^(depth + 1)``-Lipschitz in ℓ2: layer one moves each unit by
  at most ``B ||Δx||_1 <= B sqrt(d_in) ||Δx||_2``, ReLU by at most its input's
  change, and each of the ``depth`` mean layers by at most ``B`` times the
  largest change of its inputs. Below ``B* = (Lip(target) / sqrt(d_in))^(1 /
  (depth + 1))`` no width can fit the target's slopes.

  Args:
    target_sd: the train-set standard deviation the 1-Lipschitz target is
      divided by (> 0).
    d_in: the input dimension.
    depth: the number of hidden layers.
    bounds: the weight bounds B.

  Returns:
    ``{"target": Lip(target), "b_star": B*, "dense_bound": {B: sqrt(d_in)
    B^(depth+1)}, "binds": {B: dense_bound < target}}`` (keys of the per-B maps
    as ``'%g'`` strings).
  """
  if not float(target_sd) > 0:
    raise ValueError(f"target_sd must be > 0, got {target_sd}")
  V.check_int(d_in, "d_in", min_value=1)
  V.check_int(depth, "depth", min_value=0)
  lip = 1.0 / float(target_sd)
  p = depth + 1
  root = float(d_in) ** 0.5
  bound = {f"{b:g}": float(root * b**p) for b in bounds}
  return {
    "target": lip,
    "b_star": float((lip / root) ** (1.0 / p)),
    "dense_bound": bound,
    "binds": {k: v < lip for k, v in bound.items()},
  }


def regularity_checks(
  key: jax.Array,
  *,
  bound: float,
  fk_size: int,
  fk_k: int,
  exact_size: int,
  exact_trials: int,
) -> dict:
  """Weak regularity and the cut-norm estimators on random matrices
  (:func:`regularity_summary`).

  A random ``fk_size``-square ±B matrix is decomposed with ``fk_k``
  Frieze-Kannan steps (32 restarts of 10 iterations); ``exact_trials`` uniform
  matrices on ``[-B, B]`` of side ``exact_size`` get their exact cut norm, the
  local-search lower bound (16 restarts of 10 iterations) and the SDP bracket
  (200 iterations).

  Args:
    key: a typed PRNG key.
    bound: B.
    fk_size, fk_k: the decomposed matrix's side and the number of cut terms.
    exact_size, exact_trials: the side and number of the small matrices.

  Returns:
    :func:`regularity_summary` of the trace and the estimator rows.
  """
  b = bound
  k1, k2, k3 = jax.random.split(key, 3)
  w = b * jnp.where(
    jax.random.bernoulli(k1, 0.5, (fk_size, fk_size)), 1.0, -1.0
  )
  _, trace = fk_decompose(w, fk_k, k2, restarts=32, iters=10)
  rows = []
  for i in range(exact_trials):
    kk = jax.random.fold_in(k3, i)
    m = jax.random.uniform(kk, (exact_size, exact_size), minval=-b, maxval=b)
    sdp = cut_norm_sdp(m, kk, iters=200)
    rows.append(
      {
        # without return_sets: an array
        "exact": float(cast(jax.Array, cut_norm_exact(m))),
        "lb": float(cut_norm_lb(m, kk, restarts=16, iters=10)[0]),
        "sdp_lower": float(sdp.lower),
        "sdp_upper": float(sdp.upper),
      }
    )
  return regularity_summary(trace.cut_found, trace.frob_sq, b, fk_k, rows)


def regularity_summary(
  cut_found, frob_sq, bound: float, k: int, rows: list[dict]
) -> dict:
  """The weak-regularity numbers from the Frieze-Kannan trace and the estimator
  rows (pure).

  Args:
    cut_found: ``[k]`` cut norm of the residual found at each step of the
      decomposition.
    frob_sq: ``[k]`` squared Frobenius norm of the residual at each step.
    bound: the entry bound B of the decomposed matrix.
    k: the number of cut terms; the weak-regularity bound on the residual's cut
      norm is ``B / sqrt(k)``.
    rows: per random matrix ``{"exact", "lb", "sdp_lower", "sdp_upper"}`` cut
      norms.

  Returns:
    ``fk_found``, ``fk_frob_sq`` (lists), ``fk_bound``,
    ``min_found_over_bound``, the rows as ``exact_vs_estimators``,
    ``lb_over_exact_min``, ``sdp_bracket_holds`` and
    ``sdp_upper_over_lower_max``.
  """
  if not rows:
    raise ValueError("rows must hold at least one estimator row")
  found = np.asarray(cut_found)
  fk_bound = bound / math.sqrt(k)
  return {
    "fk_found": found.tolist(),
    "fk_frob_sq": np.asarray(frob_sq).tolist(),
    "fk_bound": fk_bound,
    "min_found_over_bound": float(found.min() / fk_bound),
    "exact_vs_estimators": rows,
    "lb_over_exact_min": float(min(r["lb"] / r["exact"] for r in rows)),
    "sdp_bracket_holds": all(
      r["sdp_lower"] <= r["exact"] * (1 + 1e-5) <= r["sdp_upper"] * (1 + 2e-5)
      for r in rows
    ),
    "sdp_upper_over_lower_max": float(
      max(r["sdp_upper"] / r["sdp_lower"] for r in rows)
    ),
  }
