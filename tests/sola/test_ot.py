"""Entropic OT against a float64 numpy log-domain Sinkhorn; the dummy-bucket
padding."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import logsumexp

import jaxpapers.sola as S


def sinkhorn_ref(a, b, c, eps, iters=3000):
  """Float64 log-domain Sinkhorn; returns the plan."""
  f, g = np.zeros(len(a)), np.zeros(len(b))
  for _ in range(iters):
    f = eps * np.log(a) - eps * logsumexp((g[None, :] - c) / eps, axis=1)
    g = eps * np.log(b) - eps * logsumexp((f[:, None] - c) / eps, axis=0)
  return np.exp((f[:, None] + g[None, :] - c) / eps)


@pytest.fixture(scope="module")
def problems():
  rng = np.random.default_rng(0)
  a = rng.dirichlet(np.ones(6), 3)
  b = rng.dirichlet(np.ones(5), 3)
  c = rng.random((3, 6, 5))
  return a, b, c


def test_transport_and_regularized_values_match_reference(problems):
  a, b, c = problems
  eps = 0.1
  got_t = S.entropic_ot_cost(
    *(x.astype(np.float32) for x in problems), epsilon=eps, iters=100
  )
  got_r = S.entropic_ot_cost(
    *(x.astype(np.float32) for x in problems),
    epsilon=eps,
    iters=100,
    value=("regularized"),
  )
  for i in range(3):
    p = sinkhorn_ref(a[i], b[i], c[i], eps)
    kl = (p * np.log(p / np.outer(a[i], b[i]))).sum()
    assert got_t[i] == pytest.approx((p * c[i]).sum(), abs=2e-5)
    assert got_r[i] == pytest.approx((p * c[i]).sum() + eps * kl, abs=2e-5)


def test_plan_marginals(problems):
  a, b, c = (x.astype(np.float32) for x in problems)
  plan = np.asarray(S.entropic_ot_plan(a, b, c, epsilon=0.1, iters=100))
  np.testing.assert_allclose(plan.sum(-1), a, atol=1e-5)
  np.testing.assert_allclose(plan.sum(-2), b, atol=1e-5)
  ref = sinkhorn_ref(problems[0][0], problems[1][0], problems[2][0], 0.1)
  np.testing.assert_allclose(plan[0], ref, atol=1e-5)


def test_dummy_bucket_keeps_the_value_and_gives_finite_gradients():
  rng = np.random.default_rng(1)
  p = rng.dirichlet(np.ones(4)).astype(np.float32)
  logits = rng.normal(size=3).astype(np.float32)
  c = rng.random((4, 3)).astype(np.float32)
  ref = S.entropic_ot_cost(
    p, np.asarray(jax.nn.softmax(logits)), c, epsilon=0.1, iters=30
  )

  @jax.jit
  @jax.value_and_grad
  def padded(lg):
    lg6 = jnp.concatenate([lg, jnp.full(3, -jnp.inf)])  # padded student logits
    q = jax.nn.softmax(lg6)
    pm, qm = np.arange(7) < 4, np.arange(6) < 3
    pp = jnp.concatenate([p, jnp.zeros(3)])
    cc = jnp.zeros((7, 6)).at[:4, :3].set(c)
    a, b, c2 = S.pad_with_dummy_bucket(pp, pm, q, qm, cc, delta=1e-6)
    return S.entropic_ot_cost(a, b, c2, epsilon=0.1, iters=30)

  value, g = padded(jnp.asarray(logits))
  assert float(value) == pytest.approx(float(ref), abs=5e-6)
  assert np.all(np.isfinite(g))
  g_ref = jax.jit(
    jax.grad(
      lambda lg: S.entropic_ot_cost(
        p, jax.nn.softmax(lg), c, epsilon=0.1, iters=30
      )
    )
  )(jnp.asarray(logits))
  np.testing.assert_allclose(g, g_ref, atol=1e-5)


def test_dummy_bucket_masses():
  p = np.array([[2.0, 1.0, 5.0]], np.float32)
  q = np.array([[1.0, 3.0]], np.float32)
  a, b, c = S.pad_with_dummy_bucket(
    p,
    np.array([[True, True, False]]),
    q,
    np.array([[True, True]]),
    np.zeros((1, 3, 2), np.float32),
    delta=0.01,
  )
  np.testing.assert_allclose(a, [[0.99 * 2 / 3, 0.99 / 3, 0.01]], rtol=1e-6)
  # no pad: sums to 0.99
  np.testing.assert_allclose(b, [[0.99 / 4, 0.99 * 3 / 4]], rtol=1e-6)
  np.testing.assert_allclose(c[0, 2], [1.0, 1.0])


@pytest.mark.parametrize("iters", [1, 5, 7, 12, 25])
def test_runs_exactly_iters_sinkhorn_iterations(iters):
  """The plan after ``iters`` iterations equals the float64 oracle's after as
  many (g, then f).

  ott runs whole blocks of ``inner_iterations``; with its default of 10, iters =
  5 would run none (a plan constant in a and b: zero gradients) and iters = 25
  would run 20.
  """
  rng = np.random.default_rng(iters)
  a, b, c, eps = (
    rng.dirichlet(np.ones(6)),
    rng.dirichlet(np.ones(5)),
    rng.random((6, 5)),
    0.1,
  )
  f, g = np.zeros(6), np.zeros(5)
  for _ in range(iters):
    g = eps * np.log(b) - eps * logsumexp((f[:, None] - c) / eps, axis=0)
    f = eps * np.log(a) - eps * logsumexp((g[None, :] - c) / eps, axis=1)
  want = np.exp((f[:, None] + g[None, :] - c) / eps)
  got = S.entropic_ot_plan(
    *(x.astype(np.float32) for x in (a, b, c)), epsilon=eps, iters=iters
  )
  np.testing.assert_allclose(np.asarray(got), want, atol=1e-6)


def _padded_problem(seed, n_t, n_s, m):
  """Teacher masses, cost and student logits with n_t / n_s real entries, padded
  to m slots."""
  rng = np.random.default_rng(seed)
  p = np.concatenate([rng.dirichlet(np.ones(n_t)), np.zeros(m - n_t)])
  c = np.zeros((m, m))
  c[:n_t, :n_s] = rng.random((n_t, n_s))
  return p, c, rng.normal(size=n_s)


def _padded_value(lg, p, c, *, eps, iters, unroll):
  """Transport value as a function of the student's real logits, through the
  dummy bucket."""
  m, n_s = c.shape[1], lg.shape[0]
  q = jax.nn.softmax(
    jnp.concatenate([lg, jnp.full(m - n_s, -jnp.inf, lg.dtype)])
  )
  a, b, cc = S.pad_with_dummy_bucket(
    jnp.asarray(p, lg.dtype),
    p > 0,
    q,
    np.arange(m) < n_s,
    jnp.asarray(c, lg.dtype),
  )
  return S.entropic_ot_cost(a, b, cc, epsilon=eps, iters=iters, unroll=unroll)


def _oracle_value(lg, p, c, *, eps, iters):
  """Float64 numpy: the same padding, ``iters`` log-domain iterations (g, then
  f), <C, P>.

  ``lg`` may carry leading batch axes (one independent problem per row, same
  ``p`` and ``c``).
  """
  lg = np.asarray(lg, np.float64)
  m, n_s = c.shape[1], lg.shape[-1]
  pm, qm = p > 0, np.arange(m) < n_s
  q = np.exp(lg - logsumexp(lg, axis=-1, keepdims=True))
  a = np.where(pm, (1 - 1e-6) * p / p.sum(), 1e-6 / (~pm).sum())
  pad = np.full(lg.shape[:-1] + (m - n_s,), 1e-6 / (m - n_s))
  b = np.concatenate([(1 - 1e-6) * q, pad], axis=-1)
  cc = np.where(
    pm[:, None] & qm[None, :],
    c,
    np.where(~pm[:, None] & ~qm[None, :], 0.0, 1.0),
  )
  f, g = np.zeros(lg.shape[:-1] + a.shape), np.zeros(b.shape)
  for _ in range(iters):
    g = eps * np.log(b) - eps * logsumexp((f[..., :, None] - cc) / eps, axis=-2)
    f = eps * np.log(a) - eps * logsumexp((g[..., None, :] - cc) / eps, axis=-1)
  return (np.exp((f[..., :, None] + g[..., None, :] - cc) / eps) * cc).sum(
    (-2, -1)
  )


def _oracle_grad(lg, *args, h=1e-6, **kw):
  """Central differences of :func:`_oracle_value`, all 2n perturbed problems as
  one batch."""
  e = h * np.eye(len(lg))
  v = _oracle_value(np.concatenate([lg + e, lg - e]), *args, **kw)
  return (v[: len(lg)] - v[len(lg) :]) / (2 * h)


@pytest.mark.parametrize("iters", [20, 30])
def test_unrolled_gradient_is_the_derivative_of_the_iterations(iters):
  """Unrolled gradients equal float64 central differences of the oracle with as
  many iterations.

  ott 0.6.0's checkpointed backward pass with min = max iterations read its
  checkpoints in the wrong order; that gradient was 15-20% off here (and not the
  converged gradient either).
  """
  p, c, lg = _padded_problem(iters, 6, 5, 8)
  want = _oracle_grad(lg, p, c, eps=0.05, iters=iters)
  grad = jax.jit(
    jax.grad(_padded_value), static_argnames=("eps", "iters", "unroll")
  )
  with jax.enable_x64(True):
    g64 = grad(jnp.asarray(lg), p, c, eps=0.05, iters=iters, unroll=True)
  np.testing.assert_allclose(np.asarray(g64), want, atol=1e-7)
  g32 = grad(
    jnp.asarray(lg, jnp.float32), p, c, eps=0.05, iters=iters, unroll=True
  )
  np.testing.assert_allclose(np.asarray(g32), want, atol=2e-5)


def test_implicit_gradient_matches_the_converged_derivative():
  """Implicit differentiation equals float64 central differences of the
  converged oracle, and, in float32 on a batch at the loss's padded size,
  float64 unrolled gradients of a converged Sinkhorn.

  ott's default implicit system (eps*log-preconditioned, non-symmetric, lineax
  NormalCG, no ridge) made the float32 batch below raise (the linear solve
  returned non-finite output).
  """
  p, c, lg = _padded_problem(0, 6, 5, 8)
  want = _oracle_grad(lg, p, c, eps=0.05, iters=2000)
  grad = jax.jit(
    jax.grad(_padded_value), static_argnames=("eps", "iters", "unroll")
  )
  with jax.enable_x64(True):
    g64 = grad(jnp.asarray(lg), p, c, eps=0.05, iters=300, unroll=False)
  np.testing.assert_allclose(np.asarray(g64), want, atol=1e-7)

  rng, b_sz, m = np.random.default_rng(0), 16, 41
  p, c, lg = (
    np.zeros((b_sz, m)),
    np.zeros((b_sz, m, m)),
    np.full((b_sz, m), -np.inf),
  )
  for i, (n_t, n_s) in enumerate(rng.integers(2, m, (b_sz, 2))):
    p[i, :n_t] = rng.dirichlet(np.ones(n_t))
    c[i, :n_t, :n_s] = rng.random((n_t, n_s))
    lg[i, :n_s] = 2 * rng.normal(size=n_s)

  def total(lg, p, c, iters, unroll):
    q = jax.nn.softmax(lg, -1)
    a, b, cc = S.pad_with_dummy_bucket(p, p > 0, q, jnp.isfinite(lg), c)
    return S.entropic_ot_cost(
      a, b, cc, epsilon=0.05, iters=iters, unroll=unroll
    ).sum()

  bgrad = jax.jit(jax.grad(total), static_argnums=(3, 4))
  got = np.asarray(
    bgrad(*(jnp.asarray(x, jnp.float32) for x in (lg, p, c)), 300, False)
  )
  with jax.enable_x64(True):
    # 500 iterations are converged here: 2000 move these gradients by less than
    # 1e-9
    ref = np.asarray(
      bgrad(jnp.asarray(lg), jnp.asarray(p), jnp.asarray(c), 500, True)
    )
  real = np.isfinite(lg)
  assert np.all(np.isfinite(got[real]))
  np.testing.assert_allclose(got[real], ref[real], atol=1e-6)
