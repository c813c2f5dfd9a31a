"""The margins and the training losses, with and without ``jax.jit``, against
float64 NumPy.

Keyword settings (``normalize``, ``chunk_size``, ``variant``, temperatures) are
closed over with ``functools.partial``; the embeddings and the relevance matrix
are traced.
"""

import functools

import chex
import jax.numpy as jnp
import numpy as np

import jaxpapers.margins as M


def _problem(seed=0, N=6, n=6, d=4):
  rng = np.random.default_rng(seed)
  U = rng.normal(size=(N, d))
  V = rng.normal(size=(n, d))
  A = rng.random((N, n)) < 0.35
  A[0] = False  # a query without positives
  A[1, :2] = True  # and every other row has at least one
  A[2:, 0] |= ~A[2:].any(1)
  return U, V, A


def _unit(x):
  return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _ref_margins(U, V, A):
  """(m_0, m_g, m_q, top-k accuracy) of unit-row embeddings, float64."""
  S = U @ V.T
  Y = np.where(A, 1.0, -1.0)
  m0 = np.min(Y * S)
  mg = 0.5 * (S[A].min() - S[~A].max())
  mq, correct = np.inf, []
  for s, a in zip(S, A):
    if a.all() or not a.any():
      correct.append(True)
      continue
    mq = min(mq, 0.5 * (s[a].min() - s[~a].max()))
    correct.append(s[a].min() > s[~a].max())
  return m0, mg, mq, np.mean(correct)


def _ref_infonce(S, A, t, exclude):
  losses = []
  for s, a in zip(S * t, A):
    if not a.any():
      continue
    terms = []
    for i in np.flatnonzero(a):
      others = s[~a] if exclude else s
      denom = np.log(np.exp(s[i]) * exclude + np.exp(others).sum())
      terms.append(denom - s[i])
    losses.append(np.mean(terms))
  return np.mean(losses)


class MarginsVariantsTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_three_margins_and_topk_accuracy(self):
    U, V, A = _problem(0)
    f32 = (U.astype(np.float32), V.astype(np.float32), A)
    fns = [
      M.margin,
      M.global_threshold_margin,
      M.per_query_margin,
      M.topk_accuracy,
    ]

    @self.variant
    def margins(U, V, A):
      return tuple(functools.partial(f, normalize=True)(U, V, A) for f in fns)

    got = margins(*f32)
    chex.assert_shape(got, ())
    want = _ref_margins(_unit(U), _unit(V), A)
    chex.assert_trees_all_close(got, want, rtol=1e-5, atol=1e-6)
    # Unit rows need no normalisation: the default path gives the same margin.
    unit = self.variant(M.margin)(
      _unit(U).astype(np.float32), _unit(V).astype(np.float32), A
    )
    chex.assert_trees_all_close(unit, want[0], rtol=1e-5)

  @chex.variants(with_jit=True, without_jit=True)
  def test_all_margins_in_chunks_equals_the_single_margins(self):
    U, V, A = _problem(1)
    fn = self.variant(
      functools.partial(M.all_margins, normalize=True, chunk_size=4)
    )  # two chunks, the last one short
    got = fn(U.astype(np.float32), V.astype(np.float32), A)
    m0, mg, mq, acc = _ref_margins(_unit(U), _unit(V), A)
    want = {"m0": m0, "mg": mg, "mq": mq, "topk_accuracy": acc}
    chex.assert_trees_all_close(got, want, rtol=1e-5, atol=1e-6)

  @chex.variants(with_jit=True, without_jit=True)
  def test_infonce_variants_and_symmetric(self):
    U, V, A = _problem(2)
    t = 7.0
    S = _unit(U) @ _unit(V).T
    f32 = (_unit(U).astype(np.float32), _unit(V).astype(np.float32), A)
    fn = self.variant(
      functools.partial(
        M.infonce_loss,
        log_temperature=np.log(t),
        variant=("exclude_other_positives"),
      )
    )
    got = fn(*f32)
    chex.assert_shape(got, ())
    chex.assert_trees_all_close(got, _ref_infonce(S, A, t, True), rtol=1e-5)
    # variant="all" (the default), in both retrieval directions.
    sym = self.variant(
      functools.partial(
        M.infonce_loss, log_temperature=np.log(t), symmetric=True
      )
    )
    want = 0.5 * (
      _ref_infonce(S, A, t, False) + _ref_infonce(S.T, A.T, t, False)
    )
    chex.assert_trees_all_close(sym(*f32), want, rtol=1e-5)

  @chex.variants(with_jit=True, without_jit=True)
  def test_sigmoid_and_margin_losses(self):
    U, V, A = _problem(3)
    S = _unit(U) @ _unit(V).T  # the losses score by cosine
    Y = np.where(A, 1.0, -1.0)
    log_t, b, beta = np.log(3.0), -0.4, 5.0
    f32 = (U.astype(np.float32), V.astype(np.float32), A)
    sig = self.variant(
      functools.partial(M.sigmoid_loss, log_temperature=log_t, bias=b)
    )(*f32)
    want_sig = np.mean(np.logaddexp(0.0, -Y * (3.0 * S + b)))
    chex.assert_trees_all_close(sig, want_sig, rtol=1e-5)
    soft = self.variant(functools.partial(M.margin_loss, beta=beta))(*f32)
    z = -beta * Y * S
    want_soft = (z.max() + np.log(np.exp(z - z.max()).sum())) / beta
    chex.assert_trees_all_close(soft, want_soft, rtol=1e-5)
    hinge = self.variant(functools.partial(M.margin_loss, hinge_target=0.3))(
      *f32
    )
    chex.assert_trees_all_close(
      hinge, np.mean(np.maximum(0.3 - Y * S, 0.0)), rtol=1e-5
    )
    chex.assert_type((sig, soft, hinge), jnp.float32)
