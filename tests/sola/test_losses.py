"""Local support, pair costs, SOLA loss, ULD and MinED against brute-force
references."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpapers.sola as S

V_T, V_S, R, KC, K = 11, 9, 2, 6, 3


def make_table(rng, v_t=V_T, v_s=V_S, r=R):
  strings_t = [
    "".join(rng.choice(list("ab "), size=rng.integers(1, 4)))
    for _ in range(v_t)
  ]
  strings_s = [
    "".join(rng.choice(list("ab "), size=rng.integers(1, 4)))
    for _ in range(v_s)
  ]
  ct, lt = S._tokenize.encode_strings(strings_t, max_chars=4)
  cs, ls = S._tokenize.encode_strings(strings_s, max_chars=4)
  nbr_t2s = np.stack(
    [rng.choice(v_s, r, replace=False) for _ in range(v_t)]
  ).astype(np.int32)
  nbr_s2t = np.stack(
    [rng.choice(v_t, r, replace=False) for _ in range(v_s)]
  ).astype(np.int32)
  tab = S.CorrespondenceTable(
    jnp.asarray(nbr_t2s),
    jnp.asarray(rng.random((v_t, r)) * 0.3, jnp.float32),
    jnp.asarray(nbr_s2t),
    jnp.asarray(rng.random((v_s, r)) * 0.3, jnp.float32),
    jnp.asarray(ct),
    jnp.asarray(lt),
    jnp.asarray(cs),
    jnp.asarray(ls),
  )
  return tab, strings_t, strings_s


def lcp_cost(a, b):
  n = 0
  while n < min(len(a), len(b)) and a[n] == b[n]:
    n += 1
  return 1.0 if not a and not b else 1 - 2 * n / (len(a) + len(b))


def pair_cost_ref(tab, st, ss, t, s):
  t2s = dict(
    zip(
      np.asarray(tab.nbr_t2s[t]).tolist(), np.asarray(tab.cost_t2s[t]).tolist()
    )
  )
  s2t = dict(
    zip(
      np.asarray(tab.nbr_s2t[s]).tolist(), np.asarray(tab.cost_s2t[s]).tolist()
    )
  )
  c = [x for x in (t2s.get(s), s2t.get(t)) if x is not None]
  return min(c) if c else lcp_cost(st[t], ss[s])


@pytest.fixture(scope="module")
def setup():
  rng = np.random.default_rng(0)
  tab, st, ss = make_table(rng)
  B = 4
  t_logits = rng.normal(size=(B, V_T)) * 2
  t_logp_full = t_logits - np.log(np.exp(t_logits).sum(-1, keepdims=True))
  t_ids = np.argsort(-t_logp_full, -1)[:, :KC].astype(np.int32)
  t_logp = np.take_along_axis(t_logp_full, t_ids, -1).astype(np.float32)
  s_logits = (rng.normal(size=(B, V_S)) * 2).astype(np.float32)
  return tab, st, ss, t_ids, t_logp, s_logits


def test_pair_cost_matches_reference(setup):
  tab, st, ss = setup[:3]
  tt, sg = np.meshgrid(np.arange(V_T), np.arange(V_S), indexing="ij")
  got = np.asarray(S.pair_cost(tab, tt, sg))
  for t, s in itertools.product(range(V_T), range(V_S)):
    assert got[t, s] == pytest.approx(
      pair_cost_ref(tab, st, ss, t, s), abs=1e-6
    )


@pytest.mark.parametrize("support", S.SUPPORTS)
def test_local_support_matches_set_construction(setup, support):
  tab, st, ss, t_ids, t_logp, s_logits = setup
  sup = S.local_support(t_ids, t_logp, s_logits, tab, k=K, support=support)
  m = K + K * R + 1
  assert sup.ids_t.shape == (4, m) and sup.cost.shape == (4, m, m)
  s_p = np.exp(s_logits - np.log(np.exp(s_logits).sum(-1, keepdims=True)))
  for b in range(4):
    k_t = t_ids[b, :K].tolist()
    k_s = np.argsort(-s_logits[b])[:K].tolist()
    u_t, u_s = set(k_t), set(k_s)
    if support == "bidirectional":
      u_t |= {int(x) for s in k_s for x in np.asarray(tab.nbr_s2t[s])}
    if support != "none":
      u_s |= {int(x) for t in k_t for x in np.asarray(tab.nbr_t2s[t])}
    u_t &= set(t_ids[b].tolist())  # only ids present in the teacher cache
    mt, ms = np.asarray(sup.mask_t[b]), np.asarray(sup.mask_s[b])
    ids_t, ids_s = np.asarray(sup.ids_t[b])[mt], np.asarray(sup.ids_s[b])[ms]
    assert sorted(ids_t.tolist()) == sorted(u_t) and len(ids_t) == len(u_t)
    assert sorted(ids_s.tolist()) == sorted(u_s) and len(ids_s) == len(u_s)
    lp = dict(zip(t_ids[b].tolist(), t_logp[b].tolist()))
    np.testing.assert_allclose(
      np.asarray(sup.p[b])[mt], np.exp([lp[i] for i in ids_t]), rtol=1e-5
    )
    np.testing.assert_allclose(
      np.asarray(sup.q[b])[ms], s_p[b, ids_s], rtol=1e-5
    )
    c = np.asarray(sup.cost[b])[np.ix_(mt, ms)]
    for i, j in itertools.product(range(len(ids_t)), range(len(ids_s))):
      assert c[i, j] == pytest.approx(
        pair_cost_ref(tab, st, ss, ids_t[i], ids_s[j]), abs=1e-6
      )
    cov = np.exp([lp[i] for i in ids_t]).sum() * s_p[b, ids_s].sum()
    assert float(sup.coverage[b]) == pytest.approx(cov, rel=1e-5)


def identity_table(v):
  """Cost 0 between equal ids, 1 otherwise (distinct one-character strings)."""
  nbr = np.stack([np.roll(np.arange(v), -i)[:2] for i in range(v)]).astype(
    np.int32
  )
  cost = np.tile([0.0, 1.0], (v, 1)).astype(np.float32)
  chars = (np.arange(v)[:, None] + 100).astype(np.int32)
  lens = np.ones(v, np.int32)
  j = jnp.asarray
  return S.CorrespondenceTable(
    j(nbr), j(cost), j(nbr), j(cost), j(chars), j(lens), j(chars), j(lens)
  )


def test_sola_loss_is_zero_when_vocabularies_and_distributions_coincide():
  rng = np.random.default_rng(3)
  v = 8
  tab = identity_table(v)
  logits = (rng.normal(size=(3, v)) * 2).astype(np.float32)
  logp = np.asarray(jax.nn.log_softmax(logits))
  ids = np.argsort(-logp, -1).astype(np.int32)  # the whole vocabulary cached
  lp = np.take_along_axis(logp, ids, -1)
  loss = jax.jit(
    jax.value_and_grad(
      lambda x: S.sola_loss(ids, lp, x, tab, k=3, epsilon=0.01, iters=60)[0]
    )
  )
  same, _ = loss(jnp.asarray(logits))
  assert abs(float(same)) < 1e-4
  other, g = loss(jnp.asarray(logits[::-1].copy()))
  assert float(other) > 0.05
  # gradients reach the student logits and are finite
  assert np.all(np.isfinite(g)) and np.abs(g).max() > 1e-4


def test_sola_loss_sharded_equals_single_device(setup):
  tab, _, _, t_ids, t_logp, s_logits = setup
  if jax.device_count() < 4:
    pytest.skip("needs 4 devices")
  from jaxpapers import core

  f = jax.jit(lambda tb, a, b, c: S.sola_loss(a, b, c, tb, k=K, iters=20)[0])
  ref = f(tab, t_ids, t_logp, s_logits)
  mesh = core.make_mesh(4, axis_type=jax.sharding.AxisType.Auto)
  batch = core.shard_batch({"a": t_ids, "b": t_logp, "c": s_logits}, mesh)
  with jax.set_mesh(mesh):
    got = f(core.replicate(tab, mesh), batch["a"], batch["b"], batch["c"])
  assert float(got) == pytest.approx(float(ref), rel=1e-5)


def test_uld_matches_numpy(setup):
  _, _, _, _, t_logp, s_logits = setup
  mask = np.array([1, 0, 1, 1], bool)
  got = S.uld_loss(t_logp, s_logits, mask=mask)
  p_s = np.exp(s_logits) / np.exp(s_logits).sum(-1, keepdims=True)
  per = []
  for b in range(4):
    pt = np.sort(np.exp(t_logp[b]))[::-1]
    ps = np.sort(p_s[b])[::-1][:KC]
    per.append(np.abs(pt - ps).sum())
  assert float(got) == pytest.approx(np.mean(np.array(per)[mask]), rel=1e-5)


def test_mined_kl_matches_numpy_with_collisions():
  rng = np.random.default_rng(5)
  # two teacher ids map to one student id
  mapped = np.array([[2, 2, 5], [0, 1, 0]], np.int32)
  t_logp = np.log(rng.dirichlet(np.ones(3), 2)).astype(np.float32) - 0.3
  s_logits = rng.normal(size=(2, 7)).astype(np.float32)
  got = S.mined_kl_loss(mapped, t_logp, s_logits)
  ref = []
  for b in range(2):
    p = np.exp(t_logp[b]) / np.exp(t_logp[b]).sum()
    agg = {}
    for i, s in zip(mapped[b], p):
      agg[i] = agg.get(i, 0) + s
    ls = s_logits[b] - np.log(np.exp(s_logits[b]).sum())
    ref.append(sum(m * (np.log(m) - ls[i]) for i, m in agg.items()))
  assert float(got) == pytest.approx(np.mean(ref), rel=1e-5)


def levenshtein(a, b):
  d = list(range(len(b) + 1))
  for i, ca in enumerate(a, 1):
    prev, d[0] = d[0], i
    for j, cb in enumerate(b, 1):
      prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (ca != cb))
  return d[-1]


def test_mined_map_matches_python_levenshtein():
  rng = np.random.default_rng(2)
  alpha = list("abc ")
  ts = ["".join(rng.choice(alpha, rng.integers(0, 6))) for _ in range(40)]
  ss = ["", "a", " b", "abc", "cab", " aa", "bbbb", "c c"]
  got = S.mined_map(ts, ss, max_chars=8)
  for t, g in zip(ts, got):
    dists = [levenshtein(t, s) if s else 10**6 for s in ss]
    best = min(dists)
    cands = [i for i, d in enumerate(dists) if d == best]
    want = min(cands, key=lambda i: (abs(len(t) - len(ss[i])), i))
    assert g == want, (t, ss[g], ss[want])
