"""Models against float64 numpy forwards; the weight bound after projected
steps; sharding."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import jaxpapers.dense_limits as D

RNG = np.random.default_rng(2)
X = RNG.uniform(size=(16, 3)).astype(np.float32)


def np_forward(layers, scales, x):
  h = x.astype(np.float64)
  for i, ((w, b), c) in enumerate(zip(layers, scales)):
    h = c * (h @ np.asarray(w, np.float64)) + np.asarray(b, np.float64)
    if i < len(layers) - 1:
      h = np.maximum(h, 0)
  return h


@pytest.mark.parametrize("normalize_first", [False, True])
def test_strongly_dense_forward_and_normalisation(normalize_first):
  m = D.StronglyDenseMLP(
    3,
    2,
    widths=(5, 7),
    bound=2.0,
    normalize_first=normalize_first,
    rngs=nnx.Rngs(0),
  )
  layers = [(np.asarray(w), np.asarray(b) + 0.1) for w, b in m.layers()]
  for l, (_, b) in enumerate(layers):
    getattr(m, f"b{l}")[...] = jnp.asarray(b)
  scales = [1.0 / 3 if normalize_first else 1.0, 1.0 / 5, 1.0 / 7]  # 1/n_{l-1}
  np.testing.assert_allclose(
    np.asarray(m(X)), np_forward(layers, scales, X), rtol=1e-5, atol=1e-6
  )
  for w, _ in m.layers():
    assert np.abs(np.asarray(w)).max() <= 2.0
  u = D.StronglyDenseMLP(
    3, 2, widths=(5, 7), bound=2.0, normalize="none", rngs=nnx.Rngs(0)
  )
  np.testing.assert_allclose(
    np.asarray(u(X)), np_forward(u.layers(), [1.0] * 3, X), rtol=1e-5, atol=1e-5
  )


def test_fan_in_init_has_variance_one_over_fan_in_within_the_bound():
  m = D.StronglyDenseMLP(
    2,
    1,
    widths=(3000, 3000),
    bound=1.0,
    normalize="none",
    init="fan_in",
    rngs=nnx.Rngs(0),
  )
  w0, w1, w2 = (np.asarray(w, np.float64) for w, _ in m.layers())
  # Layer 0: sqrt(3 / 2) > B = 1, so the bound caps it: U[-1, 1] (max near 1,
  # variance 1/3).
  assert 0.99 < np.abs(w0).max() <= 1.0 and w0.var() == pytest.approx(
    1 / 3, rel=0.05
  )
  for w in (w1, w2):  # U[-a, a] with a = sqrt(3 / 3000): variance 1 / 3000
    assert np.abs(w).max() <= np.sqrt(3 / 3000) + 1e-7
    assert w.var() == pytest.approx(1 / 3000, rel=0.05)
  # The default keeps the class's own scale U[-B, B].
  d = D.StronglyDenseMLP(2, 1, widths=(3000,), bound=2.0, rngs=nnx.Rngs(0))
  assert np.asarray(d.layers()[1][0]).var() == pytest.approx(4 / 3, rel=0.05)


def test_sparse_fanin_reads_k_distinct_inputs_and_matches_numpy():
  m = D.SparseFaninMLP(
    3, 1, widths=(6, 8), bound=1.0, fan_in=4, rngs=nnx.Rngs(1)
  )
  idx0, idx1 = np.asarray(m.idx0[...]), np.asarray(m.idx1[...])
  # fan-in capped at the previous width
  assert idx0.shape == (6, 3) and idx1.shape == (8, 4)
  assert all(len(set(r)) == len(r) for r in [*idx0, *idx1])
  m.w2[...] = jnp.asarray(RNG.normal(size=(8, 1)), jnp.float32)
  h = X.astype(np.float64)
  for idx, w in ((idx0, m.w0), (idx1, m.w1)):
    h = np.maximum(
      np.einsum("bok,ok->bo", h[:, idx], np.asarray(w[...], np.float64)), 0
    )
  want = h @ np.asarray(m.w2[...], np.float64)
  np.testing.assert_allclose(np.asarray(m(X)), want, rtol=1e-5, atol=1e-6)


def test_projected_adam_keeps_the_bound_and_equals_project_after_step():
  m = D.StronglyDenseMLP(3, 1, widths=(8, 8), bound=0.5, rngs=nnx.Rngs(0))
  gd, params = nnx.split(m, nnx.Param)
  y = jnp.asarray(RNG.normal(size=(16, 1)) * 10, jnp.float32)

  def loss(p):
    return jnp.mean((nnx.merge(gd, p)(X) - y) ** 2)

  tx = optax.chain(optax.adam(0.3), D.box_projection(0.5))
  ref_tx = optax.adam(0.3)

  @jax.jit
  def steps(params, ref):
    def body(c, _):
      params, st, ref, ref_st = c
      u, st = tx.update(jax.grad(loss)(params), st, params)
      params = optax.apply_updates(params, u)
      ur, ref_st = ref_tx.update(jax.grad(loss)(ref), ref_st, ref)
      ref = D.project_params(optax.apply_updates(ref, ur), 0.5)
      top = jnp.max(
        jnp.stack([jnp.abs(l).max() for l in jax.tree.leaves(params)])
      )
      return (params, st, ref, ref_st), top

    c0 = (params, tx.init(params), ref, ref_tx.init(ref))
    (params, _, ref, _), inside = jax.lax.scan(body, c0, None, length=5)
    return params, ref, inside

  params, ref, inside = steps(params, params)
  assert float(inside.max()) <= 0.5 + 1e-7  # the bound holds after every step
  hit = sum(int((jnp.abs(l) == 0.5).sum()) for l in jax.tree.leaves(params))
  assert hit > 0  # the lr is large enough that the box is active
  for a, b in zip(jax.tree.leaves(params), jax.tree.leaves(ref)):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-6)


def test_project_params_is_a_clip():
  p = {"a": jnp.asarray([-3.0, 0.2, 5.0])}
  np.testing.assert_allclose(
    np.asarray(D.project_params(p, 1.0)["a"]), [-1.0, 0.2, 1.0]
  )


def test_message_passing_view_equals_the_forward():
  m = D.StronglyDenseMLP(3, 2, widths=(5, 4), bound=1.0, rngs=nnx.Rngs(3))
  g = D.computational_graph(m)
  assert g.adjacency.shape == (14, 14)
  w1 = np.asarray(m.w1[...])
  # Edge j (layer 1, node 3 + j) -> i (layer 2, node 8 + i) carries W[i, j] /
  # n_1.
  assert float(g.adjacency[8 + 2, 3 + 1]) == pytest.approx(w1[1, 2] / 5)
  np.testing.assert_allclose(
    np.asarray(D.message_passing_apply(g, X)),
    np.asarray(m(X)),
    rtol=1e-5,
    atol=1e-6,
  )


def test_sharded_forward_equals_single_device():
  m = D.StronglyDenseMLP(3, 1, widths=(8, 8), bound=1.0, rngs=nnx.Rngs(0))
  mesh = jax.make_mesh((jax.device_count(),), ("data",))
  xs = jax.device_put(jnp.asarray(X), NamedSharding(mesh, P("data")))
  f = nnx.jit(lambda mod, x: mod(x))
  np.testing.assert_allclose(
    np.asarray(f(m, xs)), np.asarray(m(jnp.asarray(X))), rtol=1e-6
  )


def test_bump_data_matches_a_float64_numpy_target():
  data, sd = D.bump_data(4, d=2, grid=3, n_train=50, n_test=10)
  t = D.bump_target(jax.random.key(4), 2, 3)
  c, s, r = (np.asarray(a, np.float64) for a in (t.centers, t.signs, t.radius))
  x = np.concatenate([data["xtr"], data["xte"]]).astype(np.float64)
  np.testing.assert_array_equal(
    x, np.random.default_rng(4).uniform(size=(60, 2)).astype(np.float32)
  )
  dist = np.linalg.norm(x[:, None] - c[None], axis=-1)
  y = (s * r * np.maximum(0.0, 1 - dist / r)).sum(-1)
  assert sd == pytest.approx(y[:50].std(), rel=1e-5)
  want = (y - y[:50].mean()) / y[:50].std()
  np.testing.assert_allclose(
    np.concatenate([data["ytr"], data["yte"]])[:, 0], want, atol=1e-5
  )
  assert data["ytr"].shape == (50, 1) and data["ytr"].dtype == np.float32
  np.testing.assert_allclose(data["ytr"].var(), 1.0, rtol=1e-5)


def test_make_model_builds_each_class_as_its_module():
  x = np.random.default_rng(0).uniform(size=(5, 3)).astype(np.float32)
  make = lambda cls, bound=2.0: D.make_model(
    cls, 3, 1, widths=(4, 4), bound=bound, fan_in=2, rngs=nnx.Rngs(1)
  )
  direct = {
    "dense": D.StronglyDenseMLP(
      3, 1, widths=(4, 4), bound=2.0, rngs=nnx.Rngs(1)
    ),
    "dense_sum": D.StronglyDenseMLP(
      3,
      1,
      widths=(4, 4),
      bound=2.0,
      normalize="none",
      init="fan_in",
      rngs=nnx.Rngs(1),
    ),
    "sparse": D.SparseFaninMLP(
      3, 1, widths=(4, 4), bound=2.0, fan_in=2, rngs=nnx.Rngs(1)
    ),
    "plain": D.PlainMLP(3, 1, widths=(4, 4), rngs=nnx.Rngs(1)),
  }
  for cls, want in direct.items():
    got = make(cls, None if cls == "plain" else 2.0)
    assert type(got) is type(want)
    np.testing.assert_array_equal(np.asarray(got(x)), np.asarray(want(x)))
  # the sum-aggregated control is not the mean-aggregated class
  assert not np.allclose(
    np.asarray(make("dense")(x)), np.asarray(make("dense_sum")(x))
  )
  with pytest.raises(ValueError, match="bound must be a number"):
    make("dense", None)
