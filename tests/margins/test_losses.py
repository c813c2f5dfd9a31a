"""Losses against float64 numpy references; fitting; gradients at zero rows."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpapers.margins as M
from jaxpapers.margins import _losses
from tests.jit_util import count_traces


def _np_scores(U, V):
  U = U / np.sqrt((U**2).sum(1, keepdims=True) + 1e-12)
  V = V / np.sqrt((V**2).sum(1, keepdims=True) + 1e-12)
  return U @ V.T


def _np_lse(x, axis=None):
  m = np.max(x, axis=axis, keepdims=True)
  return (m + np.log(np.exp(x - m).sum(axis=axis, keepdims=True))).squeeze(axis)


def _np_infonce(S, A, t, variant):
  total, rows = 0.0, 0
  for j in range(A.shape[0]):
    P = np.flatnonzero(A[j])
    if len(P) == 0:
      continue
    acc = 0.0
    for i in P:
      if variant == "all":
        denom = np.exp(t * S[j]).sum()
      else:
        denom = np.exp(t * S[j, i]) + np.exp(t * S[j, ~A[j]]).sum()
      acc += -np.log(np.exp(t * S[j, i]) / denom)
    total += acc / len(P)
    rows += 1
  return total / rows


@pytest.fixture
def problem():
  rng = np.random.default_rng(0)
  U, V = rng.normal(size=(6, 4)), rng.normal(size=(5, 4))
  A = rng.random((6, 5)) < 0.4
  A[0] = False  # a row without positives is skipped by InfoNCE
  A[1, :2] = True
  return U, V, A


def test_sigmoid_loss_float64(problem):
  U, V, A = problem
  S, Y = _np_scores(U, V), np.where(A, 1.0, -1.0)
  t, b = 7.0, -1.3
  ref = np.mean(np.logaddexp(0.0, -Y * (t * S + b)))
  got = M.sigmoid_loss(
    U.astype(np.float32),
    V.astype(np.float32),
    A,
    log_temperature=math.log(t),
    bias=b,
  )
  np.testing.assert_allclose(float(got), ref, rtol=1e-5)


@pytest.mark.parametrize("variant", ["all", "exclude_other_positives"])
def test_infonce_loss_float64(problem, variant):
  U, V, A = problem
  S, t = _np_scores(U, V), 5.0
  ref = _np_infonce(S, A, t, variant)
  got = M.infonce_loss(
    U.astype(np.float32),
    V.astype(np.float32),
    A,
    log_temperature=math.log(t),
    variant=variant,
  )
  np.testing.assert_allclose(float(got), ref, rtol=1e-5)
  sym = M.infonce_loss(
    U.astype(np.float32),
    V.astype(np.float32),
    A,
    log_temperature=math.log(t),
    variant=variant,
    symmetric=True,
  )
  ref_sym = 0.5 * (ref + _np_infonce(S.T, A.T, t, variant))
  np.testing.assert_allclose(float(sym), ref_sym, rtol=1e-5)


def test_margin_loss_float64_and_soft_min_bracket(problem):
  U, V, A = problem
  YS = np.where(A, 1.0, -1.0) * _np_scores(U, V)
  for beta in (5.0, 80.0):
    ref = _np_lse(-beta * YS.ravel()) / beta
    got = float(
      M.margin_loss(U.astype(np.float32), V.astype(np.float32), A, beta=beta)
    )
    np.testing.assert_allclose(got, ref, rtol=1e-5)
    m0 = YS.min()
    assert m0 - math.log(A.size) / beta - 1e-5 <= -got <= m0 + 1e-5
  hinge = M.margin_loss(
    U.astype(np.float32), V.astype(np.float32), A, hinge_target=0.2
  )
  np.testing.assert_allclose(
    float(hinge), np.mean(np.maximum(0.2 - YS, 0)), rtol=1e-5
  )


def test_infonce_invariant_to_row_shifts_of_scores(problem):
  _, _, A = problem
  rng = np.random.default_rng(3)
  logits = rng.normal(size=A.shape) * 3
  shift = rng.normal(size=(A.shape[0], 1)) * 10
  for variant in ("all", "exclude_other_positives"):
    a = _losses._infonce_rows(jnp.asarray(logits), jnp.asarray(A), variant)
    b = _losses._infonce_rows(
      jnp.asarray(logits + shift), jnp.asarray(A), variant
    )
    np.testing.assert_allclose(float(a), float(b), rtol=1e-5)


def test_gradients_finite_at_zero_rows(problem):
  _, V, A = problem
  U = jnp.zeros((6, 4))
  for f in (
    lambda U: M.sigmoid_loss(U, V, A),
    lambda U: M.infonce_loss(U, V, A),
    lambda U: M.margin_loss(U, V, A),
  ):
    g = jax.grad(f)(U)
    assert bool(jnp.all(jnp.isfinite(g)))


def test_loss_validation(problem):
  U, V, A = problem
  with pytest.raises(ValueError, match="variant"):
    M.infonce_loss(U, V, A, variant="bogus")
  with pytest.raises(ValueError, match="shape"):
    M.sigmoid_loss(U, V, A[:, :3])


def test_fit_free_embeddings_margin_and_seeds_no_retrace():
  A = M.k_sparse_relevance(6, 2)
  keys = jax.random.split(jax.random.key(0), 2)
  res = M.fit_free_embeddings(keys, A, 8, loss="margin", steps=400, lr=3e-2)
  assert res.U.shape == (2, 15, 8) and res.history.shape == (2, 400)
  for s in range(2):
    m = float(M.margin(res.U[s], res.V[s], A))
    assert m > 0.25  # exact optimum 0.4096; orthogonal construction 0.261
    assert m <= M.k_sparse_optimal_margin(6, 2) + 1e-5
  with count_traces() as traces:
    M.fit_free_embeddings(
      jax.random.split(jax.random.key(5), 2),
      A,
      8,
      loss="margin",
      steps=400,
      lr=3e-2,
    )
  assert traces["_fit"] == 0  # new seeds and values: no recompilation


def test_fit_sequence_of_dimensions_one_program_per_width():
  """A sequence of dimensions: zero columns beyond each run's width, each
  width's program compiled once and reused by later calls (only the new width
  traces)."""
  A = M.k_sparse_relevance(5, 2)
  keys = jax.random.split(jax.random.key(2), 2)
  res = M.fit_free_embeddings(keys, A, [2, 3], loss="sigmoid", steps=20)
  assert res.U.shape == (2, 2, 10, 3) and res.V.shape == (2, 2, 5, 3)
  assert (
    not np.asarray(res.U[0, :, :, 2:]).any()
    and not np.asarray(res.V[0, :, :, 2:]).any()
  )
  np.testing.assert_allclose(np.linalg.norm(res.U[1], axis=-1), 1.0, rtol=1e-5)
  with count_traces() as traces:
    swapped = M.fit_free_embeddings(keys, A, [3, 2], loss="sigmoid", steps=20)
    M.fit_free_embeddings(keys, A, [4, 2], loss="sigmoid", steps=20)
  assert traces["_fit"] == 1  # width 4 only
  # the same runs, in the order asked for
  for a, b in zip(swapped, res, strict=True):
    np.testing.assert_array_equal(np.asarray(a[::-1]), np.asarray(b))


def test_fit_sigmoid_learns_bias_and_single_key():
  A = M.k_sparse_relevance(6, 2)
  res = M.fit_free_embeddings(
    jax.random.key(1), A, 8, loss="sigmoid", steps=300, lr=3e-2
  )
  assert res.U.shape == (15, 8)
  p = A.mean()
  assert float(res.b) != pytest.approx(math.log(p / (1 - p)))
  assert float(M.topk_accuracy(res.U, res.V, A)) == 1.0
  fixed = M.fit_free_embeddings(
    jax.random.key(1),
    A,
    8,
    loss="sigmoid",
    steps=50,
    learn_bias=False,
    init_bias=0.0,
  )
  assert float(fixed.b) == 0.0
  with pytest.raises(ValueError, match="loss"):
    M.fit_free_embeddings(jax.random.key(1), A, 8, loss="hinge")


def test_critical_n_small():
  # d = 2, k = 1: n unit vectors on a circle are always exactly retrievable
  # (top-1), so the search must reach n_max.
  n_star, trace = M.critical_n(
    jax.random.key(0), 2, 1, n_max=6, restarts=2, steps=300, return_trace=True
  )
  assert n_star == 6 and trace[6] == 1.0
