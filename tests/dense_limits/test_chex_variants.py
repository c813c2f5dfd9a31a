"""Cut norms, the network forwards and the bump target, jitted and eager,
against float64 NumPy."""

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
from absl.testing import absltest
from flax import nnx

import jaxpapers.dense_limits as D
from tests.dense_limits.test_cut import brute_cut
from tests.dense_limits.test_models import np_forward

RNG = np.random.default_rng(21)
X = RNG.uniform(size=(6, 3)).astype(np.float32)


@functools.cache
def _compressed():
  model = D.StronglyDenseMLP(3, 2, widths=(10, 8), bound=1.0, rngs=nnx.Rngs(1))
  return model, D.compress_mlp(model, 3, jax.random.key(1), method="random")


class CutTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_exact_cut_norm_and_its_witness_sets(self):
    m = RNG.uniform(-1, 1, (4, 6))
    fn = self.variant(functools.partial(D.cut_norm_exact, return_sets=True))
    value, s, t = fn(jnp.asarray(m, jnp.float32))
    chex.assert_shape([value, s, t], [(), (4,), (6,)])
    want = brute_cut(m) / m.size
    chex.assert_trees_all_close(value, np.float32(want), rtol=1e-5)
    # The sets witness the value with rows and columns in their places.
    witness = (
      abs(np.asarray(s, np.float64) @ m @ np.asarray(t, np.float64)) / m.size
    )
    chex.assert_trees_all_close(witness, want, rtol=1e-5)

  @chex.variants(with_jit=True, without_jit=True)
  def test_augment_is_the_alon_naor_block_matrix(self):
    m = RNG.normal(size=(3, 5))
    got = self.variant(D.augment)(jnp.asarray(m, jnp.float32))
    chex.assert_shape(got, (4, 6))
    want = np.block(
      [[m, -m.sum(1, keepdims=True)], [-m.sum(0, keepdims=True), m.sum()]]
    )
    chex.assert_trees_all_close(
      got, want.astype(np.float32), rtol=1e-5, atol=1e-6
    )


class ModelsTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_strongly_dense_forward_through_split_and_merge(self):
    model = D.StronglyDenseMLP(3, 2, widths=(5, 7), bound=2.0, rngs=nnx.Rngs(0))
    graph, state = nnx.split(model)

    def forward(state, x):
      return nnx.merge(graph, state)(x)

    got = self.variant(forward)(state, X)
    chex.assert_shape(got, (X.shape[0], 2))
    # Mean aggregation: hidden-to-hidden and output layers divide by the fan-in
    # n_{l-1}.
    want = np_forward(model.layers(), [1.0, 1.0 / 5, 1.0 / 7], X)
    chex.assert_trees_all_close(
      got, want.astype(np.float32), rtol=1e-5, atol=1e-6
    )

  @chex.variants(with_jit=True, without_jit=True)
  def test_apply_compressed_is_the_factored_forward(self):
    model, c = _compressed()
    got = self.variant(D.apply_compressed)(c, X)
    (w0, b0), (w2, b2) = model.layers()[0], model.layers()[2]
    f = c.mids[0]
    h = np.maximum(
      X.astype(np.float64) @ np.asarray(w0, np.float64) + np.asarray(b0), 0
    )
    approx = (
      np.asarray(f.p, np.float64).T @ np.diag(np.asarray(f.q)) @ np.asarray(f.t)
    )
    h = np.maximum(h @ approx.T / 10 + np.asarray(f.bias), 0)
    want = h @ np.asarray(w2, np.float64) / 8 + np.asarray(b2)
    chex.assert_shape(got, (X.shape[0], 2))
    chex.assert_trees_all_close(
      got, want.astype(np.float32), rtol=1e-5, atol=1e-6
    )

  @chex.variants(with_jit=True, without_jit=True)
  def test_project_params_clips_every_leaf(self):
    params = {
      "w": RNG.normal(size=(3, 4)).astype(np.float32),
      "b": np.float32([2.5, -0.1]),
    }
    got = self.variant(functools.partial(D.project_params, bound=1.0))(params)
    chex.assert_trees_all_close(
      got, jax.tree.map(lambda p: np.clip(p, -1.0, 1.0), params)
    )


class TargetTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_eval_bumps_is_the_signed_sum_of_cones(self):
    t = D.bump_target(jax.random.key(0), 2, 3)
    x = RNG.uniform(size=(7, 2)).astype(np.float32)
    x[0] = np.asarray(t.centers[4])  # a peak: value sign * radius
    got = self.variant(D.eval_bumps)(t, x)
    c, s, r = (
      np.asarray(a, np.float64) for a in (t.centers, t.signs, t.radius)
    )
    dist = np.linalg.norm(x[:, None, :].astype(np.float64) - c[None], axis=-1)
    want = np.sum(s * r * np.maximum(1.0 - dist / r, 0.0), -1)
    chex.assert_shape(got, (7,))
    chex.assert_trees_all_close(
      got, want.astype(np.float32), rtol=1e-5, atol=1e-6
    )
    chex.assert_trees_all_close(got[0], np.float32(s[4] * r), rtol=1e-5)


if __name__ == "__main__":
  absltest.main()
