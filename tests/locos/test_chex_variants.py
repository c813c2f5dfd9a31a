"""``phi_per_position`` (the LOCOS per-key attribution), with and without
``jax.jit``.

Checked against a float64 NumPy transcription of the formula, against the direct
logit attribution of the heads' outputs over stacked layers, and for its
invalid-index behaviour (an error eagerly, NaN under ``jax.jit``).
"""

import chex
import jax
import jax.numpy as jnp
import numpy as np

from jaxpapers import locos


def _phi_reference(attn, values, wo, u, kv_map):
  """phi[h, j] = attn[h, j] * values[kv(h), j] . (wo[h] @ u), in float64."""
  attn, values, wo, u = (
    np.asarray(a, np.float64) for a in (attn, values, wo, u)
  )
  out = np.zeros(attn.shape)
  for h in range(attn.shape[0]):
    u_hat = wo[h] @ u  # [dh]
    out[h] = attn[h] * (values[kv_map[h]] @ u_hat)
  return out


def _inputs(seed, H=6, KV=2, K=7, dh=4, d=5):
  rng = np.random.default_rng(seed)
  attn = rng.dirichlet(np.ones(K), size=H).astype(np.float32)
  values = rng.normal(size=(KV, K, dh)).astype(np.float32)
  wo = rng.normal(size=(H, dh, d)).astype(np.float32)
  u = rng.normal(size=d).astype(np.float32)
  kv_map = (np.arange(H) // (H // KV)).astype(np.int32)
  return attn, values, wo, u, kv_map


class PhiVariantsTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_phi_matches_float64_formula_with_gqa(self):
    attn, values, wo, u, kv_map = _inputs(0)
    phi = self.variant(locos.phi_per_position)(attn, values, wo, u, kv_map)
    chex.assert_shape(phi, attn.shape)
    chex.assert_type(phi, jnp.float32)
    chex.assert_trees_all_close(
      phi, _phi_reference(attn, values, wo, u, kv_map), rtol=1e-5
    )
    # The grouping matters: reading KV head 0 everywhere gives a different
    # answer.
    wrong = _phi_reference(attn, values, wo, u, np.zeros_like(kv_map))
    self.assertGreater(np.abs(np.asarray(phi) - wrong).max(), 1e-2)

  @chex.variants(with_jit=True, without_jit=True)
  def test_row_sums_are_the_direct_logit_attribution_over_layers(self):
    rng = np.random.default_rng(2)
    layers = [_inputs(s) for s in range(3)]
    attn, values, wo = (np.stack([x[i] for x in layers]) for i in range(3))
    u = rng.normal(size=wo.shape[-1]).astype(np.float32)
    kv_map = layers[0][4]
    phi_layers = jax.vmap(locos.phi_per_position, in_axes=(0, 0, 0, None, None))
    phi = self.variant(phi_layers)(attn, values, wo, u, kv_map)
    chex.assert_shape(phi, attn.shape)
    # Head output z[l, h] = sum_j attn[l, h, j] v[l, kv(h), j]; its direct logit
    # attribution is u . (z[l, h] W_O[l, h]) (float64).
    a64, v64, wo64 = (np.asarray(x, np.float64) for x in (attn, values, wo))
    z = np.einsum("lhj,lhjk->lhk", a64, v64[:, kv_map])
    dla = np.einsum("lhk,lhkd,d->lh", z, wo64, np.asarray(u, np.float64))
    chex.assert_trees_all_close(
      np.asarray(phi).sum(-1), dla, rtol=1e-5, atol=1e-6
    )

  @chex.variants(with_jit=True, without_jit=True)
  def test_out_of_range_kv_head_is_an_error_or_nan_never_a_clamped_value(self):
    attn, values, wo, u, kv_map = _inputs(1)
    kv_map[-1] = values.shape[0]  # one past the last KV head
    fn = self.variant(locos.phi_per_position)
    if self.variant.type is chex.ChexVariantType.WITHOUT_JIT:
      with self.assertRaisesRegex(ValueError, "kv_map"):
        fn(attn, values, wo, u, jnp.asarray(kv_map))
    else:
      phi = fn(attn, values, wo, u, jnp.asarray(kv_map))
      self.assertTrue(np.isnan(np.asarray(phi)).any())
