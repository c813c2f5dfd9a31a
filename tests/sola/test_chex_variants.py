"""The SOLA losses and their building blocks, with and without ``jax.jit``.

Checked against the float64 transcriptions of ``test_alm``, ``test_ot`` and
``test_losses`` and against NumPy log-softmax. Static settings (``n_blocks``,
``epsilon``, ``iters``, ``k``) are closed over.
"""

import functools

import chex
import jax.numpy as jnp
import numpy as np

import jaxpapers.sola as S
from tests.sola.test_alm import random_blocks, reference
from tests.sola.test_losses import make_table, pair_cost_ref
from tests.sola.test_ot import sinkhorn_ref


def _log_softmax(x):
  x = np.asarray(x, np.float64)
  return (
    x
    - np.log(np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True))
    - x.max(-1, keepdims=True)
  )


class SolaVariantsTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_alm_chunk_loss_and_chunk_logliks(self):
    rng = np.random.default_rng(0)
    B, T_t, T_s, K = 2, 8, 6, 5
    t_blk = np.full((B, T_t), -1, np.int32)
    s_blk = np.full((B, T_s), -1, np.int32)
    for b, n_used in enumerate((3, 4)):
      t_blk[b, : T_t - 2] = random_blocks(rng, T_t - 2, n_used)
      s_blk[b, : T_s - 1] = random_blocks(rng, T_s - 1, n_used)
    t_lp = np.log(rng.uniform(0.05, 0.95, (B, T_t)))
    s_lp = np.log(rng.uniform(0.05, 0.95, (B, T_s)))
    fn = self.variant(functools.partial(S.alm_chunk_loss, n_blocks=K))
    loss, aux = fn(
      t_lp.astype(np.float32), t_blk, s_lp.astype(np.float32), s_blk
    )
    want, _ = reference(t_lp, t_blk, s_lp, s_blk, K)
    chex.assert_shape(loss, ())
    chex.assert_trees_all_close(loss, want, rtol=2e-4, atol=1e-6)
    # The chunk sums themselves: out[b, k] = sum of the log-probs of block k.
    chunks = self.variant(functools.partial(S.chunk_logliks, n_blocks=K))(
      s_lp.astype(np.float32), s_blk
    )
    want_chunks = np.array(
      [[s_lp[b][s_blk[b] == k].sum() for k in range(K)] for b in range(B)]
    )
    chex.assert_shape((chunks, aux["l_s"]), (B, K))
    chex.assert_type(chunks, jnp.float32)
    chex.assert_trees_all_close(chunks, want_chunks, rtol=1e-5, atol=1e-6)

  # Jitted only: run op by op, ott-jax's Sinkhorn solver takes seconds to
  # dispatch.
  @chex.variants(with_jit=True)
  def test_entropic_ot_cost_and_plan(self):
    rng = np.random.default_rng(1)
    a, b, c = (
      rng.dirichlet(np.ones(5), 2),
      rng.dirichlet(np.ones(4), 2),
      rng.random((2, 5, 4)),
    )
    eps = 0.3  # converges within the few iterations run here
    f32 = tuple(x.astype(np.float32) for x in (a, b, c))

    @self.variant
    def ot(a, b, c):
      cost = S.entropic_ot_cost(a, b, c, epsilon=eps, iters=20)
      return cost, S.entropic_ot_plan(a, b, c, epsilon=eps, iters=20)

    cost, plan = ot(*f32)
    want_plan = np.stack(
      [sinkhorn_ref(a[i], b[i], c[i], eps) for i in range(2)]
    )
    chex.assert_shape(cost, (2,))
    chex.assert_shape(plan, (2, 5, 4))
    chex.assert_trees_all_close(plan, want_plan, atol=2e-5)
    chex.assert_trees_all_close(cost, (want_plan * c).sum((1, 2)), atol=2e-5)

  @chex.variants(with_jit=True, without_jit=True)
  def test_uld_and_mined_kl_losses(self):
    rng = np.random.default_rng(2)
    kc = 4
    t_logp = np.sort(_log_softmax(rng.normal(size=(3, 9)) * 2), -1)[:, ::-1][
      :, :kc
    ]
    t_logp = t_logp.astype(np.float32)
    s_logits = (rng.normal(size=(3, 7)) * 2).astype(np.float32)
    mask = np.array([True, False, True])
    # collisions
    mapped = np.array([[2, 2, 5, 0], [0, 1, 0, 3], [6, 5, 4, 3]], np.int32)
    fn = self.variant(
      lambda t, s, ids, m: (
        S.uld_loss(t, s, mask=m),
        S.mined_kl_loss(ids, t, s, mask=m),
      )
    )
    uld, mined = fn(t_logp, s_logits, mapped, mask)
    p_s = np.exp(_log_softmax(s_logits))
    ls = _log_softmax(s_logits)
    want_uld, want_mined = [], []
    for b in np.flatnonzero(mask):
      pt = np.sort(np.exp(t_logp[b].astype(np.float64)))[::-1]
      want_uld.append(np.abs(pt - np.sort(p_s[b])[::-1][:kc]).sum())
      p = np.exp(t_logp[b].astype(np.float64))
      agg = np.zeros(7)
      np.add.at(agg, mapped[b], p / p.sum())
      on = agg > 0
      want_mined.append((agg[on] * (np.log(agg[on]) - ls[b][on])).sum())
    chex.assert_trees_all_close(
      (uld, mined),
      (np.mean(want_uld), np.mean(want_mined)),
      rtol=1e-5,
      atol=1e-6,
    )

  @chex.variants(with_jit=True, without_jit=True)
  def test_pair_cost_matches_reference(self):
    rng = np.random.default_rng(3)
    tab, st, ss = make_table(rng)
    t_ids = np.arange(len(st), dtype=np.int32)[:, None]
    s_ids = np.arange(len(ss), dtype=np.int32)[None, :]
    got = self.variant(S.pair_cost)(tab, t_ids, s_ids)
    want = [
      [pair_cost_ref(tab, st, ss, t, s) for s in range(len(ss))]
      for t in range(len(st))
    ]
    chex.assert_shape(got, (len(st), len(ss)))
    chex.assert_type(got, jnp.float32)
    chex.assert_trees_all_close(got, np.array(want), rtol=1e-6, atol=1e-6)

  @chex.variants(with_jit=True, without_jit=True)
  def test_token_logp_and_bits_per_byte(self):
    rng = np.random.default_rng(4)
    N, T, V = 2, 5, 6
    logits = rng.normal(size=(N, T, V)).astype(np.float32)
    tokens = rng.integers(0, V, (N, T)).astype(np.int32)
    lengths = np.array([5, 3], np.int32)
    n_bytes = np.array([7, 4], np.int32)

    @self.variant
    def score(logits, tokens, lengths, n_bytes):
      lp = S.token_logp(logits, tokens, lengths)
      return lp, S.bits_per_byte(lp.sum(-1), n_bytes)

    lp, bpb = score(logits, tokens, lengths, n_bytes)
    full = _log_softmax(logits)
    want = np.zeros((N, T))
    for n in range(N):
      for p in range(lengths[n] - 1):  # position p predicts token p + 1
        want[n, p] = full[n, p, tokens[n, p + 1]]
    chex.assert_shape(lp, (N, T))
    chex.assert_type(lp, jnp.float32)
    chex.assert_trees_all_close(lp, want, rtol=1e-5, atol=1e-6)
    chex.assert_trees_all_close(
      bpb, -want.sum() / (n_bytes.sum() * np.log(2.0)), rtol=1e-5
    )
