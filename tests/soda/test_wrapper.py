"""Tests of the SODA wrapper against float64 numpy transcriptions."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from absl.testing import parameterized

from jaxpapers import soda as soda_lib

# ---------------------------------------------------------------- numpy refs --


class NpSGD:
  def __init__(self, lr):
    self.lr = lr

  def __call__(self, g):
    return -self.lr * g


class NpMomentum:
  def __init__(self, lr, beta=0.9):
    self.lr, self.beta, self.m = lr, beta, None

  def __call__(self, g):
    self.m = g if self.m is None else self.beta * self.m + g
    return -self.lr * self.m


class NpAdam:
  def __init__(self, lr, b1=0.9, b2=0.999, eps=1e-8):
    self.lr, self.b1, self.b2, self.eps = lr, b1, b2, eps
    self.m = self.v = None
    self.t = 0

  def __call__(self, g):
    if self.m is None:
      self.m, self.v = np.zeros_like(g), np.zeros_like(g)
    self.t += 1
    self.m = self.b1 * self.m + (1 - self.b1) * g
    self.v = self.b2 * self.v + (1 - self.b2) * g * g
    mh = self.m / (1 - self.b1**self.t)
    vh = self.v / (1 - self.b2**self.t)
    return -self.lr * mh / (np.sqrt(vh) + self.eps)


BASES = {
  "sgd": (lambda: optax.sgd(0.05), lambda: NpSGD(0.05)),
  "momentum": (lambda: optax.sgd(0.02, momentum=0.9), lambda: NpMomentum(0.02)),
  "adam": (lambda: optax.adam(0.05), lambda: NpAdam(0.05)),
}


def _quadratic(seed=0, n=6):
  rng = np.random.default_rng(seed)
  a = rng.normal(size=(n, n))
  h = a @ a.T / n + 0.5 * np.eye(n)
  b = rng.normal(size=n)
  x0 = rng.normal(size=n)
  return h, b, x0


def np_soda_recurrence(
  base, grad_fn, x0, steps, *, anchor="init", start_step=0
):
  """x_{k+1} = x_k + u_k - c_k (x_k - z0), c_k = 1/(k+2) for k >= start_step."""
  x = np.array(x0, np.float64)
  z0 = x.copy() if anchor == "init" else np.zeros_like(x)
  us, xs = [], [x.copy()]
  for k in range(steps):
    if k == start_step and anchor == "init":
      z0 = x.copy()
    u = base(grad_fn(x))
    us.append(u)
    c = 1.0 / (k + 2) if k >= start_step else 0.0
    x = x + u - c * (x - z0)
    xs.append(x.copy())
  return xs, us


class RecurrenceParityTest(parameterized.TestCase):
  @parameterized.product(base=tuple(BASES), anchor=("init", "zero"))
  def test_matches_numpy_recurrence(self, base, anchor):
    h, b, x0 = _quadratic()
    steps = 20
    tx = soda_lib.soda(BASES[base][0](), anchor=anchor)
    grad_fn = lambda x: h @ x - b
    xs_ref, _ = np_soda_recurrence(
      BASES[base][1](), grad_fn, x0, steps, anchor=anchor
    )
    params = jnp.asarray(x0, jnp.float32)
    state = tx.init(params)
    hj, bj = jnp.asarray(h, jnp.float32), jnp.asarray(b, jnp.float32)

    @jax.jit
    def step(params, state):
      u, state = tx.update(hj @ params - bj, state, params)
      return optax.apply_updates(params, u), state

    for k in range(steps):
      params, state = step(params, state)
      # Adam divides by sqrt(v): float32 round-off is amplified slightly.
      atol = 2e-5 if base == "adam" else 1e-6
      np.testing.assert_allclose(
        params, xs_ref[k + 1], rtol=1e-6, atol=atol, err_msg=f"step {k + 1}"
      )
    self.assertEqual(int(state.count), steps)

  def test_numpy_forms_agree(self):
    """Recurrence, displacement recursion and the unrolled sum (float64)."""
    h, b, x0 = _quadratic(1)
    xs, us = np_soda_recurrence(NpAdam(0.03), lambda x: h @ x - b, x0, 25)
    d = np.zeros_like(x0)
    for k, u in enumerate(us):
      d = (k + 1) / (k + 2) * d + u
      np.testing.assert_allclose(x0 + d, xs[k + 1], rtol=1e-12, atol=1e-12)
    kk = len(us)
    unrolled = x0 + sum((j + 2) / (kk + 1) * u for j, u in enumerate(us))
    np.testing.assert_allclose(unrolled, xs[-1], rtol=1e-12, atol=1e-12)

  @parameterized.parameters("init", "zero")
  def test_unrolled_form_with_given_updates(self, anchor):
    """Identity base: the updates u_j are the inputs; x_K has a closed form."""
    rng = np.random.default_rng(3)
    x0 = rng.normal(size=(5,))
    us = rng.normal(size=(30, 5)) * 0.1
    tx = soda_lib.soda(optax.identity(), anchor=anchor)
    params = jnp.asarray(x0, jnp.float32)
    state = tx.init(params)
    update = jax.jit(tx.update)
    for u in us:
      delta, state = update(jnp.asarray(u, jnp.float32), state, params)
      params = optax.apply_updates(params, delta)
    kk = len(us)
    z0 = x0 if anchor == "init" else np.zeros_like(x0)
    # Unrolled: x_K = z0 + (x_0 - z0)/(K+1) + sum_j (j+2)/(K+1) u_j.
    expected = (
      z0
      + (x0 - z0) / (kk + 1)
      + sum((j + 2) / (kk + 1) * u for j, u in enumerate(us))
    )
    np.testing.assert_allclose(params, expected, rtol=1e-5, atol=1e-6)

  def test_first_step_equals_base_step(self):
    params = {"w": jnp.arange(4.0), "b": jnp.ones(2)}
    grads = jax.tree.map(lambda p: 0.3 * p + 1.0, params)
    base = optax.adam(0.1)
    u_base, _ = jax.jit(base.update)(grads, base.init(params), params)
    tx = soda_lib.soda(base)
    u, _ = jax.jit(tx.update)(grads, tx.init(params), params)
    chex_equal = jax.tree.map(np.testing.assert_allclose, u, u_base)
    del chex_equal


class SemanticsTest(parameterized.TestCase):
  def test_zero_lr_contracts_displacement(self):
    tx = soda_lib.soda(optax.sgd(0.0))
    z0 = jnp.array([1.0, -2.0, 3.0])
    state = tx.init(z0)
    # First call captures the anchor at z0; x stays at z0 with lr = 0.
    u, state = tx.update(jnp.ones(3), state, z0)
    np.testing.assert_array_equal(u, 0.0)
    x = z0 + jnp.array([0.5, 0.5, -1.0])  # perturb, then watch it contract
    for k in range(1, 8):
      d_before = x - z0
      u, state = tx.update(jnp.ones(3), state, x)
      x = x + u
      np.testing.assert_allclose(
        x - z0, d_before * (k + 1) / (k + 2), rtol=1e-6
      )

  def test_anchor_captured_lazily(self):
    """Params loaded after init become the anchor (fine-tuning)."""
    tx = soda_lib.soda(optax.sgd(0.0))
    state = tx.init(jnp.zeros(3))
    pretrained = jnp.array([1.0, 2.0, 3.0])
    _, state = tx.update(jnp.zeros(3), state, pretrained)
    np.testing.assert_array_equal(state.anchor, pretrained)
    u, state = tx.update(jnp.zeros(3), state, pretrained + 1.0)
    np.testing.assert_allclose(u, -1.0 / 3.0, rtol=1e-6)  # c_1 = 1/3

  @parameterized.parameters(0, 1, 3)
  def test_start_step(self, start_step):
    h, b, x0 = _quadratic(2)
    steps = 12
    xs_ref, _ = np_soda_recurrence(
      NpAdam(0.05), lambda x: h @ x - b, x0, steps, start_step=start_step
    )
    tx = soda_lib.soda(optax.adam(0.05), start_step=start_step)
    params = jnp.asarray(x0, jnp.float32)
    state = tx.init(params)
    for k in range(steps):
      u, state = tx.update(
        jnp.asarray(h, jnp.float32) @ params - jnp.asarray(b, jnp.float32),
        state,
        params,
      )
      params = params + u
      np.testing.assert_allclose(params, xs_ref[k + 1], rtol=1e-5, atol=2e-5)
    # Pass-through steps equal the base exactly.
    base = optax.adam(0.05)
    p = jnp.asarray(x0, jnp.float32)
    bs, ss = base.init(p), tx.init(p)
    for _ in range(start_step):
      g = jnp.asarray(h, jnp.float32) @ p
      ub, bs = base.update(g, bs, p)
      us, ss = tx.update(g, ss, p)
      np.testing.assert_array_equal(ub, us)
      p = p + ub

  @parameterized.parameters("tree", "prefix", "callable")
  def test_mask(self, kind):
    params = {
      "dense": {"kernel": jnp.ones((2, 3)), "bias": jnp.ones(3)},
      "emb": jnp.ones((4, 2)),
    }
    full = {"dense": {"kernel": True, "bias": False}, "emb": False}
    mask = {
      "tree": full,
      "prefix": {"dense": {"kernel": True, "bias": False}, "emb": False},
      "callable": lambda p: jax.tree.map(
        lambda x: x.ndim == 2 and x.shape[0] == 2, p
      ),
    }[kind]
    if kind == "prefix":
      mask = {"dense": True, "emb": False}
      full = {"dense": {"kernel": True, "bias": True}, "emb": False}
    base = optax.sgd(0.1)
    tx = soda_lib.soda(base, mask=mask)
    state = tx.init(params)
    # Anchor only on masked-in leaves.
    leaves = jax.tree.map(
      lambda m, a: isinstance(a, optax.MaskedNode),
      full,
      state.anchor,
      is_leaf=lambda v: isinstance(v, optax.MaskedNode),
    )
    jax.tree.map(
      lambda m, is_masked: self.assertEqual(m, not is_masked), full, leaves
    )
    grads = jax.tree.map(jnp.ones_like, params)
    _, state = tx.update(grads, state, params)
    moved = jax.tree.map(lambda p: p + 1.0, params)
    u, state = tx.update(grads, state, moved)
    for path_mask, uu in zip(jax.tree.leaves(full), jax.tree.leaves(u)):
      expected = -0.1 - (1.0 / 3.0 if path_mask else 0.0)
      np.testing.assert_allclose(uu, expected, rtol=1e-6)

  def test_zero_anchor_stores_nothing(self):
    params = {"a": jnp.ones((3, 3)), "b": jnp.ones(3)}
    tx = soda_lib.soda(optax.sgd(0.1), anchor="zero")
    shapes = jax.eval_shape(tx.init, params)
    self.assertEmpty(jax.tree.leaves(shapes.anchor))

  def test_state_memory_is_one_param_buffer(self):
    params = {"a": jnp.ones((30, 20), jnp.bfloat16), "b": jnp.ones(20)}
    sds = jax.tree.map(lambda p: jax.ShapeDtypeStruct(p.shape, p.dtype), params)
    base = optax.adam(1e-3)
    nbytes = lambda t: sum(
      x.size * x.dtype.itemsize for x in jax.tree.leaves(t)
    )
    extra = nbytes(jax.eval_shape(soda_lib.soda(base).init, sds)) - nbytes(
      jax.eval_shape(base.init, sds)
    )
    # anchor + int32 count + the float32 iterate of the bf16 leaf (the
    # compensation)
    self.assertEqual(extra, nbytes(params) + 4 + 4 * params["a"].size)
    extra = nbytes(
      jax.eval_shape(soda_lib.soda(base, compensate=False).init, sds)
    ) - nbytes(jax.eval_shape(base.init, sds))
    self.assertEqual(extra, nbytes(params) + 4)  # anchor + int32 count

  def test_validation(self):
    with self.assertRaisesRegex(ValueError, "anchor"):
      soda_lib.soda(optax.sgd(0.1), anchor="origin")
    for bad in (-1, 1.5, True):
      with self.assertRaisesRegex(ValueError, "start_step"):
        soda_lib.soda(optax.sgd(0.1), start_step=bad)
    with self.assertRaisesRegex(TypeError, "base_optimizer"):
      soda_lib.soda(lambda x: x)
    tx = soda_lib.soda(optax.sgd(0.1))
    state = tx.init(jnp.ones(2))
    with self.assertRaisesRegex(ValueError, "params"):
      tx.update(jnp.ones(2), state)
    with self.assertRaisesRegex(ValueError, "mask"):
      soda_lib.soda(optax.sgd(0.1), mask={"x": True}).init({"a": jnp.ones(2)})


def _zero_lr_displacement_run(params_dtype, z0, steps, **kw):
  """Anchor at z0, displace by 0.5, then ``steps`` zero-lr SODA steps (jitted,
  apply_updates)."""
  tx = soda_lib.soda(optax.sgd(0.0), **kw)
  z0 = jnp.asarray(z0, params_dtype)
  g = jnp.ones_like(z0)
  state = tx.init(z0)
  step = jax.jit(tx.update)
  _, state = step(g, state, z0)  # k = 0 captures the anchor
  x = (z0 + 0.5).astype(params_dtype)
  for _ in range(steps):
    u, state = step(g, state, x)
    x = optax.apply_updates(x, u)
  return x, state


def _straightforward_soda_update(base, mask, start_step, anchor, comp):
  """SODA's update written leaf by leaf and literally (the anchor rewritten
  every step).

  For params {"w", "b"} with static per-leaf ``mask`` and ``comp`` (float32
  iterate kept); the library's update must give the same numbers while touching
  the anchor only at capture.
  """

  def update(g, state, params):
    u, inner = base.update(g, state.inner_state, params)
    k = state.count
    c = jnp.where(k >= start_step, 1.0 / (k.astype(jnp.float32) + 2.0), 0.0)
    deltas, anchors, iterates = {}, {}, {}
    for name, p in params.items():
      a, xs = state.anchor[name], state.iterate[name]
      if not mask[name]:
        deltas[name], anchors[name], iterates[name] = (
          u[name].astype(p.dtype),
          a,
          xs,
        )
        continue
      p32 = p.astype(jnp.float32)
      z0 = (
        0.0
        if anchor == "zero"
        else jnp.where(k == start_step, p, a).astype(jnp.float32)
      )
      if comp[name]:
        fi = jnp.finfo(p.dtype)
        rounded = lambda v: jax.lax.reduce_precision(v, fi.nexp, fi.nmant)
        # The float32 iterate, unless the held parameter is not its rounding.
        x = jnp.where(rounded(xs) == p32, xs, p32)
        xs = x + (u[name].astype(jnp.float32) - c * (x - z0))
        delta = (rounded(xs) - p32).astype(p.dtype)
      else:
        delta = (u[name].astype(jnp.float32) - c * (p32 - z0)).astype(p.dtype)
      deltas[name] = delta
      anchors[name] = (
        a if anchor == "zero" else jnp.where(k == start_step, p, a)
      )
      iterates[name] = xs
    return deltas, soda_lib.SodaState(k + 1, anchors, inner, iterates)

  return update


class FusedUpdateTest(parameterized.TestCase):
  """The update (anchor written only at capture) equals the literal leaf-by-leaf
  form."""

  @parameterized.parameters(
    (jnp.float32, "init", 0),
    (jnp.float32, "init", 2),
    (jnp.bfloat16, "init", 1),
    (jnp.bfloat16, "zero", 0),
  )
  def test_equals_straightforward_reference(self, dtype, anchor, start_step):
    rng = np.random.default_rng(0)
    params = {
      "w": jnp.asarray(rng.normal(size=(5, 3)), dtype),
      "b": jnp.asarray(rng.normal(size=(3,)), dtype),
    }
    mask = {"w": True, "b": start_step != 2}  # one unwrapped leaf in one case
    tx = soda_lib.soda(
      optax.adam(0.05), anchor=anchor, mask=mask, start_step=start_step
    )
    comp = {n: mask[n] and jnp.finfo(dtype).bits < 32 for n in params}
    ref = jax.jit(
      _straightforward_soda_update(
        optax.adam(0.05), mask, start_step, anchor, comp
      )
    )
    step = jax.jit(tx.update)
    state = tx.init(params)
    ref_state = state
    x = ref_x = params
    for k in range(5):  # through the capture step and past it
      g = {
        n: jnp.asarray(rng.normal(size=v.shape), dtype)
        for n, v in params.items()
      }
      if k == start_step + 1:  # the anchor is taken at capture, not at init
        x = ref_x = jax.tree.map(lambda v: v + 1, x)
      u, state = step(g, state, x)
      ref_u, ref_state = ref(g, ref_state, ref_x)
      for a, b in zip(
        jax.tree.leaves((u, state)), jax.tree.leaves((ref_u, ref_state))
      ):
        np.testing.assert_array_equal(
          np.asarray(a, np.float64), np.asarray(b, np.float64)
        )
      x, ref_x = optax.apply_updates(x, u), optax.apply_updates(ref_x, ref_u)


class PrecisionTest(parameterized.TestCase):
  """The decay in the dtypes users run: bf16 parameters and exact float64."""

  Z0 = np.array([0.0, 1.0, 3.0, 10.0, -7.0, 100.0])

  def _ref(self, steps):
    d = 0.5  # float64 recurrence d_{k+1} = d_k (k+1)/(k+2) from k = 1
    for k in range(1, steps + 1):
      d = d * (k + 1) / (k + 2)
    return self.Z0 + d

  def test_bf16_pull_does_not_stall(self):
    ref = self._ref(199)
    self.assertAlmostEqual(ref[0], 0.00498, places=5)  # the documented number
    x, state = _zero_lr_displacement_run(jnp.bfloat16, self.Z0, 199)
    self.assertEqual(x.dtype, jnp.bfloat16)
    self.assertEqual(state.iterate.dtype, jnp.float32)
    # The held bf16 parameters are the float64 iterate rounded to bf16 ...
    np.testing.assert_array_equal(
      np.asarray(x, np.float64),
      np.asarray(jnp.asarray(ref, jnp.bfloat16), np.float64),
    )
    # ... and the state holds the iterate itself, to float32 accuracy.
    exact = np.asarray(state.iterate, np.float64)
    np.testing.assert_allclose(
      exact - self.Z0, ref - self.Z0, rtol=1e-4, atol=1e-5
    )

  def test_bf16_without_compensation_stalls(self):
    """The failure the compensation fixes (so the test above can fail)."""
    x, state = _zero_lr_displacement_run(
      jnp.bfloat16, self.Z0, 199, compensate=False
    )
    self.assertIsInstance(state.iterate, optax.MaskedNode)
    self.assertGreater(float(x[3]) - 10.0, 0.06)  # stuck far above 10.005

  def test_compensation_defaults(self):
    for dtype, on in (
      (jnp.bfloat16, True),
      (jnp.float16, True),
      (jnp.float32, False),
    ):
      state = soda_lib.soda(optax.sgd(0.1)).init({"w": jnp.ones(2, dtype)})
      self.assertEqual(not isinstance(state.iterate["w"], optax.MaskedNode), on)
    state = soda_lib.soda(optax.sgd(0.1), compensate=True).init(jnp.ones(2))
    self.assertEqual(state.iterate.dtype, jnp.float32)
    state = soda_lib.soda(optax.sgd(0.1), mask={"a": False, "b": True}).init(
      {"a": jnp.ones(2, jnp.bfloat16), "b": jnp.ones(2, jnp.bfloat16)}
    )
    self.assertIsInstance(state.iterate["a"], optax.MaskedNode)
    with self.assertRaisesRegex(TypeError, "compensate"):
      soda_lib.soda(optax.sgd(0.1), compensate="yes")

  def test_bf16_small_base_updates_accumulate(self):
    """u_k below half an ulp of x is not lost either (compensated summation)."""
    tx = soda_lib.soda(
      optax.sgd(1e-4), mask=lambda p: jax.tree.map(lambda _: True, p)
    )
    x = jnp.full(3, 4.0, jnp.bfloat16)  # ulp(4) = 2^-5; each step moves by 1e-4
    state = tx.init(x)
    step = jax.jit(tx.update)
    ref, z0 = 4.0, 4.0
    u_base = float(jnp.asarray(1e-4, jnp.bfloat16))  # sgd computes u_k in bf16
    for k in range(300):
      u, state = step(-jnp.ones(3, jnp.bfloat16), state, x)
      x = optax.apply_updates(x, u)
      ref = ref + u_base - (ref - z0) / (k + 2)
    exact = np.asarray(state.iterate, np.float64)
    np.testing.assert_allclose(exact, ref, rtol=1e-6)
    # The held parameters are that iterate rounded to bf16.
    np.testing.assert_array_equal(
      np.asarray(x), np.asarray(state.iterate.astype(jnp.bfloat16))
    )

  def test_bf16_params_changed_outside_continue_from_them(self):
    """Weights loaded after init (and any element changed between steps) restart
    the iterate.

    An update that kept the stale float32 iterate would pull the parameters back
    towards the values seen at init (here by -(loaded)/1 at k = 1: a jump of
    order 10, not 1e-2).
    """
    tx = soda_lib.soda(optax.sgd(0.01))
    state = tx.init(jnp.zeros(4, jnp.bfloat16))
    loaded = jnp.asarray([10.0, -3.0, 0.5, 0.0], jnp.bfloat16)
    g = jnp.ones(4, jnp.bfloat16)
    step = jax.jit(tx.update)
    u, state = step(g, state, loaded)  # k = 0: anchor = loaded, x = loaded
    x = optax.apply_updates(loaded, u)
    u_base = float(jnp.asarray(-0.01, jnp.bfloat16))  # sgd's update in bf16
    ref = np.asarray(loaded, np.float64) + u_base
    np.testing.assert_allclose(
      np.asarray(state.iterate, np.float64), ref, rtol=1e-6
    )
    # Change one element between steps: that element continues from the new
    # value.
    moved = x.at[1].set(-2.5)
    u, state = step(g, state, moved)
    z0 = np.asarray(loaded, np.float64)
    ref = np.where(np.arange(4) == 1, -2.5, ref)
    ref = ref + u_base - (ref - z0) / 3.0  # k = 1
    np.testing.assert_allclose(
      np.asarray(state.iterate, np.float64), ref, rtol=1e-6, atol=1e-7
    )
    np.testing.assert_array_equal(
      np.asarray(optax.apply_updates(moved, u)),
      np.asarray(state.iterate.astype(jnp.bfloat16)),
    )

  def test_float64_coefficient_exact(self):
    """1/(k+2) in float64 for float64 parameters (float32 would give
    0.33333334)."""
    with jax.enable_x64(True):
      z0 = jnp.zeros(2, jnp.float64)
      tx = soda_lib.soda(optax.sgd(0.0))
      state = tx.init(z0)
      _, state = tx.update(z0, state, z0)
      x = jnp.ones(2, jnp.float64)
      u, state = jax.jit(tx.update)(z0, state, x)
      self.assertEqual(u.dtype, jnp.float64)
      self.assertEqual(float(u[0]), -1.0 / 3.0)
      ref = self._ref(60)
      x, _ = _zero_lr_displacement_run(jnp.float64, self.Z0, 60)
      np.testing.assert_allclose(np.asarray(x), ref, rtol=1e-15, atol=1e-13)


class OptaxCitizenTest(parameterized.TestCase):
  @parameterized.parameters(jnp.bfloat16, jnp.float16, jnp.float32)
  def test_dtype_preserved_and_state_stable_under_cond(self, dtype):
    params = {"w": jnp.ones((3, 2), dtype), "b": jnp.zeros(2, dtype)}
    tx = soda_lib.soda(optax.adamw(1e-2, weight_decay=0.0))
    state = tx.init(params)
    grads = jax.tree.map(lambda p: jnp.full_like(p, 0.5), params)

    @jax.jit
    def step(state, params):
      return tx.update(grads, state, params)

    u, new_state = step(state, params)
    jax.tree.map(lambda uu, p: self.assertEqual(uu.dtype, p.dtype), u, params)
    jax.tree.map(
      lambda a, b: self.assertEqual(a.dtype, b.dtype), state, new_state
    )
    # The same state type on both branches of a cond (MultiSteps pattern).
    out = jax.jit(
      lambda st: jax.lax.cond(
        True, lambda s: step(s, params)[1], lambda s: s, st
      )
    )(state)
    jax.tree.map(lambda a, b: self.assertEqual(a.dtype, b.dtype), out, state)

  def test_float64(self):
    with jax.enable_x64(True):
      params = jnp.ones(3, jnp.float64)
      tx = soda_lib.soda(optax.sgd(0.1))
      state = tx.init(params)
      u, state2 = tx.update(jnp.ones(3, jnp.float64), state, params)
      self.assertEqual(u.dtype, jnp.float64)
      out = jax.lax.cond(
        True, lambda s: tx.update(jnp.ones(3), s, params)[1], lambda s: s, state
      )
      jax.tree.map(lambda a, b: self.assertEqual(a.dtype, b.dtype), out, state)

  def test_chain_extra_args_and_no_recompile(self):
    tx = optax.chain(
      optax.clip_by_global_norm(1.0), soda_lib.soda(optax.adam(1e-2))
    )
    params = {"w": jnp.ones((4, 4))}
    state = tx.init(params)
    traces = []

    @jax.jit
    def step(params, state, grads):
      traces.append(1)
      u, state = tx.update(grads, state, params, unexpected_kwarg=3)
      return optax.apply_updates(params, u), state

    for i in range(3):  # call 0 captures the anchor; later calls must reuse
      params, state = step(params, state, {"w": jnp.full((4, 4), float(i))})
    self.assertLen(traces, 1)

  def test_extra_args_forwarded(self):
    params = jnp.ones(3)
    tx = soda_lib.soda(optax.contrib.reduce_on_plateau()) if False else None
    del tx
    seen = {}

    def upd(updates, state, params=None, *, value=None):
      seen["value"] = value
      return updates, state

    base = optax.GradientTransformationExtraArgs(
      lambda p: optax.EmptyState(), upd
    )
    tx = soda_lib.soda(base)
    tx.update(params, tx.init(params), params, value=7.0)
    self.assertEqual(seen["value"], 7.0)

  def test_inject_hyperparams(self):
    base = optax.inject_hyperparams(optax.adamw)(
      learning_rate=0.1, weight_decay=0.0
    )
    tx = soda_lib.soda(base)
    params = jnp.ones(3)
    state = tx.init(params)
    self.assertAlmostEqual(float(optax.tree.get(state, "learning_rate")), 0.1)
    state = optax.tree.set(state, learning_rate=0.0)
    u, state = tx.update(jnp.ones(3), state, params)
    np.testing.assert_array_equal(u, 0.0)

  def test_multisteps(self):
    k = 4
    base = optax.adam(0.1)
    tx = optax.MultiSteps(soda_lib.soda(base), every_k_schedule=k)
    ref = soda_lib.soda(base)
    params = jnp.array([1.0, -1.0, 2.0], jnp.bfloat16).astype(jnp.float32)
    p_ref = params
    state, rstate = tx.init(params), ref.init(p_ref)
    step = jax.jit(tx.update)
    rng = np.random.default_rng(0)
    for _outer in range(3):
      gs = [jnp.asarray(rng.normal(size=3), jnp.float32) for _ in range(k)]
      for i, g in enumerate(gs):
        u, state = step(g, state, params)
        if i < k - 1:
          np.testing.assert_array_equal(u, 0.0)
        params = optax.apply_updates(params, u)
      ru, rstate = ref.update(sum(gs) / k, rstate, p_ref)
      p_ref = optax.apply_updates(p_ref, ru)
      np.testing.assert_allclose(params, p_ref, rtol=1e-6, atol=1e-7)

  def test_multisteps_bf16(self):
    params = jnp.ones(4, jnp.bfloat16)
    tx = optax.MultiSteps(soda_lib.soda(optax.adam(0.1)), every_k_schedule=2)
    state = tx.init(params)
    step = jax.jit(tx.update)
    for _ in range(4):
      u, state = step(jnp.ones(4, jnp.bfloat16), state, params)
      self.assertEqual(u.dtype, jnp.bfloat16)
      params = optax.apply_updates(params, u)

  def test_map_params_and_partition_with_muon(self):
    params = {"w": jnp.ones((8, 4)), "emb": jnp.ones((5, 4)), "b": jnp.ones(4)}
    labels = {"w": "muon", "emb": "adam", "b": "adam"}
    tx = optax.partition(
      {
        "muon": soda_lib.soda(optax.contrib.muon(0.02)),
        "adam": optax.adamw(1e-3, weight_decay=0.1),
      },
      labels,
    )
    state = tx.init(params)
    step = jax.jit(tx.update)
    grads = jax.tree.map(jnp.ones_like, params)
    for _ in range(2):
      u, state = step(grads, state, params)
      params = optax.apply_updates(params, u)
    self.assertTrue(all(np.isfinite(x).all() for x in jax.tree.leaves(params)))

  def test_map_params_reaches_anchor(self):
    params = {"w": jnp.ones((3, 2)), "b": jnp.ones(2)}
    tx = soda_lib.soda(optax.adam(1e-3), mask={"w": True, "b": False})
    state = tx.init(params)
    mapped = optax.tree.map_params(
      tx.init,
      lambda p: (
        p if isinstance(p, optax.MaskedNode) else p.astype(jnp.bfloat16)
      ),
      state,
      transform_non_params=lambda v: v,
      is_leaf=lambda v: isinstance(v, optax.MaskedNode),
    )
    self.assertEqual(mapped.anchor["w"].dtype, jnp.bfloat16)
    self.assertIsInstance(mapped.anchor["b"], optax.MaskedNode)
    self.assertEqual(mapped.inner_state[0].mu["w"].dtype, jnp.bfloat16)

  def test_soda_muon_with_mask_masked_node_states(self):
    params = {"w": jnp.ones((8, 4)) * 0.1, "b": jnp.ones(4)}
    tx = soda_lib.soda_muon(
      0.02, mask=lambda p: jax.tree.map(lambda x: x.ndim == 2, p)
    )
    state = tx.init(params)
    self.assertIsInstance(state.anchor["b"], optax.MaskedNode)
    u, state = jax.jit(tx.update)(
      jax.tree.map(jnp.ones_like, params), state, params
    )
    self.assertEqual(u["w"].shape, (8, 4))

  def test_donation(self):
    tx = soda_lib.soda(optax.adam(1e-2))
    params = {"w": jnp.ones((16, 8))}
    state = tx.init(params)  # eager init must copy, not alias, params

    @functools.partial(jax.jit, donate_argnums=(0, 1))
    def step(params, state):
      grads = jax.tree.map(lambda p: 2 * p, params)
      u, state = tx.update(grads, state, params)
      return optax.apply_updates(params, u), state

    ref_p, ref_s = params, state
    ref_p, ref_s = jax.jit(step.__wrapped__)(ref_p, ref_s)
    new_p, new_s = step(params, state)
    jax.tree.map(np.testing.assert_array_equal, new_p, ref_p)
    jax.tree.map(np.testing.assert_array_equal, new_s, ref_s)
    new_p, new_s = step(new_p, new_s)  # donated buffers can be reused
    self.assertTrue(np.isfinite(np.asarray(new_p["w"])).all())

  def test_sharding_preserved_and_matches_single_device(self):
    n = jax.device_count()
    if n < 8:
      pytest.fail("tests/conftest.py should provide 8 fake CPU devices")
    mesh = jax.make_mesh((8,), ("data",))
    sh = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("data"))
    rep = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
    rng = np.random.default_rng(0)
    params = {
      "w": jnp.asarray(rng.normal(size=(16, 8)), jnp.float32),
      "b": jnp.asarray(rng.normal(size=(8,)), jnp.float32),
    }
    grads = jax.tree.map(lambda p: 0.5 * p + 0.1, params)
    tx = soda_lib.soda(optax.adam(1e-2))
    shard = {"w": sh, "b": rep}
    p_sh = jax.device_put(params, shard)
    g_sh = jax.device_put(grads, shard)
    s_sh = tx.init(p_sh)
    step = jax.jit(lambda g, s, p: tx.update(g, s, p))
    ref_u, ref_s = step(grads, tx.init(params), params)
    for _ in range(2):
      u, s_sh = step(g_sh, s_sh, p_sh)
    self.assertTrue(u["w"].sharding.is_equivalent_to(sh, 2))
    self.assertTrue(s_sh.anchor["w"].sharding.is_equivalent_to(sh, 2))
    u1, _ = step(g_sh, tx.init(p_sh), p_sh)
    jax.tree.map(
      lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6), u1, ref_u
    )
