"""The FLOP profile of ``benchmarks/flashssm3d_scaling.py``: XLA cost analysis
and its fit.

A toy multi-view model with a known cost (a per-view projection, linear in the
views, and a Gram matrix over all views, quadratic) checks that the fit recovers
the closed-form linear and quadratic coefficients and that the fitted exponent
between two view counts is the log-log slope of ``c + a S + b S^2``.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import pytest
from flax import nnx

from benchmarks import flashssm3d_scaling as fsb

H = 4  # image side: D = H * H * 3 = 48 features per view
D = H * H * 3
P = 8  # projected features per view


class _Toy(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones((D, P)) / D)

  def __call__(self, x):  # [1, S, H, H, 3]
    f = x.reshape(x.shape[1], D) @ self.w  # [S, P]: 2 S D P FLOPs
    return f @ f.T  # [S, S]: 2 S^2 P FLOPs


def test_flop_profile_recovers_linear_and_quadratic_costs():
  prof = fsb.flop_profile(_Toy(), (2, 4, 8, 16), H)
  for v, f in zip(prof["views"], prof["flops"], strict=True):
    assert f == pytest.approx(2 * v * D * P + 2 * v * v * P, rel=0.05)
  assert prof["linear_flops_per_view"] == pytest.approx(2 * D * P, rel=0.05)
  assert prof["quadratic_flops_per_view2"] == pytest.approx(2 * P, rel=0.05)
  assert prof["quadratic_equals_linear_at_views"] == pytest.approx(D, rel=0.1)
  assert prof["fit_max_rel_error"] < 0.05


def test_fitted_exponent_is_the_log_log_slope():
  prof = {
    "constant_flops": 0.0,
    "linear_flops_per_view": 3.0,
    "quadratic_flops_per_view2": 0.0,
  }
  assert fsb.fitted_exponent(prof, 4, 64) == pytest.approx(1.0)
  prof = {
    "constant_flops": 0.0,
    "linear_flops_per_view": 0.0,
    "quadratic_flops_per_view2": 2.0,
  }
  assert fsb.fitted_exponent(prof, 4, 64) == pytest.approx(2.0)
  prof = {
    "constant_flops": 5.0,
    "linear_flops_per_view": 10.0,
    "quadratic_flops_per_view2": 1.0,
  }
  f = lambda s: 5.0 + 10.0 * s + s * s
  want = math.log(f(512) / f(32)) / math.log(16)
  assert fsb.fitted_exponent(prof, 32, 512) == pytest.approx(want)
  assert 1.0 < want < 2.0
