"""SGSR and CISC against float64 numpy transcriptions of the equations (brute
force loops)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import jaxpapers.sscl as S

RNG = np.random.default_rng(0)
F32 = np.float32


def _np_affinity(g, gamma, theta):
  g = g / np.linalg.norm(g, axis=-1, keepdims=True)
  s = g @ g.T
  out = np.zeros_like(s)
  for i in range(len(s)):
    keep = [j for j in range(len(s)) if s[i, j] >= theta or j == i]
    e = np.exp(gamma * s[i, keep] - np.max(gamma * s[i, keep]))
    out[i, keep] = e / e.sum()
  return out


def _softmax(x):
  e = np.exp(x - x.max(-1, keepdims=True))
  return e / e.sum(-1, keepdims=True)


def _unit(x):
  return x / np.linalg.norm(x, axis=-1, keepdims=True)


def test_vfm_affinity_matches_numpy_and_masks_below_threshold():
  g = RNG.normal(size=(2, 9, 5))
  A = np.asarray(
    jax.jit(lambda g: S.vfm_affinity(g, gamma=2.5, threshold=0.1))(
      g.astype(F32)
    )
  )
  for b in range(2):
    ref = _np_affinity(g[b], 2.5, 0.1)
    np.testing.assert_allclose(A[b], ref, rtol=1e-5, atol=1e-6)
  s = _unit(g[0]) @ _unit(g[0]).T
  assert np.all(A[0][(s < 0.1) & ~np.eye(9, dtype=bool)] == 0)


def test_vfm_affinity_of_orthogonal_or_zero_features_is_identity():
  aff = jax.jit(lambda g: S.vfm_affinity(g, threshold=0.5))
  A = aff(np.eye(4, dtype=F32))
  np.testing.assert_allclose(A, np.eye(4), atol=1e-7)
  A0 = aff(np.zeros((4, 2), F32))  # zero features: the diagonal is never masked
  assert np.all(np.isfinite(A0)) and np.allclose(np.asarray(A0).sum(-1), 1)


def test_refine_logits_is_the_closed_form_not_the_iteration():
  A = _np_affinity(RNG.normal(size=(7, 4)), 3.0, -1.0)
  L = RNG.normal(size=(7, 3)) * 5
  R = np.asarray(
    jax.jit(lambda L, A: S.refine_logits(L, A, alpha=0.3, steps=3))(
      L.astype(F32), A.astype(F32)
    )
  )
  ref = 0.7 * L + 0.3 * np.linalg.matrix_power(A, 3) @ L
  np.testing.assert_allclose(R, ref, rtol=1e-4, atol=1e-4)
  it = L
  for _ in range(3):
    it = 0.7 * it + 0.3 * A @ it
  assert np.abs(R - it).max() > 1e-2
  k0 = jax.jit(lambda L, A: S.refine_logits(L, A, steps=0))(
    L.astype(F32), A.astype(F32)
  )
  np.testing.assert_allclose(k0, L, rtol=1e-6)


def test_proxy_attention_and_patch_text_logits():
  A = _np_affinity(RNG.normal(size=(5, 3)), 3.0, 0.2)
  v = RNG.normal(size=(5, 4))
  got = jax.jit(S.proxy_attention)(v.astype(F32), A.astype(F32))
  np.testing.assert_allclose(got, A @ v, rtol=1e-5)
  f, t = RNG.normal(size=(2, 5, 4)), RNG.normal(size=(3, 4))
  ref = 40 * _unit(f) @ _unit(t).T
  got = jax.jit(S.patch_text_logits)(f.astype(F32), t.astype(F32))
  np.testing.assert_allclose(got, ref, rtol=1e-4)


def test_dense_pseudolabels_and_strict_confidence():
  R = np.array([[2.0, 0.0], [0.0, 0.0], [0.0, 3.0]], F32)
  labels, w = jax.jit(
    lambda R: S.dense_pseudolabels(R, tau=2.0, confidence=0.5)
  )(R)
  q = _softmax(R.astype(np.float64) / 2.0)
  np.testing.assert_array_equal(labels, q.argmax(-1))
  np.testing.assert_array_equal(w, (q.max(-1) > 0.5).astype(F32))
  assert float(w[1]) == 0.0  # q = 0.5 exactly is not confident


def test_dense_pseudolabel_ce_and_kl_match_numpy():
  x = RNG.normal(size=(2, 6, 4)) * 3
  y = RNG.integers(0, 4, (2, 6))
  w = (RNG.random((2, 6)) < 0.6).astype(np.float64)
  logp = np.log(_softmax(x))
  nll = -np.take_along_axis(logp, y[..., None], -1)[..., 0]
  ref = (w * nll).sum() / max(1.0, w.sum())
  # one compilation for the three weightings
  ce = jax.jit(S.dense_pseudolabel_ce)
  got = ce(x.astype(F32), y.astype(np.int32), w.astype(F32))
  np.testing.assert_allclose(got, ref, rtol=1e-5)
  # sum of weights 0.6 < 1: divide by 1, not by 0.6
  small = np.full((2, 6), 0.05, F32)
  got = ce(x.astype(F32), y.astype(np.int32), small)
  np.testing.assert_allclose(got, (0.05 * nll).sum(), rtol=1e-5)
  assert float(ce(x.astype(F32), y.astype(np.int32), 0 * small)) == 0.0
  q = _softmax(RNG.normal(size=(2, 6, 4)))
  q[0, 0] = [1, 0, 0, 0]  # zero entries contribute 0 (0 log 0)
  kl = (q * (np.log(np.where(q > 0, q, 1)) - logp)).sum(-1)
  ref = (w * kl).sum() / max(1.0, w.sum())
  kl = jax.jit(S.dense_kl)(x.astype(F32), q.astype(F32), w.astype(F32))
  np.testing.assert_allclose(kl, ref, rtol=1e-5)


def _np_infonce(z, ids, tau):
  A, Vn, _ = z.shape
  f = _unit(z).reshape(A * Vn, -1)
  fid = np.repeat(ids, Vn)
  total = 0.0
  for i in range(A * Vn):
    others = [j for j in range(A * Vn) if j != i]
    den = np.log(sum(np.exp(f[i] @ f[j] / tau) for j in others))
    pos = [j for j in others if fid[j] == fid[i]]
    total += -np.mean([f[i] @ f[p] / tau - den for p in pos])
  return total / (A * Vn)


def test_sgsr_targets_cisc_keep_and_sscl_loss_match_numpy_in_one_compilation():
  # the fast check of sgsr_targets, region_consistency_loss (3 modes), keep_loss
  # and sscl_loss: tiny inputs, one jitted program; the slow tests below cover
  # more modes, shapes and grads
  tp, g, txt = (
    RNG.normal(size=(1, 4, 5)),
    RNG.normal(size=(1, 4, 3)),
    RNG.normal(size=(3, 5)),
  )
  logits = RNG.normal(size=(1, 4, 3)) * 2
  z, t = RNG.normal(size=(2, 2, 5)), RNG.normal(size=(2, 5))
  sc, tc = RNG.normal(size=(2, 5)), RNG.normal(size=(2, 5))
  cfg = S.SSCLConfig(
    gamma=2.0,
    threshold=0.0,
    alpha=0.4,
    steps=2,
    logit_scale=10.0,
    tau_p=0.5,
    tau_c=0.2,
    lambda_cisc=0.7,
    lambda_sgsr=1.3,
    lambda_keep=0.2,
    cisc_center=0.25,
  )

  @jax.jit
  def f(tp, g, txt, logits, z, t, sc, tc):
    tg = S.sgsr_targets(tp, g, txt, cfg)
    total, terms = S.sscl_loss(logits, tg, z, t, sc, tc, cfg)
    modes = {
      "center": S.region_consistency_loss(z, mode="center"),
      "teacher": S.region_consistency_loss(z, mode="teacher", teacher=t),
      "infonce": S.region_consistency_loss(z, mode="infonce", tau=0.2),
      "keep": S.keep_loss(sc, tc),
    }
    return tg, total, terms, modes

  args = [a.astype(F32) for a in (tp, g, txt, logits, z, t, sc, tc)]
  tg, total, terms, modes = jax.tree.map(np.asarray, f(*args))
  A = _np_affinity(g[0], 2.0, 0.0)
  L = 10 * _unit(tp[0]) @ _unit(txt).T
  R = 0.6 * L + 0.4 * A @ A @ L
  q = _softmax(R / 0.5)
  np.testing.assert_allclose(tg.refined[0], R, rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(tg.probs[0], q, rtol=1e-4, atol=1e-5)
  np.testing.assert_array_equal(tg.labels[0], q.argmax(-1))
  np.testing.assert_array_equal(tg.weights[0], (q.max(-1) > 0.5).astype(F32))
  zh = _unit(z)
  ref = {
    "center": np.mean(((zh - _unit(zh.mean(1))[:, None]) ** 2).sum(-1)),
    "teacher": np.mean(1 - np.einsum("avd,ad->av", zh, _unit(t))),
    "infonce": _np_infonce(z, np.arange(2), 0.2),
    "keep": np.mean(1 - (_unit(sc) * _unit(tc)).sum(-1)),
  }
  for k, v in ref.items():
    np.testing.assert_allclose(modes[k], v, rtol=1e-4, atol=1e-6, err_msg=k)
  logp = np.log(_softmax(logits[0]))
  nll = -logp[np.arange(4), q.argmax(-1)]
  w = (q.max(-1) > 0.5).astype(np.float64)
  sgsr = (w * nll).sum() / max(1.0, w.sum())
  np.testing.assert_allclose(terms["sgsr"], sgsr, rtol=1e-4, atol=1e-6)
  cisc = ref["teacher"] + 0.5 * ref["infonce"] + 0.25 * ref["center"]
  np.testing.assert_allclose(
    total, 0.7 * cisc + 1.3 * sgsr + 0.2 * ref["keep"], rtol=1e-4
  )


@pytest.mark.slow  # compiles for >5 s on 2 cores: kept out of the default suite
def test_region_consistency_modes_match_brute_force():
  z = RNG.normal(size=(3, 4, 5))
  t = RNG.normal(size=(3, 5))
  zf = z.astype(F32)
  zh = _unit(z)
  c = _unit(zh.mean(1))
  ref_center = np.mean(((zh - c[:, None]) ** 2).sum(-1))
  np.testing.assert_allclose(
    S.region_consistency_loss(zf, mode="center"), ref_center, rtol=1e-5
  )
  ref_t = np.mean(1 - np.einsum("avd,ad->av", zh, _unit(t)))
  got = S.region_consistency_loss(zf, mode="teacher", teacher=t.astype(F32))
  np.testing.assert_allclose(got, ref_t, rtol=1e-5)
  for ids in (np.arange(3), np.array([0, 1, 0])):
    got = S.region_consistency_loss(
      zf, mode="infonce", anchor_ids=ids.astype(np.int32), tau=0.2
    )
    np.testing.assert_allclose(got, _np_infonce(z, ids, 0.2), rtol=1e-4)


@pytest.mark.slow  # compiles for >5 s on 2 cores: kept out of the default suite
def test_targets_are_stop_gradient():
  z = RNG.normal(size=(2, 3, 4)).astype(F32)
  t = RNG.normal(size=(2, 4)).astype(F32)
  g_t = jax.grad(
    lambda t: S.region_consistency_loss(z, mode="teacher", teacher=t)
  )(t)
  assert np.all(np.asarray(g_t) == 0)
  # center: gradient of ||z_k - sg(c)||^2 w.r.t. unit z is 2(z_k - c) projected; not the
  # gradient that flows through c as well (which would be 0 for V copies of one vector)
  g = jax.grad(lambda z: S.region_consistency_loss(z, mode="center"))(z)
  assert np.abs(np.asarray(g)).max() > 1e-4


@pytest.mark.slow  # compiles for >5 s on 2 cores: kept out of the default suite
def test_sgsr_targets_compose_the_numpy_steps():
  tp, g, txt = (
    RNG.normal(size=(2, 9, 4)),
    RNG.normal(size=(2, 9, 3)),
    RNG.normal(size=(3, 4)),
  )
  cfg = S.SSCLConfig(
    gamma=2.0, threshold=0.0, alpha=0.4, steps=2, logit_scale=10.0, tau_p=0.5
  )
  out = S.sgsr_targets(tp.astype(F32), g.astype(F32), txt.astype(F32), cfg)
  for b in range(2):
    A = _np_affinity(g[b], 2.0, 0.0)
    L = 10 * _unit(tp[b]) @ _unit(txt).T
    R = 0.6 * L + 0.4 * A @ A @ L
    q = _softmax(R / 0.5)
    np.testing.assert_allclose(out.refined[b], R, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(out.probs[b], q, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(out.labels[b], q.argmax(-1))
    np.testing.assert_array_equal(out.weights[b], (q.max(-1) > 0.5).astype(F32))


@pytest.mark.slow  # compiles for >5 s on 2 cores: kept out of the default suite
def test_sscl_loss_is_the_weighted_sum_of_its_terms():
  B, N, C, A, Vn, D = 2, 4, 3, 3, 2, 5
  logits = RNG.normal(size=(B, N, C)).astype(F32)
  tg = jax.jit(S.sgsr_targets)(
    RNG.normal(size=(B, N, D)).astype(F32),
    RNG.normal(size=(B, N, 2)).astype(F32),
    RNG.normal(size=(C, D)).astype(F32),
  )
  z = RNG.normal(size=(A, Vn, D)).astype(F32)
  tr = RNG.normal(size=(A, D)).astype(F32)
  sc, tc = (
    RNG.normal(size=(B, D)).astype(F32),
    RNG.normal(size=(B, D)).astype(F32),
  )
  cfg = S.SSCLConfig(
    lambda_cisc=0.7, lambda_sgsr=1.3, lambda_keep=0.2, cisc_center=0.25
  )
  loss = jax.jit(S.sscl_loss, static_argnums=6)
  total, terms = loss(logits, tg, z, tr, sc, tc, cfg)
  keep = np.mean(
    1 - (_unit(sc.astype(np.float64)) * _unit(tc.astype(np.float64))).sum(-1)
  )
  np.testing.assert_allclose(terms["keep"], keep, rtol=1e-5)
  np.testing.assert_allclose(
    terms["sgsr"],
    S.dense_pseudolabel_ce(logits, tg.labels, tg.weights),
    rtol=1e-6,
  )
  cisc = (
    terms["cisc_teacher"]
    + 0.5 * terms["cisc_infonce"]
    + 0.25 * terms["cisc_center"]
  )
  ref = 0.7 * cisc + 1.3 * terms["sgsr"] + 0.2 * keep
  np.testing.assert_allclose(total, ref, rtol=1e-5)
  _, soft = loss(logits, tg, z, tr, sc, tc, S.SSCLConfig(soft_sgsr=True))
  np.testing.assert_allclose(
    soft["sgsr"], S.dense_kl(logits, tg.probs, tg.weights), rtol=1e-6
  )


@pytest.mark.slow  # compiles for >5 s on 2 cores: kept out of the default suite
def test_sharded_sgsr_targets_equal_single_device_and_do_not_recompile():
  n = jax.device_count()
  tp = jnp.asarray(RNG.normal(size=(n, 16, 4)), jnp.float32)
  g = jnp.asarray(RNG.normal(size=(n, 16, 3)), jnp.float32)
  txt = jnp.asarray(RNG.normal(size=(3, 4)), jnp.float32)
  f = jax.jit(S.sgsr_targets)
  ref = f(tp, g, txt)
  mesh = jax.make_mesh((n,), ("batch",))
  sh = NamedSharding(mesh, P("batch"))
  out = f(jax.device_put(tp, sh), jax.device_put(g, sh), txt)
  for a, b in zip(out, ref):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
  size = f._cache_size()
  f(tp + 1, g, txt)
  assert f._cache_size() == size
