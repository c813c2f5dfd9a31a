"""Tests of optimistic momentum, LMOs, MODA / standalone SODA and
convergence."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
from absl.testing import parameterized

from jaxpapers import soda as soda_lib

# Jitted LMO (eager Newton-Schulz dispatches op by op and is slow).
_lmo_jit = jax.jit(
  soda_lib.lmo_direction,
  static_argnames=("norm", "ns_steps", "dimension_numbers"),
)


def _np_sign_lmo(g):  # ascent direction for the 'sign' norm, 2-D [d_in, d_out]
  return np.sign(g) / g.shape[0]


def np_soda_lmo(grad_fn, x0, steps, lr, a=0.05, abar=0.05, lbar=0.0):
  """Float64 transcription of the standalone SODA recurrence (sign LMO)."""
  z0 = x0.copy()
  x = x0.copy()
  y = x0.copy()
  m = None
  ys, xs = [y.copy()], [x.copy()]
  for k in range(steps):
    g = grad_fn(y)
    m = g if m is None else m
    m = (1 - a) * m + a * g
    mbar = (1 - abar) * m + abar * g
    z = z0 + lr * (k + 2) * (-_np_sign_lmo(mbar))
    lam = 1.0 / (k + 2)
    x = (1 - lam) * x + lam * z
    y = (1 - lbar) * x + lbar * z
    ys.append(y.copy())
    xs.append(x.copy())
  return ys, xs


class MomentumTest(parameterized.TestCase):
  @parameterized.parameters("grad", "zeros")
  def test_matches_numpy(self, init):
    a, abar = 0.1, 0.3
    tx = soda_lib.scale_by_optimistic_momentum(a, abar, init=init)
    rng = np.random.default_rng(0)
    gs = rng.normal(size=(8, 5))
    state = tx.init(jnp.zeros(5))
    update = jax.jit(tx.update)
    m = gs[0].copy() if init == "grad" else np.zeros(5)
    for k, g in enumerate(gs):
      out, state = update(jnp.asarray(g, jnp.float32), state)
      m = (1 - a) * m + a * g
      mh = m if init == "grad" else m / (1 - (1 - a) ** (k + 1))
      np.testing.assert_allclose(
        out, (1 - abar) * mh + abar * g, rtol=1e-5, atol=1e-5
      )
      if k == 0:  # no shrinkage at the first step (optimism at step 0)
        np.testing.assert_allclose(out, g, rtol=1e-5, atol=1e-6)

  def test_validation(self):
    with self.assertRaisesRegex(ValueError, "init"):
      soda_lib.scale_by_optimistic_momentum(init="ones")
    with self.assertRaisesRegex(ValueError, "dual_momentum1"):
      soda_lib.scale_by_optimistic_momentum(1.5)


class LmoTest(parameterized.TestCase):
  def test_newton_schulz_cubic_converges_to_polar_factor(self):
    rng = np.random.default_rng(0)
    for shape in ((6, 4), (4, 6)):
      g = rng.normal(size=shape)
      u, _, vt = np.linalg.svd(g, full_matrices=False)
      out = soda_lib.newton_schulz(
        jnp.asarray(g, jnp.float32), ns_steps=60, coeffs=(1.5, -0.5, 0.0)
      )
      np.testing.assert_allclose(out, u @ vt, atol=2e-4)

  def test_newton_schulz_quintic_is_approximately_orthogonal(self):
    rng = np.random.default_rng(1)
    g = rng.normal(size=(16, 8))
    u, _, vt = np.linalg.svd(g, full_matrices=False)
    out = np.asarray(
      soda_lib.newton_schulz(jnp.asarray(g, jnp.float32)), np.float64
    )
    sv = np.linalg.svd(out, compute_uv=False)
    self.assertTrue(np.all((sv > 0.5) & (sv < 1.3)), sv)
    cos = np.sum(out * (u @ vt)) / np.linalg.norm(out) / np.linalg.norm(u @ vt)
    self.assertGreater(cos, 0.97)

  def test_norm_properties(self):
    rng = np.random.default_rng(2)
    g = rng.normal(size=(3, 5))
    d_in, d_out = g.shape
    sign = _lmo_jit(jnp.asarray(g, jnp.float32), "sign")
    np.testing.assert_allclose(sign, np.sign(g) / d_in, rtol=1e-6)
    col = np.asarray(_lmo_jit(jnp.asarray(g, jnp.float32), "colnorm"))
    np.testing.assert_allclose(
      np.linalg.norm(col, axis=1), np.sqrt(d_out), rtol=1e-5
    )
    row = np.asarray(_lmo_jit(jnp.asarray(g, jnp.float32), "rownorm"))
    np.testing.assert_allclose(
      np.linalg.norm(row, axis=0), 1 / np.sqrt(d_in), rtol=1e-5
    )
    b = rng.normal(size=7)
    rms = np.asarray(_lmo_jit(jnp.asarray(b, jnp.float32), "bias_rms"))
    np.testing.assert_allclose(np.sqrt(np.mean(rms**2)), 1.0, rtol=1e-5)
    # Ascent direction: <g, s(g)> > 0 for every norm.
    for norm in ("spectral", "sign", "colnorm", "rownorm", "bias_rms"):
      s = np.asarray(_lmo_jit(jnp.asarray(g, jnp.float32), norm))
      self.assertGreater(np.sum(s * g), 0.0, norm)

  def test_spectral_scale_and_layouts(self):
    rng = np.random.default_rng(3)
    g = rng.normal(size=(4, 9)).astype(np.float32)  # [d_in, d_out]
    flax = _lmo_jit(jnp.asarray(g), "spectral", ns_steps=5)
    torch = _lmo_jit(
      jnp.asarray(g.T),
      "spectral",
      ns_steps=5,
      dimension_numbers=soda_lib.LmoDimensionNumbers(1, 0),
    )
    np.testing.assert_allclose(flax, torch.T, atol=1e-5)
    ns = soda_lib.newton_schulz(jnp.asarray(g))
    np.testing.assert_allclose(flax, ns * np.sqrt(9 / 4), rtol=1e-4, atol=1e-5)
    # Batch axis (e.g. heads): leaf [H, d_in, d_out] with reduction 1, output 2.
    gb = rng.normal(size=(2, 4, 3)).astype(np.float32)
    dn = soda_lib.LmoDimensionNumbers(reduction_axis=1, output_axis=2)
    out = _lmo_jit(jnp.asarray(gb), "spectral", dimension_numbers=dn)
    for h in range(2):
      np.testing.assert_allclose(
        out[h], _lmo_jit(jnp.asarray(gb[h]), "spectral"), atol=1e-5
      )

  def test_scale_by_lmo_pytree_of_norms(self):
    tx = soda_lib.scale_by_lmo({"w": "spectral", "b": "sign"})
    g = {"w": jnp.ones((3, 2)), "b": -jnp.ones(2)}
    out, _ = tx.update(g, tx.init(g))
    np.testing.assert_array_equal(out["b"], -1.0)
    with self.assertRaisesRegex(ValueError, "dimensions"):
      soda_lib.scale_by_lmo("spectral").update(g, optax.EmptyState())
    with self.assertRaisesRegex(ValueError, "norm"):
      soda_lib.scale_by_lmo("nuclear")


class StandaloneTest(parameterized.TestCase):
  def _problem(self):
    rng = np.random.default_rng(4)
    target = rng.normal(size=(3, 4))
    x0 = rng.normal(size=(3, 4))
    return target, x0, (lambda x: x - target)

  @parameterized.parameters(0.0, 0.3)
  def test_soda_lmo_matches_numpy(self, lbar):
    target, x0, grad_fn = self._problem()
    steps, lr = 15, 0.01
    ys, xs = np_soda_lmo(grad_fn, x0, steps, lr, lbar=lbar)
    tx = soda_lib.soda_lmo(lr, norm="sign", primal_extrapolation=lbar)
    y = jnp.asarray(x0, jnp.float32)
    state = tx.init(y)
    update = jax.jit(tx.update)
    for k in range(steps):
      u, state = update(y - jnp.asarray(target, jnp.float32), state, y)
      y = y + u
      np.testing.assert_allclose(y, ys[k + 1], atol=2e-6)
      np.testing.assert_allclose(
        soda_lib.soda_eval_params(state, y), xs[k + 1], atol=2e-6
      )
    self.assertEqual(state.x is None, lbar == 0.0)

  def test_moda_equals_soda_lmo_without_extrapolation(self):
    target, x0, _ = self._problem()
    p1 = p2 = jnp.asarray(x0, jnp.float32)
    t1 = soda_lib.moda(0.02, norm="spectral")
    t2 = soda_lib.soda_lmo(0.02, norm="spectral")
    s1, s2 = t1.init(p1), t2.init(p2)
    u1f, u2f = jax.jit(t1.update), jax.jit(t2.update)
    tj = jnp.asarray(target, jnp.float32)
    for _ in range(30):
      u1, s1 = u1f(p1 - tj, s1, p1)
      u2, s2 = u2f(p2 - tj, s2, p2)
      p1, p2 = p1 + u1, p2 + u2
    np.testing.assert_allclose(p1, p2, atol=1e-6)
    np.testing.assert_array_equal(soda_lib.soda_eval_params(s1, p1), p1)

  def test_eval_params_search_and_errors(self):
    params = {"w": jnp.ones((2, 2))}
    tx = optax.chain(
      optax.clip(1.0),
      soda_lib.soda_lmo(0.1, norm="sign", primal_extrapolation=0.5),
    )
    state = tx.init(params)
    _, state = tx.update({"w": jnp.ones((2, 2))}, state, params)
    ev = soda_lib.soda_eval_params(state, params)
    self.assertFalse(np.allclose(ev["w"], params["w"]))
    with self.assertRaisesRegex(ValueError, "SodaState"):
      soda_lib.soda_eval_params(optax.adam(1.0).init(params), params)
    ws = soda_lib.soda(optax.sgd(0.1)).init(params)
    self.assertIs(soda_lib.soda_eval_params(ws, params), params)
    with self.assertRaisesRegex(ValueError, "primal_extrapolation"):
      soda_lib.soda_lmo(0.1, primal_extrapolation=2.0)

  def test_aliases_equal_wrapped_base(self):
    params = {"w": jnp.ones((4, 3)) * 0.5, "b": jnp.ones(3)}
    grads = jax.tree.map(lambda p: p - 0.2, params)
    pairs = [
      (
        soda_lib.soda_adamw(0.1),
        soda_lib.soda(optax.adamw(0.1, weight_decay=0.0)),
      ),
      (
        soda_lib.soda_nadam(0.1),
        soda_lib.soda(optax.nadamw(0.1, weight_decay=0.0)),
      ),
      (
        soda_lib.soda_lion(0.1),
        soda_lib.soda(optax.lion(0.1, weight_decay=0.0)),
      ),
      (
        soda_lib.soda_muon(0.1),
        soda_lib.soda(optax.contrib.muon(0.1), mask={"w": True, "b": False}),
      ),
    ]
    for alias, ref in pairs:
      sa, sr = alias.init(params), ref.init(params)
      pa = pr = params
      fa, fr = jax.jit(alias.update), jax.jit(ref.update)
      for _ in range(2):
        ua, sa = fa(grads, sa, pa)
        ur, sr = fr(grads, sr, pr)
        pa, pr = optax.apply_updates(pa, ua), optax.apply_updates(pr, ur)
      jax.tree.map(
        lambda a, b: np.testing.assert_allclose(a, b, atol=1e-6), pa, pr
      )


def _parabola():
  return (
    jnp.array([1.0, 2.0]),
    lambda x: jnp.sum(jnp.square(x - 1.0)),
    jnp.ones(2),
  )


def _rosenbrock():
  def f(p):
    x, y = p[0], p[1]
    return jnp.square(1.0 - x) + 100.0 * jnp.square(y - x * x)

  return jnp.array([-0.5, 0.5]), f, jnp.ones(2)


class ConvergenceTest(parameterized.TestCase):
  """SODA around adam / nadam / lion on the optax contrib targets (in scan)."""

  @parameterized.product(
    base=("adam", "nadam", "lion"), target=("parabola", "rosenbrock")
  )
  def test_converges(self, base, target):
    tx = soda_lib.soda(
      {
        "adam": optax.adam(1e-2),
        "nadam": optax.nadam(1e-2),
        "lion": optax.lion(1e-3, weight_decay=0.0),
      }[base]
    )
    x0, f, opt = {"parabola": _parabola, "rosenbrock": _rosenbrock}[target]()

    @jax.jit
    def run(x0):
      def step(carry, _):
        x, s = carry
        u, s = tx.update(jax.grad(f)(x), s, x)
        return (optax.apply_updates(x, u), s), None

      (x, _), _ = jax.lax.scan(step, (x0, tx.init(x0)), None, length=30_000)
      return x

    x = run(x0)
    np.testing.assert_allclose(x, opt, rtol=3e-2, atol=3e-2)

  def test_moda_converges_on_matrix_parabola(self):
    rng = np.random.default_rng(0)
    target = jnp.asarray(rng.normal(size=(6, 4)), jnp.float32)
    tx = soda_lib.moda(0.01, norm="spectral")
    f = lambda w: 0.5 * jnp.sum(jnp.square(w - target))

    @jax.jit
    def run(w):
      def step(carry, _):
        w, s = carry
        u, s = tx.update(jax.grad(f)(w), s, w)
        return (w + u, s), None

      return jax.lax.scan(step, (w, tx.init(w)), None, length=3000)[0][0]

    w = run(jnp.zeros((6, 4)))
    self.assertLess(float(f(w)), 0.05 * float(f(jnp.zeros((6, 4)))))


class AliasCompositionTest(parameterized.TestCase):
  @parameterized.parameters("soda_adamw", "soda_muon")
  def test_inject_hyperparams_without_static_args(self, name):
    """As with optax's own aliases: numeric arguments become injected
    hyperparameters."""
    alias = getattr(soda_lib, name)
    params = {"w": jnp.ones((4, 3)) * 0.5, "b": jnp.ones(3)}
    grads = jax.tree.map(lambda p: p - 0.2, params)
    tx = optax.inject_hyperparams(alias)(learning_rate=0.1)
    self.assertEqual(int(optax.tree.get(tx.init(params), "start_step")), 0)

    def two_steps(tx, lr=None):
      s, p = tx.init(params), params
      if lr is not None:
        s = optax.tree.set(s, learning_rate=lr)
      for _ in range(2):
        u, s = tx.update(grads, s, p)
        p = optax.apply_updates(p, u)
      return p

    p, pr, p0 = jax.jit(
      lambda: (two_steps(tx), two_steps(alias(0.1)), two_steps(tx, 0.0))
    )()
    jax.tree.map(
      lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6), p, pr
    )
    # lr 0 set through the injected state: the parameters never leave the
    # anchor.
    jax.tree.map(lambda a, b: np.testing.assert_array_equal(a, b), p0, params)

  def test_muon_default_partition_skips_embedding_head_and_vectors(self):
    params = {
      "embed": {"embedding": jnp.ones((5, 4))},
      "blocks": [
        {"attn": jnp.ones((4, 4)), "mlp": jnp.ones((4, 8)), "bias": jnp.ones(8)}
      ],
      "lm_head": jnp.ones((4, 5)),
      "norm": {"scale": jnp.ones(4)},
    }
    state = soda_lib.soda_muon(0.1).init(params)
    soda_state = [
      s for s in jax.tree.leaves(state, is_leaf=_is_soda) if _is_soda(s)
    ][0]
    wrapped = jax.tree.map(
      lambda a: not isinstance(a, optax.MaskedNode),
      soda_state.anchor,
      is_leaf=lambda a: isinstance(a, optax.MaskedNode),
    )
    self.assertEqual(
      wrapped,
      {
        "embed": {"embedding": False},
        "blocks": [{"attn": True, "mlp": True, "bias": False}],
        "lm_head": False,
        "norm": {"scale": False},
      },
    )
    # (The wrapper gives masked-out leaves the plain base update: MaskTest in
    # test_wrapper.)
    everything = soda_lib.soda_muon(
      0.1, mask=lambda p: jax.tree.map(lambda _: True, p)
    )
    anchor = everything.init(params).anchor
    self.assertFalse(
      any(isinstance(a, optax.MaskedNode) for a in jax.tree.leaves(anchor))
    )


def _is_soda(s):
  return isinstance(s, soda_lib.SodaState)
