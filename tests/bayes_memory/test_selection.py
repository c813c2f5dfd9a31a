"""Greedy set selection on closed-form (modular) scorers."""

import numpy as np
import pytest

from jaxpapers import bayes_memory as bm


def _modular(base, w):
  """log p(y_q | S) = base_q + Σ_{j in S} w_q[j]; also records every call's requests."""
  calls = []

  def score(requests):
    calls.append(list(requests))
    return np.array([base[q] + sum(w[q][j] for j in s) for q, s in requests])

  return score, calls


def test_modular_scores_select_the_positive_weights_in_decreasing_order():
  w = [
    np.array([0.5, -1.0, 2.0, 0.2]),
    np.array([-0.1, -0.3]),
    np.array([3.0, 1.0, 0.05]),
  ]
  score, calls = _modular([-5.0, -2.0, -7.0], w)
  out = bm.greedy_select(score, [4, 2, 3], k_max=2, tau=0.1)
  assert [o.selected for o in out] == [(2, 0), (), (0, 1)]
  np.testing.assert_allclose(out[0].gains, [2.0, 0.5])
  assert out[0].logprob == pytest.approx(-2.5) and out[0].base_logprob == -5.0
  assert out[1].logprob == -2.0 and out[1].gains == ()
  # one batched call per step: step 1 (empty sets + singles), step 2 (pairs of
  # q0 and q2)
  assert len(calls) == 2 and len(calls[0]) == 3 + 9 and len(calls[1]) == 3 + 2
  assert [o.n_scored for o in out] == [1 + 4 + 3, 1 + 2, 1 + 3 + 2]


def test_tau_minus_inf_fills_k_max_and_empty_histories_are_skipped():
  score, _ = _modular([0.0, 1.0], [np.array([-1.0, -2.0, -0.5]), np.array([])])
  out = bm.greedy_select(score, [3, 0], k_max=5, tau=-np.inf)
  assert out[0].selected == (2, 0, 1) and out[0].logprob == pytest.approx(-3.5)
  assert out[1].selected == () and out[1].n_scored == 1


def test_contradicting_turn_is_not_added():
  """Non-modular: turn 1 (stale) helps alone but hurts once turn 0 (current) is
  chosen."""
  table = {(): 0.0, (0,): 3.0, (1,): 1.0, (0, 1): 2.0}
  out = bm.greedy_select(
    lambda r: np.array([table[s] for _, s in r]), [2], k_max=2
  )
  assert out[0].selected == (0,) and out[0].gains == (3.0,)
